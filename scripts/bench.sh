#!/usr/bin/env bash
# make bench: the CPU benchmarks, dpbench and PyTorch's equivalent loop side
# by side in one run, written into bench_results/cpu/:
#   NAME.dpbench.json / NAME.torch.json   results in dpbench's schema
#   NAME.compare.txt                      scripts/compare.py's table
#   NAME.png                              scripts/plot.py's charts
#   memory.txt                            peak RSS for num_workers 0 vs 8
#   startup.txt                           hyperfine: --version and a whole tutorial
#                                         run; /usr/bin/time: the tutorial's peak RSS
#   summary.txt                           the targets, checked
# Every dpbench run measures its floor first (report.floor), so each median
# epoch is also read as a ratio to this machine's floor for its shapes.
# PyTorch comes from Debian's python3-torch (/usr/bin/python3); without it
# only dpbench's side is written.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-bench_results/cpu}
PY=${PYTHON:-/usr/bin/python3}
mkdir -p "$OUT"
rm -f "$OUT/repeats.txt.tmp"
have_torch=0
"$PY" -c 'import torch, yaml, matplotlib' 2>/dev/null && have_torch=1

machine="$(./dpbench --format json --set train.epochs=1 | "$PY" -c '
import json, sys
m = json.load(sys.stdin)["machine"]
print("%s, %d cores, %.1f GiB, %s" % (m["cpu"], m["cores"], m["memory_bytes"] / 2**30, m["kernel"]))')"
echo "# machine: $machine" >"$OUT/summary.txt.tmp"
echo "# dpbench $(git rev-parse --short HEAD 2>/dev/null || echo unknown), $(date -u +%Y-%m-%dT%H:%M:%SZ)" >>"$OUT/summary.txt.tmp"
# other processes on the machine move every timing: say how busy it was
echo "# load average at the start (1, 5, 15 min): $(cut -d' ' -f1-3 /proc/loadavg)" >>"$OUT/summary.txt.tmp"

# The dpbench runs all come first and the PyTorch runs after them, so that
# neither measures while the other's processes or freed memory are settling.
BENCHES=(
    "tutorial configs/tutorial.yaml --set train.epochs=50"
    "large configs/large.yaml"
    "sync-vs-async configs/sync-vs-async.yaml"
)
# dpbench only: the replica hand-off, 2 replicas against the tutorial's 1
DP_ONLY=(
    "tutorial-2replicas configs/tutorial.yaml --set train.epochs=50 --set parallel.replicas=2"
)

# dpbench_run NAME CONFIG ARGS...: 3 repeats, the one with the median time kept
dpbench_run() {
    local name=$1 cfg=$2; shift 2
    echo "== $name: dpbench --config $cfg $* (3 repeats, the median one kept)" >&2
    for rep in 1 2 3; do
        sleep 1
        ./dpbench --config "$cfg" "$@" --set report.floor=true --format json \
            >"$OUT/$name.rep$rep.json"
    done
    "$PY" - "$OUT/$name" <<'PY'
import json, os, sys
base = sys.argv[1]
reps = [base + ".rep%d.json" % i for i in (1, 2, 3)]
total = lambda p: sum(r["summary"]["median_seconds"] for r in json.load(open(p))["runs"])
keep = sorted(reps, key=total)[1]
line = "%s: 3 repeats, sum of point medians %s ms; the median one kept" % (
    os.path.basename(base), ", ".join("%.4f" % (1e3 * total(p)) for p in reps))
print("   " + line, file=sys.stderr)
with open(os.path.join(os.path.dirname(base), "repeats.txt.tmp"), "a") as f:
    print(line, file=f)
os.replace(keep, base + ".dpbench.json")
for p in reps:
    if os.path.exists(p):
        os.remove(p)
PY
}

# torch_run NAME CONFIG ARGS...: the same config and overrides in PyTorch
torch_run() {
    local name=$1 cfg=$2; shift 2
    echo "== $name: torch_reference.py $cfg $*" >&2
    sleep 1
    "$PY" scripts/torch_reference.py "$cfg" "$@" --out "$OUT/$name.torch.json" 2>/dev/null
}

for b in "${BENCHES[@]}" "${DP_ONLY[@]}"; do dpbench_run $b; done
if [ $have_torch = 1 ]; then
    for b in "${BENCHES[@]}"; do torch_run $b; done
fi
for b in "${BENCHES[@]}"; do
    name=${b%% *}
    plots=("$OUT/$name.dpbench.json")
    if [ $have_torch = 1 ]; then
        "$PY" scripts/compare.py "$OUT/$name.dpbench.json" "$OUT/$name.torch.json" >"$OUT/$name.compare.txt"
        cat "$OUT/$name.compare.txt" >&2
        plots+=("$OUT/$name.torch.json")
    fi
    "$PY" scripts/plot.py "${plots[@]}" -o "$OUT/$name.png" --title "$name: dpbench vs PyTorch, $machine" || true
done

# memory: workers are threads sharing one dataset
for w in 0 8; do
    ./dpbench --config configs/large.yaml --set loader.num_workers=$w --set train.epochs=2 \
        --format json | "$PY" -c '
