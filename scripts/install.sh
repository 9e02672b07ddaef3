#!/usr/bin/env bash
# install.sh BINARY DEST [REPLACE] -- `make install`'s step for the binary.
#
# Installs BINARY as DEST (PREFIX/bin/samtools) when DEST does not exist or
# is already this program (`--version` first line `samtools 1.24+rocksort.X.Y.Z`,
# or `samtools rocksort-X.Y.Z` from before 0.3.0).
# Any other samtools there is left alone and the install stops: the program
# forwards every subcommand but rocksort to the next samtools on PATH, so
# replacing that one would take away the samtools it forwards to.
# REPLACE=yes (make install REPLACE_SAMTOOLS=yes) replaces it anyway.
set -euo pipefail
bin=$1 dest=$2 replace=${3:-}

# First line of DEST's --version; empty if it is not a program that runs.
version_of() {
    timeout 10 "$1" --version </dev/null 2>/dev/null | head -n 1 || true
}

if [[ -e $dest || -L $dest ]] && [[ $replace != yes ]]; then
    first=$(version_of "$dest")
    if ! [[ $first =~ ^samtools\ ([0-9.]+\+rocksort\.|rocksort-)[0-9]+\.[0-9]+\.[0-9]+$ ]]; then
        cat >&2 <<MSG
make install: $dest is another samtools
(its --version says '${first:-nothing}'), so nothing was installed:
rocksort passes every subcommand but rocksort to the next samtools on PATH,
and replacing this one would take that samtools away.  Either install to a
prefix of its own that comes earlier on PATH, e.g.
'make install PREFIX=/opt/samtools-rocksort' with /opt/samtools-rocksort/bin
before $(dirname "$dest") on PATH, so that 'samtools rocksort' runs this
program and 'samtools view' and the rest still run $dest;
or replace it anyway with 'make install REPLACE_SAMTOOLS=yes' and give other
subcommands another samtools on PATH or in SAMTOOLS_UPSTREAM.
MSG
        exit 1
    fi
fi
install -d "$(dirname "$dest")"
install -m 755 "$bin" "$dest"
