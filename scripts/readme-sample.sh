#!/usr/bin/env bash
# The sample outputs that README.md and docs/*.md show, from real runs of the
# current binary: each `sample NAME COMMAND...` below runs the command and
# writes its output (stdout and stderr), under a "# command:" and a
# "# sampled on:" line, into OUT/NAME. A doc shows a sample in a fenced block
# with `<!-- sample: NAME -->` on the line above it; tests/samples_test.py
# (make test-samples) checks each block against bench_results/sample/NAME and
# runs this script into a temporary folder to check that the committed files
# still have the current binary's form. After a change of output: run this
# script, copy the changed lines into the docs, commit bench_results/sample/.
#
#   scripts/readme-sample.sh [./dpbench] [OUT_DIR]     (default bench_results/sample)
#
# A sample's line count must not depend on timing: give a sweep --repeat N.
# Each doc's samples are in a section of their own, under a comment naming
# the docs. EXPECT=S sample ... expects exit status S (default 0); another
# status fails the script.
set -euo pipefail
BIN=${1:-./dpbench}
OUT=${2:-bench_results/sample}
cd "$(dirname "$0")/.."
[ -x "$BIN" ] || { echo "readme-sample: no dpbench at $BIN (run make first)" >&2; exit 2; }
mkdir -p "$OUT"
# the machine as dpbench's own header names it (arch, CPU, cores, memory, kernel)
cpu=$("$BIN" --config configs/tutorial.yaml --set train.epochs=1 | sed -n 's/^# machine: //p')
machine="$cpu, load average $(cut -d" " -f1-3 /proc/loadavg); dpbench $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"

# The words as a shell line: a word with other characters than these quoted.
quoted() {
    local w line=""
    for w in "$@"; do
        if [[ $w =~ ^[A-Za-z0-9_./=:,+%@-]+$ ]]; then line+=" $w"; else line+=" '${w//\'/\'\\\'\'}'"; fi
    done
    echo "${line# }"
}

# sample NAME COMMAND...: the command's stdout and stderr into OUT/NAME
sample() {
    local name=$1 rc=0
    shift
    {
        echo "# command: $(quoted "$@")"
        echo "# sampled on: $machine, $(date -u +%FT%TZ)"
        "$@" 2>&1 || rc=$?
    } >"$OUT/$name"
    if [ "$rc" -ne "${EXPECT:-0}" ]; then
        echo "readme-sample: $OUT/$name: exit status $rc, expected ${EXPECT:-0}" >&2
        exit 1
    fi
    echo "readme-sample: $OUT/$name"
}

# ---- README.md, docs/running.md, docs/floor.md, docs/limits.md ----------------
sample floor-large-w1.txt "$BIN" -c configs/large.yaml --set loader.num_workers=1 \
    --set report.floor=true --set train.epochs=5 --set dataset.length=20000
EXPECT=2 sample limits-openblas.txt bash -c "ulimit -v 100000; exec $BIN"
EXPECT=2 sample limits-workers.txt bash -c "ulimit -v 500000; OPENBLAS_NUM_THREADS=1 exec $BIN \
--set loader.num_workers=64 --set dataset.length=10000"
T=configs/tutorial.yaml
sample tutorial-2-replicas.txt "$BIN" --config $T --set parallel.replicas=2
for n in 2 3 8; do
    sample trace-replicas-$n.txt "$BIN" --config $T --set report.trace=true --set parallel.replicas=$n
done
sample tutorial-2-replicas.json "$BIN" --config $T --set parallel.replicas=2 --format json
sample tutorial.csv "$BIN" --config $T --format csv

# ---- docs/statistics.md ---------------------------------------------------------
sample stats-repeat.txt "$BIN" -c configs/tutorial.yaml --set dataset.sample_cost_us=20 --repeat 3
# two result files in a temporary folder, then `compare` on them there
sample compare.json bash -c "b=\$(realpath $BIN); d=\$(mktemp -d); cd \$d && \
\$b -c \"\$OLDPWD/configs/tutorial.yaml\" --format json >A.json && \
\$b -c \"\$OLDPWD/configs/tutorial.yaml\" --set loader.num_workers=1 --format json >B.json && \
\$b compare A.json B.json --format json; rc=\$?; rm -r \$d; exit \$rc"

# ---- docs/statistics.md: rounds, paired verdicts, the conclusion, compare -c ----
sample verdicts-sweep.txt "$BIN" -c configs/tutorial.yaml -q --sweep dataset.sample_cost_us=50,100 \
    --sweep loader.num_workers=0,1 --repeat 9
# two one-key configs (the rest: the defaults) in a temporary folder, compared there
sample verdicts-compare-c.txt bash -c "b=\$(realpath $BIN); d=\$(mktemp -d); cd \$d && \
printf 'name: A\ndataset:\n  sample_cost_us: 50\n' >A.yaml && \
printf 'name: B\ndataset:\n  sample_cost_us: 100\n' >B.yaml && \
\$b compare -c A.yaml -c B.yaml -q --repeat 9; rc=\$?; rm -r \$d; exit \$rc"
