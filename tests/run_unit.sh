#!/usr/bin/env bash
# Runs cmocka test binaries, up to JOBS at once (default: one per core; the
# binaries share no files, and their timing checks hold with every core
# busy), prints each one's output in the order given and one summary line
# for all of them (", N skipped" when DPBENCH_TEST_SKIP named some:
# tests/testutil.h).
set -u
jobs=${JOBS:-$(nproc)}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
i=0
for t in "$@"; do
    while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n; done
    ("$t" >"$out/$i" 2>&1; echo $? >"$out/$i.rc") &
    i=$((i + 1))
done
wait
pass=0 fail=0 broken=0 skip=0 i=0
for t in "$@"; do
    echo "== $t"
    cat "$out/$i"
    rc=$(cat "$out/$i.rc")
    p=$(sed -n 's/.*\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$out/$i" | tail -1)
    f=$(sed -n 's/.*\[  FAILED  \] \([0-9]*\) test.*/\1/p' "$out/$i" | tail -1)
    s=$(sed -n 's/.*\[  SKIPPED \] \([0-9]*\) test.*/\1/p' "$out/$i" | tail -1)
    pass=$((pass + ${p:-0})); fail=$((fail + ${f:-0})); skip=$((skip + ${s:-0}))
    if [ "$rc" -ne 0 ] && [ "${f:-0}" -eq 0 ]; then broken=$((broken + 1)); echo "!! $t exited $rc"; fi
    i=$((i + 1))
done
fail=$((fail + broken))
echo "${LABEL:-unit}: $pass passed, $fail failed$([ $skip -eq 0 ] || echo ", $skip skipped")"
[ "$fail" -eq 0 ]
