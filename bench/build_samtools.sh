#!/usr/bin/env bash
# Builds samtools 1.24, the version rocksort's output follows, as a native
# binary for the benchmark: bench/out/samtools-1.24/samtools.
#
# Why: the samtools in PyPI's pysam is 1.24 but built without libdeflate, so
# it compresses with zlib and would lose to rocksort on compression alone;
# Debian 12's samtools has libdeflate but is 1.16.  This build has both: the
# samtools 1.24 sources that pysam 0.24.1's source archive carries, linked
# against the project's htslib 1.24 (htslib/libhts.a, static, libdeflate).
# libdeflate is linked from its static archive, as rocksort links it (the
# Makefile's DEFLATE_LIBS): Debian's shared libdeflate.so.0 compresses
# markedly slower, and "x samtools" must measure the sort, not the link.
# LIBDEFLATE=shared links the shared object instead, as Debian's own
# samtools does, into bench/out/samtools-1.24-shared-deflate/.
#
# pysam ships each samtools file twice: NAME.c as upstream wrote it and
# NAME.c.pysam.c, rewritten to print through pysam's stream shim.  Only the
# upstream files are compiled here.  What this script adds of its own:
#   - config.h, empty: samtools' Makefile writes a near-empty one when
#     configure is not run, and nothing here needs curses;
#   - version.h, the version string and build notes `--version` prints;
#   - a stub for `tview` (pysam leaves the curses viewer out).
# The archive is the one scripts/htslib.sh fetches (sha256-pinned); give a
# copy with PYSAM_SDIST=path to skip the download.  A finished build is
# stamped and reused.  Needs gcc and the libraries htslib links with.  When
# .venv has pysam (the tests' oracle), the new binary's sort of
# example/example.sam must equal pysam's samtools 1.24's, or it is refused.
set -euo pipefail
PYSAM_VERSION=0.24.1
PYSAM_SHA256=90f612afccdb454d2447ecb5229266c6e7f991093deed4ed0a791db01f7fc994
SAMTOOLS_VERSION=1.24
here=$(cd "$(dirname "$0")/.." && pwd)
hts="$here/htslib"
LIBDEFLATE=${LIBDEFLATE:-static}
case "$LIBDEFLATE" in
    static) dest="$here/bench/out/samtools-$SAMTOOLS_VERSION"
            deflate_libs="-Wl,-Bstatic -ldeflate -Wl,-Bdynamic" ;;
    shared) dest="$here/bench/out/samtools-$SAMTOOLS_VERSION-shared-deflate"
            deflate_libs="-ldeflate" ;;
    *) echo "build_samtools: LIBDEFLATE must be static or shared" >&2; exit 1 ;;
esac
stamp="$dest/.build"
want="samtools $SAMTOOLS_VERSION from pysam $PYSAM_VERSION sha256 $PYSAM_SHA256, htslib $(cat "$hts/.rocksort-build" 2>/dev/null || echo '?'), libdeflate $LIBDEFLATE"
CC=${CC:-gcc}
CFLAGS=${CFLAGS:--Wall -g -O2}   # samtools' own default

