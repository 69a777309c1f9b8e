#!/usr/bin/env bash
# Real verdicts under a drifting load (make bench-verdicts), into
# bench_results/verdicts/: while two busy loops come and go (each on for 2 to
# 10 s, then off for 2 to 10 s, independently: a steady load hides the drift
# that fools a test), N pairs of each kind are measured and their verdicts
# counted:
#   sweep A/A     --sweep train.lr=0.01,0.0100001: two points that compute the
#                 same epoch times (the lr changes the numbers, not the work)
#   sweep A/B     --sweep dataset.sample_cost_us=COST,COST*1.2: 20% more work a
#                 sample (the epoch is almost all loading)
#   compare A/A   dpbench compare -c A.yaml -c A.yaml (interleaved in one run)
#   compare A/B   dpbench compare -c A.yaml -c B.yaml (B's sample cost 1.2x)
# and, named in KINDS only (two separate runs of at least 30 s, the shortest
# compare decides on, so about 80 s a pair):
#   files A/A     A.yaml run twice (--repeat FILES_ROUNDS, FILES_EPOCHS a
#                 round), then dpbench compare A1.json A2.json: the unpaired
#                 statistic of two result files' rounds. (No files A/B: compare
#                 pairs no points of different workloads, and B's 1.2x is one.)
# Target: A/A called faster or slower at most 2 times in 20, A/B found (B
# slower, the right direction) at least 19 times in 20.
# Writes verdicts.tsv (kind, pair, verdict, ratio, interval, rounds, seconds)
# and summary.txt (the counts, the command, the machine, the load). Takes
# about N x 4 x (10 to 60) s: 15 to 80 minutes for N = 20.
# Environment: N (pairs a kind, default 20), COST (us a sample, default 100),
# LENGTH (samples, default 200), KINDS (default "sweep-AA sweep-AB compare-AA
# compare-AB"; files-AA too), FILES_EPOCHS (100), FILES_ROUNDS (16),
# BIN (default ./dpbench), OUT.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-20}
COST=${COST:-100}
LENGTH=${LENGTH:-200}
BIN=${BIN:-./dpbench}
OUT=${OUT:-bench_results/verdicts}
PY=${PYTHON:-/usr/bin/python3}
KINDS=${KINDS:-sweep-AA sweep-AB compare-AA compare-AB}
FILES_EPOCHS=${FILES_EPOCHS:-100}
FILES_ROUNDS=${FILES_ROUNDS:-16}
. scripts/bench-lib.sh # now, median, built_at
mkdir -p "$OUT"
TMP=$(mktemp -d)
LOOPS=()
cleanup() { for p in "${LOOPS[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$TMP"; }
trap cleanup EXIT

# one busy loop: idle 2-10 s, then spin 2-10 s, over and over
busy_loop() {
    RANDOM=$1
    while :; do
        sleep $((2 + RANDOM % 9))
        timeout $((2 + RANDOM % 9)) sh -c 'while :; do :; done' || true
    done
}
busy_loop 11 & LOOPS+=($!)
busy_loop 23 & LOOPS+=($!)

COST_B=$(awk -v c="$COST" 'BEGIN { printf "%g", 1.2 * c }')
BASE=(-q --set "dataset.length=$LENGTH" --set "dataset.sample_cost_us=$COST" --set train.epochs=10
      --set train.warmup_epochs=1)
printf 'dataset:\n  length: %s\n  sample_cost_us: %s\ntrain:\n  epochs: 10\n  warmup_epochs: 1\n' \
    "$LENGTH" "$COST" >"$TMP/A.yaml"
sed "s/sample_cost_us: $COST\$/sample_cost_us: $COST_B/" "$TMP/A.yaml" >"$TMP/B.yaml"

# verdict JSON -> one tsv row
row() { # KIND PAIR FILE SECONDS
    "$PY" - "$@" <<'PY'
import json, sys
kind, pair, path, secs = sys.argv[1:5]
d = json.load(open(path))
if "pairs" in d:  # compare
    p = d["pairs"][0]
    v, r, ci, n = p["verdict"], p["ratio"], p["ci95"], p["units"]
    v += " (held back)" if p["held_back"] else ""
else:  # a sweep: its second point against the first
    s = d["runs"][1]["summary"]
    v, r = s["speedup_verdict"], 1 / s["speedup"]
    lo, hi = s["speedup_ci95"]
    ci = [None if hi is None else 1 / hi, None if lo is None else 1 / lo]
    n = d["rounds"]["count"]
f = lambda x: "-" if x is None else "%.4f" % x
print("\t".join([kind, pair, v, f(r), "%s-%s" % (f(ci[0]), f(ci[1])), str(n), secs]))
PY
}

printf 'kind\tpair\tverdict\tratio_B_over_A\tinterval\trounds\tseconds\n' >"$OUT/verdicts.tsv"
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
for i in $(seq "$N"); do
    for kind in $KINDS; do
        t0=$(date +%s.%N)
        case $kind in
        sweep-AA) "$BIN" "${BASE[@]}" --sweep train.lr=0.01,0.0100001 --format json >"$TMP/r.json" ;;
        sweep-AB) "$BIN" "${BASE[@]}" --sweep "dataset.sample_cost_us=$COST,$COST_B" --format json >"$TMP/r.json" ;;
        compare-AA) "$BIN" compare -c "$TMP/A.yaml" -c "$TMP/A.yaml" -q --format json >"$TMP/r.json" ;;
        compare-AB) "$BIN" compare -c "$TMP/A.yaml" -c "$TMP/B.yaml" -q --format json >"$TMP/r.json" ;;
        files-AA)
            for f in A1 A2; do
                "$BIN" -c "$TMP/A.yaml" --set "train.epochs=$FILES_EPOCHS" --repeat "$FILES_ROUNDS" \
                    -q --format json >"$TMP/$f.json"
            done
            "$BIN" compare "$TMP/A1.json" "$TMP/A2.json" --format json >"$TMP/r.json" ;;
        esac
        secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
        row "$kind" "$i" "$TMP/r.json" "$secs" | tee -a "$OUT/verdicts.tsv"
    done
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

"$PY" - "$OUT/verdicts.tsv" "$N" >"$OUT/summary.txt" <<PY
import collections, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1])][1:]
n = int(sys.argv[2])
count = collections.defaultdict(collections.Counter)
for kind, _, verdict, *_ in rows:
    count[kind][verdict] += 1
print("command: N=$N COST=$COST LENGTH=$LENGTH KINDS=\"$KINDS\" FILES_EPOCHS=$FILES_EPOCHS FILES_ROUNDS=$FILES_ROUNDS scripts/bench-verdicts.sh")
print("machine: $(uname -m), $(nproc) CPUs, $(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -1), Linux $(uname -r)")
print("dpbench: $("$BIN" --version | head -1) ($(built_at "$BIN"))")
print("load average before: $load_before, after: $load_after (two busy loops coming and going)")
kinds = "$KINDS".split()
for kind in [k for k in kinds if k.endswith("AA")]:
    c = count[kind]
    wrong = c["faster"] + c["slower"]
    print("%s: %d of %d called different (target at most 2 of 20): %s" %
          (kind, wrong, n, dict(c)))
for kind in [k for k in kinds if k.endswith("AB")]:
    c = count[kind]
    print("%s: %d of %d found slower (target at least 19 of 20): %s" % (kind, c["slower"], n, dict(c)))
PY
cat "$OUT/summary.txt"
