# samtools rocksort in a container, on Debian 12 (bookworm), as CI builds it.
#
#   docker build -t samtools-rocksort .
#   docker run --rm -u "$(id -u):$(id -g)" -v "$PWD:/data" samtools-rocksort \
#       rocksort -@ 4 -m 1G -T /data -o sorted.bam in.bam
#
# The entry point is the `samtools` this repository builds (through a small
# script, see the end): `rocksort` is built in, and every other subcommand
# (view, index, ...) runs Debian's samtools, which is installed beside it.
# Temporary data go to $TMPDIR (/tmp, inside the container's own filesystem)
# unless -T points elsewhere: for big inputs, a mounted volume as above.

# --- build -------------------------------------------------------------------
FROM debian:12-slim AS build
# Unpinned on purpose: the image follows Debian 12's (security) updates.
# hadolint ignore=DL3008
# htslib 1.24 is built from source by scripts/htslib.sh (Debian 12 has 1.16);
# python3-venv gives it pip, which fetches the pinned source archive.
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        build-essential pkg-config librocksdb-dev zlib1g-dev libsnappy-dev \
        liblz4-dev libzstd-dev libbz2-dev liblzma-dev libdeflate-dev \
        ca-certificates python3 python3-venv \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
# .dockerignore keeps host build products out; clean anyway, so that nothing
# built against another system's libraries is linked in.
RUN make clean \
 && make -j"$(nproc)" samtools \
 && make install PREFIX=/usr/local DESTDIR=/install

# --- runtime -----------------------------------------------------------------
FROM debian:12-slim
# hadolint ignore=DL3008
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        librocksdb7.8 libdeflate0 samtools \
 && rm -rf /var/lib/apt/lists/*
# /usr/local/bin comes before /usr/bin on PATH: `samtools` is rocksort's,
# and it hands other subcommands on to /usr/bin/samtools.
COPY --from=build /install/usr/local/ /usr/local/
# The entry point is samtools: `docker run IMAGE rocksort ...` runs
# `samtools rocksort ...`.  CWL runners (the DockerRequirement hint in
# workflow/cwl/) send the whole command line, `samtools rocksort ...`, which
# would become `samtools samtools ...`: a command starting with samtools runs
# as it is.  (The single quotes are meant: the script's "$@" is not ours.)
# hadolint ignore=SC2016
RUN printf '%s\n' '#!/bin/sh' \
        'if [ "$1" = samtools ]; then exec "$@"; fi' \
        'exec samtools "$@"' > /usr/local/bin/samtools-entrypoint \
 && chmod 755 /usr/local/bin/samtools-entrypoint \
 && samtools-entrypoint rocksort --help >/dev/null \
 && samtools-entrypoint samtools --version
WORKDIR /data
ENTRYPOINT ["/usr/local/bin/samtools-entrypoint"]
CMD ["rocksort", "--help"]
