"""Checks of the sorters' output against samtools sort's: record digests
(ordered, or as a multiset for -n against samtools 1.16), the first differing
record, and a note on the headers."""
import hashlib
import os
import re
import subprocess
import sys
from itertools import zip_longest

import tools


def view_lines(path):
    return subprocess.Popen([tools.SAMTOOLS, "view", "-@1", path], stdout=subprocess.PIPE)


def header_note(tool, path, ref):
    """Headers without @PG should match; a difference is reported, not failed,
    as 1.16 (if it is the reference) and 1.24 (what rocksort follows) differ."""
    def lines(p):
        out = subprocess.run([tools.SAMTOOLS, "view", "-H", p], stdout=subprocess.PIPE,
                             check=True).stdout.decode(errors="replace")
        return [l for l in out.splitlines() if not l.startswith("@PG")]
    a, b = lines(path), lines(ref)
    if a == b:
        return "headers equal (without @PG)"
    diff = [f"{tool} `{x}` vs samtools `{y}`" for x, y in zip_longest(a, b) if x != y]
    return "headers differ (without @PG): " + "; ".join(diff[:3])


def ordered_digest(path):
    """(records, sha256 of the header-less SAM text): one pass per file, so a
    case with several checked tools reads each output once."""
    proc, digest, count = view_lines(path), hashlib.sha256(), 0
    while chunk := proc.stdout.read(1 << 20):
        digest.update(chunk)
        count += chunk.count(b"\n")
    proc.wait()
    return count, digest.hexdigest()


def first_difference(tool, path, ref):
    """Records of both files, line by line: the first difference, for the report."""
    pa, pb = view_lines(path), view_lines(ref)
    for n, (a, b) in enumerate(zip_longest(pa.stdout, pb.stdout), 1):
        if a != b:
            for p in (pa, pb):
                p.kill()
                p.wait()
            return f"record {n} differs:\n  {tool}: {short(a)}\n  samtools: {short(b)}"
    for p in (pa, pb):
        p.wait()
    return "the record streams differ (no single differing line found)"


def short(line):
    return "(none)" if line is None else line.decode(errors="replace").rstrip()[:160]


def natural_key(name):
    """samtools' -n order: digit runs compare as numbers."""
    parts = re.split(rb"(\d+)", name)
    parts[1::2] = [int(p) for p in parts[1::2]]
    return parts


def multiset_digest(path, check_names):
    """(records, order-free digest, first name out of natural order or None):
    for -n against samtools 1.16, which breaks ties between equal names
    differently from 1.24."""
    proc, total, count, prev, order_error = view_lines(path), 0, 0, None, None
    for line in proc.stdout:
        total += int.from_bytes(hashlib.blake2b(line, digest_size=8).digest(), "little")
        count += 1
        if check_names and order_error is None:
            key = natural_key(line.split(b"\t", 1)[0])
            if prev is not None and key < prev:
                order_error = f"record {count}: name out of order: {short(line)}"
            prev = key
    proc.wait()
    return count, total % (1 << 64), order_error


def verify_case(outputs, name_sort):
    """One line per checked tool against samtools sort's output; a mismatch
    is shouted on stderr too.  outputs: {tool: path}, samtools sort's included."""
    ref = outputs.get("samtools sort")
    if not (ref and os.path.exists(ref)):
        return ["not checked (samtools sort's output is missing)"]
    multiset = name_sort and tools.samtools_version(tools.SAMTOOLS) != "1.24"
    want = multiset_digest(ref, False)[:2] if multiset else ordered_digest(ref)
    lines = []
    for tool, path in outputs.items():
        if tool == "samtools sort":
            continue
        if not os.path.exists(path):
            lines.append(f"{tool}: not checked (no output)")
            continue
        if multiset:
            count, digest, error = multiset_digest(path, True)
            if not error and (count, digest) != want:
                error = f"records differ as a multiset (count, digest): {(count, digest)} vs {want}"
            what = ("same records as a multiset, names in natural order (tie order not "
                    "checked: 1.16 and 1.24 differ)")
        else:
            got = ordered_digest(path)
            count = got[0]
            error = None if got == want else first_difference(tool, path, ref)
            what = "identical records, same order"
        if error:
            print(f"\nbench: MISMATCH between {tool} and samtools sort\n{error}\n", file=sys.stderr)
            lines.append(f"{tool}: **MISMATCH** " + error.replace("\n", " "))
        else:
            lines.append(f"{tool}: {what}: {count:,} records; {header_note(tool, path, ref)}")
    return lines
