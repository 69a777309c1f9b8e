#!/usr/bin/env bash
# The floor a run can reach (report.floor) on configs/large.yaml with
# loader.num_workers 0, 1 and 2: three runs each, every run's median epoch
# over its own floor, and the median of the three ratios against the 1.2x
# target. Writes bench_results/cpu/floor-overlap.txt and the runs' JSON
# (floor-overlap-wW-R.json). Usage: scripts/bench-floor.sh [./dpbench]
set -eu
BIN=${1:-./dpbench}
OUT=bench_results/cpu
cd "$(dirname "$0")/.."
mkdir -p "$OUT"
for w in 0 1 2; do
    for r in 1 2 3; do
        "$BIN" --config configs/large.yaml --set loader.num_workers=$w --set report.floor=true \
            --format json --quiet >"$OUT/floor-overlap-w$w-$r.json"
    done
done
{
    echo "# scripts/bench-floor.sh at $(git rev-parse --short HEAD), $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "# each run: $BIN --config configs/large.yaml --set loader.num_workers=W --set report.floor=true --format json"
    echo "# load average: $(cut -d' ' -f1-3 /proc/loadavg)"
    ${PYTHON:-/usr/bin/python3} - "$OUT" <<'PY'
import json, statistics, sys
out = sys.argv[1]
print("%-11s %-10s %10s %10s %10s %8s  %s" % ("num_workers", "floor", "apart_ms", "floor_ms",
                                              "median_ms", "ratio", "runs' ratios"))
for w in (0, 1, 2):
    runs = [json.load(open("%s/floor-overlap-w%d-%d.json" % (out, w, r)))["runs"][0]
            for r in (1, 2, 3)]
    fl = [r["floor"] for r in runs]
    ratios = [r["summary"]["median_seconds"] / f["seconds"] for r, f in zip(runs, fl)]
    med = statistics.median(ratios)
    print("%-11d %-10s %10.2f %10.2f %10.2f %7.2fx  %s  %s" % (
        w, fl[0].get("kind", "apart"), 1e3 * statistics.median(f["apart_seconds"] for f in fl),
        1e3 * statistics.median(f["seconds"] for f in fl),
        1e3 * statistics.median(r["summary"]["median_seconds"] for r in runs), med,
        " ".join("%.2f" % x for x in ratios),
        "below 0.9: the floor's own epochs were disturbed, no verdict" if med < 0.9
        else "within 1.2x (at the floor, within its noise)" if med < 1
        else "within 1.2x" if med <= 1.2 else "NOT within 1.2x"))
PY
    echo "# load average: $(cut -d' ' -f1-3 /proc/loadavg)"
} >"$OUT/floor-overlap.txt"
cat "$OUT/floor-overlap.txt"
