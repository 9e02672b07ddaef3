#!/usr/bin/env bash
# Installs what the build and the tests need, only when it is missing:
#   build: a C compiler, make, pkg-config, librocksdb-dev (+ its codecs), and what
#          scripts/htslib.sh needs to build htslib 1.24 into htslib/ (libdeflate,
#          liblzma, libbz2, zlib; python3-venv for pip to fetch the source)
#   tests: Debian's samtools (for `view` in the demo), valgrind, strace, and the newest samtools,
#          from PyPI's pysam, in .venv/ (the test oracle).
# Usage: scripts/deps.sh [build|test]   (default: test, which implies build)
set -euo pipefail
what=${1:-test}
here=$(cd "$(dirname "$0")/.." && pwd)

apt_pkgs=(gcc g++ make pkg-config librocksdb-dev zlib1g-dev libsnappy-dev liblz4-dev
          libzstd-dev libbz2-dev liblzma-dev libdeflate-dev ca-certificates
          python3 python3-venv samtools)
[ "$what" = test ] && apt_pkgs+=(valgrind strace)

missing=()
for p in "${apt_pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "deps: installing ${missing[*]}" >&2
    sudo=""
    if [ "$(id -u)" -ne 0 ]; then
        command -v sudo >/dev/null || { echo "deps: need root or sudo to install ${missing[*]}" >&2; exit 1; }
        sudo=sudo
    fi
    # A fresh machine has empty package lists: update once before installing.
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi

if [ "$what" = test ]; then
    venv="$here/.venv"
    # Pinned: the oracle is samtools 1.24, and a newer pysam would bundle a newer samtools.
    oracle=0.24.1
    if ! "$venv/bin/python" -c "import pysam, sys; sys.exit(pysam.__version__ != '$oracle')" 2>/dev/null; then
        echo "deps: creating $venv with pysam $oracle (samtools 1.24, the test oracle)" >&2
        py=python3
        # Prefer Debian's python3 when the image's default one lacks venv.
        "$py" -m venv "$venv" 2>/dev/null || /usr/bin/python3 -m venv "$venv"
        "$venv/bin/pip" install -q --disable-pip-version-check "pysam==$oracle" >&2
    fi
    # The workflow engines that test/workflows.py runs the examples with.
    if ! { [ -x "$venv/bin/snakemake" ] && [ -x "$venv/bin/cwltool" ] &&
           "$venv/bin/python" -c 'import snakemake, cwltool' 2>/dev/null; }; then
        echo "deps: installing snakemake and cwltool into $venv (workflow tests)" >&2
        "$venv/bin/pip" install -q --disable-pip-version-check 'snakemake>=8' 'cwltool>=3.1' >&2
    fi
fi
