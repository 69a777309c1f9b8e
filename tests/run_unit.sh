#!/usr/bin/env bash
# Runs cmocka test binaries and prints one summary line for all of them
# (", N skipped" when DPBENCH_TEST_SKIP named some: tests/testutil.h).
set -u
pass=0 fail=0 broken=0 skip=0
for t in "$@"; do
    echo "== $t"
    out=$("$t" 2>&1); rc=$?
    echo "$out"
    p=$(echo "$out" | sed -n 's/.*\[  PASSED  \] \([0-9]*\) test.*/\1/p' | tail -1)
    f=$(echo "$out" | sed -n 's/.*\[  FAILED  \] \([0-9]*\) test.*/\1/p' | tail -1)
    s=$(echo "$out" | sed -n 's/.*\[  SKIPPED \] \([0-9]*\) test.*/\1/p' | tail -1)
    pass=$((pass + ${p:-0})); fail=$((fail + ${f:-0})); skip=$((skip + ${s:-0}))
    if [ $rc -ne 0 ] && [ "${f:-0}" -eq 0 ]; then broken=$((broken + 1)); echo "!! $t exited $rc"; fi
done
fail=$((fail + broken))
echo "${LABEL:-unit}: $pass passed, $fail failed$([ $skip -eq 0 ] || echo ", $skip skipped")"
[ "$fail" -eq 0 ]
