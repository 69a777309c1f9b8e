#!/usr/bin/env bash
# Runs cmocka test binaries, up to JOBS at once (default: one per core; the
# binaries share no files, and their timing checks hold with every core
# busy), prints each one's output whole, in the order given, as soon as it
# and those before it have ended, then one summary line for all of them
# (", N skipped" when DPBENCH_TEST_SKIP named some: tests/testutil.h).
set -u
jobs=${JOBS:-$(nproc)}
case $jobs in '' | *[!0-9]* | 0*) echo "run_unit.sh: JOBS must be a whole number from 1, not '$jobs'" >&2; exit 2 ;; esac
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
bins=("$@")
pass=0 fail=0 broken=0 skip=0 next=0
show() { # the binaries from $next on that have ended, in order
    local t rc p f s
    while [ "$next" -lt "${#bins[@]}" ] && [ -e "$out/$next.rc" ]; do
        t=${bins[$next]}
        echo "== $t"
        cat "$out/$next"
        rc=$(cat "$out/$next.rc")
        p=$(sed -n 's/.*\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$out/$next" | tail -1)
        f=$(sed -n 's/.*\[  FAILED  \] \([0-9]*\) test.*/\1/p' "$out/$next" | tail -1)
        s=$(sed -n 's/.*\[  SKIPPED \] \([0-9]*\) test.*/\1/p' "$out/$next" | tail -1)
        pass=$((pass + ${p:-0})); fail=$((fail + ${f:-0})); skip=$((skip + ${s:-0}))
        if [ "${rc:-1}" -ne 0 ] && [ "${f:-0}" -eq 0 ]; then broken=$((broken + 1)); echo "!! $t exited ${rc:-?}"; fi
        next=$((next + 1))
    done
}
for ((i = 0; i < ${#bins[@]}; i++)); do
    while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n; show; done
    # a crash's message from the shell lands in the binary's output; the status file appears whole
    ("${bins[$i]}"; echo $? >"$out/$i.rc.tmp"; mv "$out/$i.rc.tmp" "$out/$i.rc") >"$out/$i" 2>&1 </dev/null &
done
wait
show
fail=$((fail + broken))
echo "${LABEL:-unit}: $pass passed, $fail failed$([ $skip -eq 0 ] || echo ", $skip skipped")"
[ "$fail" -eq 0 ]
