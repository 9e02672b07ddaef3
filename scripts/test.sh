#!/usr/bin/env bash
# README command 2 (and CI): install what is missing, build, then run
#   make test           the whole suite (unit, end-to-end against samtools 1.24,
#                       robustness, features, workflows, fuzz corpus replay)
#   make test-asan      the whole suite again under AddressSanitizer + UBSan
#   make test-valgrind  a subset under valgrind memcheck
# and end with one line totalling them: `N passed, M failed`.
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh test || exit 1

passed=0 failed=0 status=0
for target in test test-asan test-valgrind; do
    echo "== make $target"
    log=$(mktemp) started=$SECONDS
    make --no-print-directory "$target" 2>&1 | tee "$log"
    rc=${PIPESTATUS[0]}
    # CI's time limit is for the whole script: each stage's share shows here.
    echo "== make $target took $((SECONDS - started)) s"
    counts=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$log" | tail -1)
    rm -f "$log"
    if [ -z "$counts" ]; then
        echo "make $target: no 'N passed, M failed' line (exit status $rc)"
        failed=$((failed + 1))
    else
        set -- $counts
        passed=$((passed + $1)) failed=$((failed + $3))
        if [ "$rc" -ne 0 ] && [ "$3" -eq 0 ]; then
            echo "make $target: exit status $rc with no failed test"
            failed=$((failed + 1))
        fi
    fi
    [ "$rc" -ne 0 ] && status=1
done
echo "$passed passed, $failed failed"
[ "$status" -eq 0 ] && [ "$failed" -eq 0 ]
