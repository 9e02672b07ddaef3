#!/usr/bin/env bash
# README command 1: install what is missing, build ./samtools, sort the example.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh build
make demo
