#!/usr/bin/env bash
# Runs each test stage (a make target) in turn, every one even when an earlier
# one fails, and ends with one table: stage, passed, failed, skipped, seconds;
# then the first failure's message; then the total as its very last line,
# "test: N passed, N failed, N skipped". Exits 1 when anything failed.
#
#   MAKE=make tests/run_stages.sh STAGE...     (`make test` passes its list)
#
# A stage's counts are the sum of its closing lines: "N passed, N failed",
# optionally ", N skipped", optionally after one word and a colon ("unit: ",
# "ddp: "), at the start of a line. A stage that counts nothing is one
# skipped when it exits 0 saying "skipped", one failed when it exits non-zero;
# one that exits non-zero with no failure counted gets one. Each stage's
# whole output is kept in build/test-logs/STAGE.log as well as shown.
set -u
MAKE=${MAKE:-make}
LOGS=build/test-logs
mkdir -p "$LOGS"
SUMMARY='^([A-Za-z0-9_.-]+: )?[0-9]+ passed, [0-9]+ failed(, [0-9]+ skipped)?$'
rows=() tp=0 tf=0 ts=0 first=""

for stage in "$@"; do
    log=$LOGS/$stage.log
    t0=$(date +%s.%N)
    $MAKE --no-print-directory "$stage" 2>&1 | tee "$log"
    rc=${PIPESTATUS[0]}
    secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
    read -r p f s n < <(grep -E "$SUMMARY" "$log" | sed -E 's/^[A-Za-z0-9_.-]+: //' |
        awk -F', ' '{ p += $1; f += $2; s += $3; n++ } END { print p + 0, f + 0, s + 0, n + 0 }')
    if [ $((p + f + s)) -eq 0 ]; then # nothing counted: a skip said so, or a stage that broke
        if [ "$rc" -eq 0 ] && grep -qi 'skipped' "$log"; then s=1; elif [ "$rc" -ne 0 ]; then f=1; fi
    elif [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
        f=1 # it counted no failure but did not succeed (a build step after its tests)
    fi
    if [ "$f" -gt 0 ] && [ -z "$first" ]; then
        msg=$(grep -m1 -E '^(FAIL|ERROR|!!)|\[  ERROR   \]|first failure:|error:|Error [0-9]' "$log")
        first="$stage: ${msg:-$(grep -vE "$SUMMARY" "$log" | tail -1)} (whole output: $log)"
    fi
    rows+=("$(printf '%-22s %7d %7d %8d %9s' "$stage" "$p" "$f" "$s" "$secs")")
    tp=$((tp + p)) tf=$((tf + f)) ts=$((ts + s))
done

echo
printf '%-22s %7s %7s %8s %9s\n' "# stage" passed failed skipped seconds
printf '%s\n' "${rows[@]}"
[ -n "$first" ] && echo "# first failure: $first"
echo "test: $tp passed, $tf failed, $ts skipped"
[ "$tf" -eq 0 ]