import json, sys
d = json.load(sys.stdin)
print("num_workers %s: peak RSS %.1f MiB" % (sys.argv[1], d["peak_rss_bytes"] / 2**20))' $w
done >"$OUT/memory.txt"
echo "# ./dpbench --config configs/large.yaml --set loader.num_workers=W --set train.epochs=2" >>"$OUT/memory.txt"

# start-up and footprint of the binary itself: hyperfine's mean over 50 runs,
# and the tutorial's peak RSS as /usr/bin/time reports it
{
    if command -v hyperfine >/dev/null; then
        hyperfine -N --warmup 5 --runs 50 --export-json "$OUT/startup.json" \
            './dpbench --version' './dpbench --config configs/tutorial.yaml' >/dev/null 2>&1
        "$PY" -c '
import json, sys
for r in json.load(open(sys.argv[1]))["results"]:
    print("hyperfine %s: mean %.2f ms (sd %.2f, min %.2f, %d runs; cpu time user %.2f + sys %.2f ms)" % (
        r["command"], 1e3 * r["mean"], 1e3 * r["stddev"], 1e3 * r["min"], len(r["times"]),
        1e3 * r["user"], 1e3 * r["system"]))' \
            "$OUT/startup.json"
        rm -f "$OUT/startup.json"
    else
        echo "hyperfine not installed (apt-get install hyperfine): start-up not measured"
    fi
    if [ -x /usr/bin/time ]; then
        /usr/bin/time -v ./dpbench --config configs/tutorial.yaml 2>&1 >/dev/null |
            sed -n 's/^\tMaximum resident set size (kbytes): \([0-9]*\)/\1/p' |
            awk '{ printf "/usr/bin/time -v ./dpbench --config configs/tutorial.yaml: peak RSS %.1f MiB\n", $1 / 1024 }'
    else
        echo "/usr/bin/time not installed (apt-get install time): peak RSS not measured"
    fi
} >"$OUT/startup.txt"
cat "$OUT/startup.txt" >&2

# targets: tutorial >= 100x PyTorch; large >= 15x PyTorch and <= 1.2x its floor;
# 2 replicas <= 3x 1 replica on the tutorial; --version <= 5 ms, a whole tutorial
# run <= 10 ms, its peak RSS <= 15 MiB
"$PY" - "$OUT" "$have_torch" >>"$OUT/summary.txt.tmp" <<'PY'
import json, re, sys
out, have_torch = sys.argv[1], sys.argv[2] == "1"
def run0(path):
    return json.load(open(path))["runs"][0]
def median(path):
    return run0(path)["summary"]["median_seconds"]
def verdict(ok):
    return "met" if ok else "NOT met"
for name, speed_target in (("tutorial", 100), ("large", 15)):
    dp = median(f"{out}/{name}.dpbench.json")
    line = f"{name}: dpbench median epoch {dp*1e3:.4f} ms"
    if have_torch:
        pt = median(f"{out}/{name}.torch.json")
        line += f"; PyTorch {pt*1e3:.3f} ms; {pt/dp:.0f}x faster (target >= {speed_target}x: {verdict(pt / dp >= speed_target)})"
    print(line)
for name in ("tutorial", "large", "sync-vs-async", "tutorial-2replicas"):
    r = run0(f"{out}/{name}.dpbench.json")
    f = r["floor"]
    parts = ", ".join("%s %.4g ms" % (k[:-8], 1e3 * f[k])
                      for k in ("gather_seconds", "loading_seconds", "compute_seconds")
                      if f[k] is not None)
    mn = r["summary"]["min_seconds"]
    line = (f"{name}: floor {f['seconds']*1e3:.4g} ms ({parts}); median epoch "
            f"{r['summary']['median_seconds']*1e3:.4g} ms = {f['ratio']:.2f}x the floor "
            f"(fastest epoch {mn*1e3:.4g} ms = {mn/f['seconds']:.2f}x); "
            f"{r['blas_threads']} BLAS thread(s)")
    if name == "large":
        line += f" (target <= 1.2x: {verdict(f['ratio'] <= 1.2)})"
    print(line)
one, two = median(f"{out}/tutorial.dpbench.json"), median(f"{out}/tutorial-2replicas.dpbench.json")
print(f"tutorial: 2 replicas {two*1e3:.4f} ms vs 1 replica {one*1e3:.4f} ms per epoch = "
      f"{two/one:.1f}x (target <= 3x: {verdict(two / one <= 3)})")
for line in open(f"{out}/startup.txt"):
    line = line.strip()
    m = re.search(r"hyperfine (.*): mean ([0-9.]+) ms", line)
    if m:
        limit = 5 if m.group(1).endswith("--version") else 10
        line += f" (target <= {limit} ms: {verdict(float(m.group(2)) <= limit)})"
    m = re.search(r"peak RSS ([0-9.]+) MiB", line)
    if m:
        line += f" (target <= 15 MiB: {verdict(float(m.group(1)) <= 15)})"
    print(line)
PY
echo "# load average at the end (1, 5, 15 min): $(cut -d' ' -f1-3 /proc/loadavg)" >>"$OUT/summary.txt.tmp"
cat "$OUT/repeats.txt.tmp" "$OUT/memory.txt" >>"$OUT/summary.txt.tmp"
rm -f "$OUT/repeats.txt.tmp"
mv "$OUT/summary.txt.tmp" "$OUT/summary.txt"
cat "$OUT/summary.txt"
