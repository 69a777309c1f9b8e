#!/usr/bin/env bash
# Runs test stages N times each with every core kept busy by another process
# (one `while :; do :; done` loop per core), and prints per stage how many
# runs passed: a test that starts processes, sends signals or waits on time
# must pass every run under that load (a test failing one run in twenty is a
# failing test).
#
#   tests/loop_stages.sh N STAGE...     (`make test-loop N=20` passes its list)
#
# A STAGE is a make target (test-ddp) or a test program (build/tests/test_loader).
# A failed run's output is kept in build/test-logs/loop-STAGE-RUN.log. Prints
# "loop: N passed, N failed" (runs) at the end; exits 1 when a run failed.
set -u
n=${1:?usage: $0 N STAGE...}
shift
MAKE=${MAKE:-make}
LOGS=build/test-logs
mkdir -p "$LOGS"
busy=()
stop_busy() {
    local p
    for p in "${busy[@]}"; do kill "$p" 2>/dev/null; done
}
trap stop_busy EXIT
for _ in $(seq "$(nproc)"); do
    sh -c 'while :; do :; done' &
    busy+=($!)
done
echo "# $n runs of each stage, $(nproc) busy loops ($(nproc) cores), $(date -u +%FT%TZ)"
tp=0 tf=0
for stage in "$@"; do
    ok=0 bad=0 t0=$(date +%s)
    for i in $(seq "$n"); do
        log=$LOGS/loop-${stage//\//_}-$i.log
        if [ -x "$stage" ]; then "$stage" >"$log" 2>&1; else $MAKE --no-print-directory "$stage" >"$log" 2>&1; fi
        if [ $? -eq 0 ]; then
            ok=$((ok + 1)); rm -f "$log"
        else
            bad=$((bad + 1))
            echo "  $stage run $i failed: $(grep -m1 -E '^FAIL|ERROR|!!' "$log" | head -c 300) ($log)"
        fi
    done
    echo "  $stage: $ok/$n passed ($(($(date +%s) - t0)) s)"
    tp=$((tp + ok)) tf=$((tf + bad))
done
echo "loop: $tp passed, $tf failed"
[ "$tf" -eq 0 ]
