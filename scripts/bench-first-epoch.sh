#!/usr/bin/env bash
# How much slower a training run's first epoch runs than its next ones, the
# reason --tune warms every trial run up where the config has a warm-up
# (docs/tune.md): each config below with no warm-up, 4 epochs a run, R runs
# (--repeat R: interleaved rounds, each a fresh run), per setting; per round
# the first epoch over the median of the other three, and the median of
# those ratios over the rounds. Outside `make test`; about two minutes on
# the 2-core VM.
# Environment: BIN (./dpbench), R (10), CONFIGS, OUT (bench_results/tune/first-epoch.txt).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-./dpbench}
R=${R:-10}
CONFIGS=${CONFIGS:-"cifar10 fashion-mnist large folder-jpeg"}
OUT=${OUT:-bench_results/tune/first-epoch.txt}
PY=${PYTHON:-/usr/bin/python3}
. scripts/bench-lib.sh
[ -d data/jpeg224/train ] || $BIN --make-dataset folder data/jpeg224 --size 224x224 --per-class 100
[ -f data/cifar10/data_batch_1.bin ] || $BIN --make-dataset cifar10 data/cifar10 --per-class 1000
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
{
    echo "# a run's first epoch against its next ones (no warm-up, 4 epochs a run, $R runs as rounds)"
    echo "# command: BIN=$BIN R=$R CONFIGS=\"$CONFIGS\" scripts/bench-first-epoch.sh"
    echo "# dpbench $(built_at "$BIN"), $(date -u +%Y-%m-%dT%H:%MZ), load average $(cut -d' ' -f1-3 /proc/loadavg)"
    printf '%-14s %-34s %s\n' config setting "first/rest: median over rounds [min, max]"
    for c in $CONFIGS; do
        for s in "0 false" "1 false" "1 true" "2 true"; do
            set -- $s
            $BIN -q -c "configs/$c.yaml" --no-sweep --set train.warmup_epochs=0 --set train.epochs=4 \
                --set loader.num_workers="$1" --set loader.persistent_workers="$2" --repeat "$R" \
                --format json > "$tmp/r.json"
            printf '%-14s %-34s ' "$c" "num_workers=$1 persistent=$2"
            "$PY" - "$tmp/r.json" <<'EOF'
import json, statistics, sys
run = json.load(open(sys.argv[1]))["runs"][0]
ms = [e["seconds"] for e in run["epochs"]]
r = [ms[x["first_epoch"] - 1] / statistics.median(ms[x["first_epoch"]:x["first_epoch"] - 1 + x["epochs"]])
     for x in run["rounds"]]
print(f"{statistics.median(r):.3f} [{min(r):.3f}, {max(r):.3f}]")
EOF
        done
    done
} | tee "$OUT"
