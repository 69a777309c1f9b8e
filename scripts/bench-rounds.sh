#!/usr/bin/env bash
# What the interleaved rounds cost (make bench-rounds), into
# bench_results/rounds/: the same sweep with the same measured epochs per
# point, run by a dpbench from before the rounds (OLD: each point's --repeat N
# runs back to back, point after point) and by this one (--repeat N: N rounds,
# each running every point once in a shuffled order), alternately, R times
# each; the medians' ratio against the target of 1.4x. Configs:
# sync-vs-async.yaml and emulated-sync-vs-async.yaml (its images are made
# first when missing; OLD reads a copy without dataset.make, a key it lacks).
# Build OLD from the commit before the rounds:
#   git worktree add /tmp/old 8c740ee && make -C /tmp/old && OLD=/tmp/old/dpbench make bench-rounds
# Environment: OLD (required), N (rounds, default 3), R (runs each, default 3),
# CONFIGS, BIN, OUT.
set -euo pipefail
cd "$(dirname "$0")/.."
OLD=${OLD:?set OLD to a dpbench built before the rounds (see the comment at the top)}
N=${N:-3}
R=${R:-3}
CONFIGS=${CONFIGS:-configs/sync-vs-async.yaml configs/emulated-sync-vs-async.yaml}
BIN=${BIN:-./dpbench}
OUT=${OUT:-bench_results/rounds}
PY=${PYTHON:-/usr/bin/python3}
. scripts/bench-lib.sh # now, median, built_at
mkdir -p "$OUT"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# measured epochs per point in a result ("same": a point not run again, the same work as another)
epochs() { "$PY" -c 'import json,sys; print(" ".join(str(len(r["epochs"])) if "epochs" in r else "same" for r in json.load(open(sys.argv[1]))["runs"]))' "$1"; }
timed() { # timed OUTFILE CMD...: the command's wall seconds on stdout
    local out=$1 t0 t1
    shift
    t0=$(now)
    "$@" -q --repeat "$N" --format json >"$out"
    t1=$(now)
    echo "$t1 $t0" | awk '{printf "%.3f\n", $1 - $2}'
}

{
    echo "# dpbench $(built_at "$BIN") against $("$OLD" --version | head -1), $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "# machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'); load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "# command: OLD=$OLD N=$N R=$R scripts/bench-rounds.sh; old and new alternate, R runs each, --repeat $N"
    for cfg in $CONFIGS; do
        name=$(basename "$cfg" .yaml)
        # one short epoch: makes a dataset.make dataset that is missing
        "$BIN" -q -c "$cfg" --no-sweep --set train.epochs=1 --set train.warmup_epochs=0 >/dev/null
        grep -v '^  make:' "$cfg" >"$TMP/$name-old.yaml"
        old=() new=()
        for i in $(seq "$R"); do
            old+=("$(timed "$TMP/old.json" "$OLD" -c "$TMP/$name-old.yaml")")
            new+=("$(timed "$TMP/new.json" "$BIN" -c "$cfg")")
        done
        mo=$(printf '%s\n' "${old[@]}" | median)
        mn=$(printf '%s\n' "${new[@]}" | median)
        ratio=$(echo "$mn $mo" | awk '{printf "%.2f", $1 / $2}')
        echo "$name: old ${old[*]} s (median $mo), new ${new[*]} s (median $mn): ${ratio}x; target <= 1.4x: $(awk -v x="$ratio" 'BEGIN {print (x <= 1.4) ? "met" : "MISSED"}')"
        echo "#   measured epochs per point: old $(epochs "$TMP/old.json"); new $(epochs "$TMP/new.json")"
    done
    echo "# load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee "$OUT/summary.txt"
