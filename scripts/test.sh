#!/usr/bin/env bash
# README command 2 (and CI): install what is missing, build, run every test.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh test
make test
