#!/usr/bin/env bash
# The README's sample outputs, from a real run of the current binary: runs each
# command the README shows an output of and writes that output, under the
# command and a machine line, into bench_results/sample/ (one file each), so
# that the README's blocks can be copied from files a commit holds.
#
#   scripts/readme-sample.sh [./dpbench] [OUT_DIR]     (default bench_results/sample)
#
# Files: tutorial-2-replicas.txt (the text report), trace-replicas-N.txt for
# N = 2, 3, 8 (the tutorial's printouts), tutorial-2-replicas.json and
# tutorial.csv (the JSON and CSV formats). Each starts with "# command: ..."
# and "# sampled on: <machine>, dpbench <commit>, <UTC date>".
set -euo pipefail
BIN=${1:-./dpbench}
OUT=${2:-bench_results/sample}
cd "$(dirname "$0")/.."
[ -x "$BIN" ] || { echo "readme-sample: no dpbench at $BIN (run make first)" >&2; exit 2; }
mkdir -p "$OUT"
# the machine as dpbench's own header names it (arch, CPU, cores, memory, kernel)
cpu=$("$BIN" --config configs/tutorial.yaml --set train.epochs=1 | sed -n 's/^# machine: //p')
machine="$cpu, load average $(cut -d" " -f1-3 /proc/loadavg); dpbench $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"

# sample FILE COMMAND...: the command's stdout (stderr too) into OUT/FILE
sample() {
    local file=$1
    shift
    {
        echo "# command: $*"
        echo "# sampled on: $machine, $(date -u +%FT%TZ)"
        "$@" 2>&1
    } >"$OUT/$file"
    echo "readme-sample: $OUT/$file"
}

T=configs/tutorial.yaml
sample tutorial-2-replicas.txt "$BIN" --config $T --set parallel.replicas=2
for n in 2 3 8; do
    sample trace-replicas-$n.txt "$BIN" --config $T --set report.trace=true --set parallel.replicas=$n
done
sample tutorial-2-replicas.json "$BIN" --config $T --set parallel.replicas=2 --format json
sample tutorial.csv "$BIN" --config $T --format csv