if [ -x "$dest/samtools" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    echo "$dest/samtools"
    exit 0
fi
if [ ! -f "$hts/libhts.a" ] || ! grep -q "^#define HTS_VERSION 102400" "$hts/htslib/hts.h"; then
    echo "build_samtools: $hts has no htslib 1.24 build; run make first" >&2
    exit 1
fi
if ! grep -q "^LIBS.*-ldeflate" "$hts/config.mk"; then
    echo "build_samtools: $hts was built without libdeflate; not building" >&2
    exit 1
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/rocksort-samtools.XXXXXX")
trap 'rm -rf "$work"' EXIT
archive=${PYSAM_SDIST:-$here/bench/out/pysam-$PYSAM_VERSION.tar.gz}
if [ ! -f "$archive" ]; then
    # The same route as scripts/htslib.sh (scripts/fetch_pysam.py).
    py="$here/.venv/bin/python"
    "$py" -c 'import pip' 2>/dev/null || py=python3
    echo "build_samtools: fetching pysam $PYSAM_VERSION's source" >&2
    mkdir -p "$(dirname "$archive")"
    "$py" "$here/scripts/fetch_pysam.py" "$archive.part" "pysam-$PYSAM_VERSION.tar.gz"
    mv "$archive.part" "$archive"
fi
got=$(sha256sum "$archive" | cut -d' ' -f1)
if [ "$got" != "$PYSAM_SHA256" ]; then
    echo "build_samtools: $archive has sha256 $got, expected $PYSAM_SHA256" >&2
    exit 1
fi

tar -xzf "$archive" -C "$work" "pysam-$PYSAM_VERSION/samtools"
src="$work/pysam-$PYSAM_VERSION/samtools"
grep -q "^VERSION=$SAMTOOLS_VERSION\$" "$src/version.sh" || {
    echo "build_samtools: pysam $PYSAM_VERSION does not carry samtools $SAMTOOLS_VERSION" >&2; exit 1; }
cd "$src"
rm -f ./*.pysam.c ./*/*.pysam.c samtools.pysam.h
echo "/* bench/build_samtools.sh: no configure run, no curses */" > config.h
cat > version.h <<EOF
#define SAMTOOLS_VERSION "$SAMTOOLS_VERSION"
#define SAMTOOLS_CC "$CC"
#define SAMTOOLS_CPPFLAGS ""
#define SAMTOOLS_CFLAGS "$CFLAGS"
#define SAMTOOLS_LDFLAGS ""
#define SAMTOOLS_HTSDIR "$hts"
#define SAMTOOLS_LIBS "$(sed -n 's/^LIBS *= *//p' "$hts/config.mk" | head -1 | sed "s/-ldeflate/$deflate_libs/")"
#define SAMTOOLS_CURSES_LIB ""
EOF
cat > tview_stub.c <<'EOF'
/* bench/build_samtools.sh: pysam leaves out the curses viewer */
#include <stdio.h>
int bam_tview_main(int argc, char *argv[])
{
    (void)argc; (void)argv;
    fprintf(stderr, "samtools tview: not in this build (bench/build_samtools.sh)\n");
    return 1;
}
EOF
echo "build_samtools: compiling samtools $SAMTOOLS_VERSION against $hts" >&2
srcs=$(ls ./*.c lz4/lz4.c)
jobs=${JOBS:-2}
printf '%s\n' $srcs | xargs -P "$jobs" -I{} sh -c \
    "$CC $CFLAGS -I. -Ilz4 -I'$hts' -c {} -o {}.o 2>>build.log || { cat build.log >&2; exit 255; }"
libs=$(sed -n 's/^LIBS *= *//p' "$hts/config.mk" | head -1 | sed "s/-ldeflate/$deflate_libs/")
# shellcheck disable=SC2086
$CC $CFLAGS -o samtools ./*.c.o lz4/lz4.c.o "$hts/libhts.a" $libs -lpthread
if [ "$LIBDEFLATE" = static ] && ldd samtools | grep -q libdeflate; then
    echo "build_samtools: the binary still loads the shared libdeflate" >&2; exit 1
fi
./samtools --version | head -1 | grep -qx "samtools $SAMTOOLS_VERSION" || {
    echo "build_samtools: the binary does not say samtools $SAMTOOLS_VERSION" >&2; exit 1; }
./samtools --version | grep -q "libdeflate=yes" || {
    echo "build_samtools: the binary's htslib has no libdeflate" >&2; exit 1; }
# Against the oracle the tests use, when it is there: pysam's samtools 1.24
# must sort example/example.sam to the same records and headers (no @PG).
py="$here/.venv/bin/python"
if "$py" -c 'import pysam' 2>/dev/null; then
    for order in "" "-n"; do
        # shellcheck disable=SC2086
        ./samtools sort $order --no-PG -o native.sam "$here/example/example.sam"
        "$py" - "$here/example/example.sam" pysam.sam $order <<'PY'
import sys, pysam
src, out, *order = sys.argv[1:]
pysam.samtools.sort(*order, "--no-PG", "-o", out, src, catch_stdout=False)
PY
        cmp -s native.sam pysam.sam || {
            echo "build_samtools: sort ${order:-(coordinate)} of example/example.sam differs from pysam's samtools" >&2
            exit 1; }
    done
    echo "build_samtools: sort matches pysam's samtools 1.24 on example/example.sam" >&2
fi
mkdir -p "$dest"
mv samtools "$dest/samtools.part"
mv "$dest/samtools.part" "$dest/samtools"
echo "$want" > "$stamp"
echo "$dest/samtools"
