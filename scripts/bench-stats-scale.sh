#!/usr/bin/env bash
# Statistics that scale (make bench-stats), into bench_results/stats/:
#   run      the time dpbench spends after the last epoch of a long run (its
#            statistics and output): wall time minus the epochs' own time, for
#            20,000 epochs against 20 (whose difference is what the 19,980
#            extra epochs cost after training); target at most 0.5 s
#   compare  `dpbench compare A.json B.json` of two 50,000-epoch results;
#            target at most 5 s
# Each figure is the median of R runs (default 5). Environment: R, BIN, OUT.
set -euo pipefail
cd "$(dirname "$0")/.."
R=${R:-5}
BIN=${BIN:-./dpbench}
OUT=${OUT:-bench_results/stats}
PY=${PYTHON:-/usr/bin/python3}
. scripts/bench-lib.sh # now, median, built_at
mkdir -p "$OUT"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

epochs_s() { "$PY" -c 'import json,sys; print(sum(e["seconds"] for r in json.load(open(sys.argv[1]))["runs"] for e in r["epochs"]))' "$1"; }

# after-training seconds of one run of E epochs
after() {
    local t0 t1
    t0=$(now)
    "$BIN" -q --set train.epochs="$1" --format json >"$TMP/r$1.json"
    t1=$(now)
    echo "$t1 $t0 $(epochs_s "$TMP/r$1.json")" | awk '{printf "%.4f\n", $1 - $2 - $3}'
}

{
    echo "# dpbench $(built_at "$BIN"), $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "# machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'); load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "# command: scripts/bench-stats-scale.sh (R=$R), medians of $R runs"
    a20=$(for i in $(seq "$R"); do after 20; done | median)
    a20k=$(for i in $(seq "$R"); do after 20000; done | median)
    extra=$(echo "$a20k $a20" | awk '{printf "%.3f", $1 - $2}')
    echo "run: after the last epoch: 20 epochs ${a20} s, 20000 epochs ${a20k} s (startup included in both): 20000 epochs cost ${extra} s more; target <= 0.5 s: $(awk -v x="$extra" 'BEGIN {print (x <= 0.5) ? "met" : "MISSED"}')"
    "$BIN" -q --set train.epochs=50000 --format json >"$TMP/A.json"
    "$BIN" -q --set train.epochs=50000 --format json >"$TMP/B.json"
    c=$(for i in $(seq "$R"); do
        t0=$(now)
        "$BIN" compare "$TMP/A.json" "$TMP/B.json" >"$TMP/compare.txt"
        t1=$(now)
        echo "$t1 $t0" | awk '{printf "%.4f\n", $1 - $2}'
    done | median)
    echo "compare: two 50000-epoch results: ${c} s; target <= 5 s: $(awk -v x="$c" 'BEGIN {print (x <= 5) ? "met" : "MISSED"}')"
    echo "# load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "# the compare's output:"
    sed 's/^/#   /' "$TMP/compare.txt"
} | tee "$OUT/summary.txt"
