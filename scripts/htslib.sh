#!/usr/bin/env bash
# Builds htslib 1.24, the htslib samtools 1.24 is built on, as a static library
# in ./htslib/ (ignored by git).  Debian 12 ships only 1.16, which parses some
# real files differently (a U base, empty @CO lines, @SQ without LN).
#
# The source comes from PyPI's pysam 0.24.1 source distribution, which bundles
# htslib 1.24 complete with its configure script.  The archive's sha256 is
# pinned.  A finished build is stamped and reused; `make` calls this script
# only when htslib/libhts.a is missing.
#
# Needs: gcc, make, zlib1g-dev, libbz2-dev, liblzma-dev, libdeflate-dev and
# python3-venv (pip's index settings), which `scripts/deps.sh build` installs.
set -euo pipefail
PYSAM_VERSION=0.24.1
PYSAM_SHA256=90f612afccdb454d2447ecb5229266c6e7f991093deed4ed0a791db01f7fc994
HTSLIB_VERSION=1.24
here=$(cd "$(dirname "$0")/.." && pwd)
dest="$here/htslib"
stamp="$dest/.rocksort-build"
want="htslib $HTSLIB_VERSION from pysam $PYSAM_VERSION sha256 $PYSAM_SHA256, writer errcode fix"

if [ -f "$dest/libhts.a" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    touch "$dest/libhts.a"    # up to date: make need not ask again
    exit 0
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/rocksort-htslib.XXXXXX")
trap 'rm -rf "$work"' EXIT

# The archive comes from the package index pip is configured with, by pip's own
# Python (scripts/fetch_pysam.py says why not `pip download`).
py="$here/.venv/bin/python"
if ! "$py" -c 'import pip' 2>/dev/null; then
    python3 -m venv "$work/venv" 2>/dev/null || /usr/bin/python3 -m venv "$work/venv"
    py="$work/venv/bin/python"
fi
echo "htslib: fetching pysam $PYSAM_VERSION's source (htslib $HTSLIB_VERSION)" >&2
"$py" "$here/scripts/fetch_pysam.py" "$work/pysam-$PYSAM_VERSION.tar.gz" "pysam-$PYSAM_VERSION.tar.gz"
archive="$work/pysam-$PYSAM_VERSION.tar.gz"
got=$(sha256sum "$archive" | cut -d' ' -f1)
if [ "$got" != "$PYSAM_SHA256" ]; then
    echo "htslib: $archive has sha256 $got, expected $PYSAM_SHA256; not building" >&2
    exit 1
fi

tar -xzf "$archive" -C "$work" "pysam-$PYSAM_VERSION/htslib"
src="$work/pysam-$PYSAM_VERSION/htslib"
grep -q "^#define HTS_VERSION 102400" "$src/htslib/hts.h" || {
    echo "htslib: pysam $PYSAM_VERSION does not bundle htslib $HTSLIB_VERSION" >&2; exit 1; }

# One fix to htslib 1.24.  Its threaded BGZF writer (bgzf_mt_writer()) writes
# a block whose compression failed as if it had compressed: libdeflate
# allocates a compressor per block, and where that allocation fails the
# writer puts 64 KiB of whatever the job's buffer held into the output, and
# bgzf_close() succeeds.  The sort then exits 0 with an output that does not
# read.  The fix makes the writer stop there as it stops on a failed write,
# so that the write or the close fails and rocksort reports it.
"$py" - "$src/bgzf.c" <<'PATCH'
import sys
path = sys.argv[1]
text = open(path).read()
anchor = "        bgzf_job *j = (bgzf_job *)hts_tpool_result_data(r);\n        assert(j);\n"
if text.count(anchor) != 1:
    sys.exit("htslib: bgzf.c's writer is not as expected; not building")
fix = "        if (j->errcode) goto err;   /* rocksort: a block that did not compress */\n"
open(path, "w").write(text.replace(anchor, anchor + fix))
PATCH

echo "htslib: building htslib $HTSLIB_VERSION in $dest" >&2
(cd "$src" &&
    ./configure -q --disable-plugins --disable-libcurl --disable-gcs --disable-s3 \
        --with-libdeflate >&2 &&
    make -s -j"$(nproc)" lib-static >&2)
rm -rf "$dest"
mv "$src" "$dest"
echo "$want" > "$stamp"
