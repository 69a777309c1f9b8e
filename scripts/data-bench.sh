#!/usr/bin/env bash
# The real-data benchmarks, dpbench and PyTorch's DataLoader side by side on
# the same files, written into bench_results/data/:
#   folder-jpeg.dpbench.json   configs/folder-jpeg.yaml (224 x 224 JPEGs): the
#                              num_workers x persistent_workers sweep, 6
#                              epochs a point
#   decode.R.dpbench.json / decode.R.torch.json (R = 1..$DECODE_ROUNDS, default 3)
#                              the same files with num_workers 0: the loading
#                              is the wait, so samples / wait is one worker's
#                              decode + transform throughput (dpbench:
#                              libjpeg-turbo + its transforms; PyTorch: PIL +
#                              numpy transforms in a Dataset); the two sides
#                              alternate, round after round, so a slow spell
#                              of this shared machine falls on both, and the
#                              summary keeps each round's ratio and their median
#   fashion-mnist.dpbench.json / fashion-mnist.torch.json
#                              configs/fashion-mnist.yaml, 3 epochs
#   summary.txt                the targets, checked
# The JPEGs are generated first when data/jpeg224 is missing (about 38 MB).
# PyTorch comes from Debian's python3-torch (/usr/bin/python3).
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${DECODE_ROUNDS:-3}
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || { echo "data-bench.sh: DECODE_ROUNDS must be a whole number >= 1, not '$ROUNDS'" >&2; exit 2; }
OUT=${OUT:-bench_results/data}
PY=${PYTHON:-/usr/bin/python3}
BIN=./dpbench
mkdir -p "$OUT"
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
[ -d data/jpeg224/train ] || $BIN --make-dataset folder data/jpeg224 --size 224x224 --per-class 100
FM=(-c configs/fashion-mnist.yaml --set train.epochs=3)
DEC=(-c configs/folder-jpeg.yaml --sweep loader.num_workers=0 --sweep loader.persistent_workers=false
     --set train.warmup_epochs=1 --set train.epochs=2)

SWEEP=(-c configs/folder-jpeg.yaml --set train.epochs=6)
echo "+ dpbench ${SWEEP[*]}" >&2
$BIN "${SWEEP[@]}" --format json >"$OUT/folder-jpeg.dpbench.json"
echo "+ dpbench ${FM[*]}" >&2
$BIN "${FM[@]}" --format json >"$OUT/fashion-mnist.dpbench.json"
rm -f "$OUT"/decode.*.json
for r in $(seq "$ROUNDS"); do
    echo "+ round $r: dpbench ${DEC[*]}" >&2
    $BIN "${DEC[@]}" --format json >"$OUT/decode.$r.dpbench.json"
    echo "+ round $r: torch_reference.py ${DEC[*]}" >&2
    "$PY" scripts/torch_reference.py "${DEC[@]}" --out "$OUT/decode.$r.torch.json"
done
echo "+ torch_reference.py ${FM[*]}" >&2
"$PY" scripts/torch_reference.py "${FM[@]}" --out "$OUT/fashion-mnist.torch.json"

"$PY" - "$OUT" "$load_before" "$(cut -d' ' -f1-3 /proc/loadavg)" >"$OUT/summary.txt" <<'PY'
import json, sys, os
out = sys.argv[1]
load = lambda name: json.load(open(os.path.join(out, name)))
d = load("folder-jpeg.dpbench.json")
m = d["machine"]
print("# machine: %s, %d cores; dpbench %s; %s" % (m["cpu"], m["cores"], d["dpbench"]["git_commit"], d["date"]))
print("# commands: scripts/data-bench.sh (see its header)")
print("# load average (1, 5, 15 min) before: %s, after: %s; this machine's other work shares "
      "its %d cores" % (sys.argv[2], sys.argv[3], m["cores"]))
runs = {r["point"]: r for r in d["runs"]}
print("\nconfigs/folder-jpeg.yaml (1000 JPEGs 224x224, resize 112, crop 112 pad 8, flip, normalise):")
print("%-58s %10s %7s %6s  %s" % ("point", "median ms", "wait %", "AU %", "verdict"))
for p, r in runs.items():
    s = r["summary"]
    print("%-58s %10.1f %7.0f %6.0f  %s" % (p, 1e3 * s["median_seconds"], 100 * s["wait_share"],
                                          100 * s["au"], s["verdict"].split(":")[0]))
# persistent_workers means nothing without workers: the two num_workers 0 points run
# the same work, so both ratios divide by the median of their epochs pooled
w0s = [runs["loader.num_workers=0 loader.persistent_workers=%s" % p] for p in ("false", "true")]
pooled = sorted(e["seconds"] for r in w0s for e in r["epochs"])
n = len(pooled)
base = pooled[n // 2] if n % 2 else 0.5 * (pooled[n // 2 - 1] + pooled[n // 2])
print("num_workers 0 (both points, %d epochs pooled): median epoch %.1f ms" % (n, 1e3 * base))
for pers, w0 in zip(("false", "true"), w0s):
    w2 = runs["loader.num_workers=2 loader.persistent_workers=%s" % pers]
    ratio = w2["summary"]["median_seconds"] / base
    print("target (persistent_workers %s): workers 2 / workers 0 epoch = %.2f (<= 0.6: %s); "
          "workers 0 verdict input-bound: %s" % (pers, ratio, "met" if ratio <= 0.6 else "NOT met",
          "yes" if w0["summary"]["verdict"].startswith("input-bound") else "NO"))

def throughput(doc):
    r = doc["runs"][0]
    samples = sum(e["samples"] for e in r["epochs"])
    wait = sum(e["wait_seconds"] for e in r["epochs"])
    return samples / wait, wait / len(r["epochs"])
print("\nper-worker decode + transform (num_workers 0, the loading is the wait; "
      "dpbench and PyTorch alternate, round by round):")
ratios = []
for r in range(1, 1 + len([f for f in os.listdir(out) if f.startswith("decode.") and f.endswith(".dpbench.json")])):
    a, wa = throughput(load("decode.%d.dpbench.json" % r))
    b, wb = throughput(load("decode.%d.torch.json" % r))
    ratios.append(a / b)
    print("  round %d: dpbench %.0f samples/s (%.0f ms per epoch), PyTorch DataLoader + PIL %.0f "
          "samples/s (%.0f ms per epoch): %.2fx" % (r, a, 1e3 * wa, b, 1e3 * wb, a / b))
mid = sorted(ratios)[len(ratios) // 2] if len(ratios) % 2 else \
    0.5 * sum(sorted(ratios)[len(ratios) // 2 - 1:len(ratios) // 2 + 1])
print("  median of %d rounds: %.2fx (>= 2x: %s)" % (len(ratios), mid, "met" if mid >= 2 else "NOT met"))
fa, fb = load("fashion-mnist.dpbench.json")["runs"][0], load("fashion-mnist.torch.json")["runs"][0]
ma, mb = fa["summary"]["median_seconds"], fb["summary"]["median_seconds"]
print("\nFashion-MNIST (configs/fashion-mnist.yaml, 3 epochs, num_workers 0):")
print("  dpbench median epoch %.1f ms, PyTorch %.1f ms: %.1fx faster (>= 20x: %s)" % (
    1e3 * ma, 1e3 * mb, mb / ma, "met" if mb / ma >= 20 else "NOT met"))
ev = fa.get("eval") or {}
if ev:
    print("  dpbench test accuracy after 3 epochs: %.2f%% on %d samples" % (100 * ev["accuracy"], ev["samples"]))
PY
cat "$OUT/summary.txt"
