"""fetch_pysam.py DEST FILENAME -- download one file of pysam's release.

From the package index pip is configured with (PIP_INDEX_URL, pip's config,
else its default), read through PEP 691's JSON API; run it with pip's own
Python.  `pip download` of a source distribution would first run its
setup.py, which configures htslib and fails on a machine without libcurl.
The callers check the file's sha256.
"""
import json
import os
import subprocess
import sys
import urllib.request

from pip._internal.models.index import PyPI


def main():
    dest, filename = sys.argv[1:]
    index = os.environ.get("PIP_INDEX_URL") or subprocess.run(
        [sys.executable, "-m", "pip", "config", "get", "global.index-url"],
        capture_output=True, text=True).stdout.strip() or PyPI.simple_url
    request = urllib.request.Request(index.rstrip("/") + "/pysam/",
                                     headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    with urllib.request.urlopen(request, timeout=120) as reply:
        files = json.load(reply)["files"]
    url = next(f["url"] for f in files if f["filename"] == filename)
    with urllib.request.urlopen(url, timeout=300) as reply, open(dest, "wb") as out:
        out.write(reply.read())


if __name__ == "__main__":
    main()
