#!/usr/bin/env bash
# dp with N replicas against ddp with N ranks (mpirun) on the large workload
# at the same global batch, and the bare allreduce of the engine, into
# bench_results/ddp/:
#   dp.json, ddp.json       dpbench's results (ddp: rank table, allreduce)
#   allreduce.txt           dpbench --allreduce-bandwidth under the same mpirun
#   torch-ddp.json          PyTorch DDP (gloo) on the same export, N processes
#   compare.txt             scripts/compare.py ddp.json torch-ddp.json
#   summary.txt             median epochs side by side; the step's allreduce per
#                           call against the bare one at the nearest size
# N=2 by default (N=4 scripts/bench-ddp.sh for more ranks).
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-2}
OUT=${OUT:-bench_results/ddp}
PY=${PYTHON:-/usr/bin/python3}
mkdir -p "$OUT"
# Open MPI refuses root unless told; more ranks than cores need --oversubscribe
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
MPIRUN=(mpirun --oversubscribe -np "$N")
CFG=configs/dp-vs-ddp.yaml
GLOBAL=256

LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
cmd_dp=(./dpbench --config $CFG --set parallel.replicas=$N --set loader.batch_size=$GLOBAL --format json)
cmd_ddp=("${MPIRUN[@]}" ./dpbench --config $CFG --set parallel.mode=ddp
         --set loader.batch_size=$((GLOBAL / N)) --format json)
cmd_bw=("${MPIRUN[@]}" ./dpbench --allreduce-bandwidth)
echo "== ${cmd_dp[*]}" >&2
"${cmd_dp[@]}" >"$OUT/dp.json"
echo "== ${cmd_ddp[*]}" >&2
"${cmd_ddp[@]}" >"$OUT/ddp.json"
echo "== ${cmd_bw[*]}" >&2
"${cmd_bw[@]}" >"$OUT/allreduce.txt"
cmd_torch=("$PY" scripts/torch_reference.py $CFG --set parallel.mode=ddp
           --set loader.batch_size=$((GLOBAL / N)) --world-size "$N" --out "$OUT/torch-ddp.json")
have_torch=0
"$PY" -c 'import torch, numpy' 2>/dev/null && have_torch=1
if [ $have_torch = 1 ]; then
    echo "== ${cmd_torch[*]}" >&2
    "${cmd_torch[@]}"
    "$PY" scripts/compare.py "$OUT/ddp.json" "$OUT/torch-ddp.json" >"$OUT/compare.txt" || true
fi

LOAD1=$(cut -d' ' -f1-3 /proc/loadavg)
"$PY" - "$OUT" "$LOAD0" "$LOAD1" "${cmd_dp[*]}" "${cmd_ddp[*]}" "${cmd_bw[*]}" "${cmd_torch[*]}" >"$OUT/summary.txt" <<'PY'
import json, os, sys
out, load0, load1, cdp, cddp, cbw, ctorch = sys.argv[1:8]
dp = json.load(open(out + "/dp.json"))
ddp = json.load(open(out + "/ddp.json"))
r0, r1 = dp["runs"][0], ddp["runs"][0]
m = dp["machine"]
print("# machine: %s, %d cores, %.1f GiB, %s" % (m["cpu"], m["cores"], m["memory_bytes"] / 2**30, m["kernel"]))
print("# dpbench %s, %s" % (dp["dpbench"]["git_commit"], dp["date"]))
print("# load average (1, 5, 15 min) at the start: %s; at the end: %s" % (load0, load1))
print("# dp:  %s" % cdp)
print("# ddp: %s" % cddp)
print("# bw:  %s" % cbw)
print("%-28s %12s %12s %10s" % ("run", "median ms", "samples/s", "loss"))
for name, r in (("dp, %d replicas" % r0["replicas"], r0), ("ddp, %d ranks" % r1["world_size"], r1)):
    s = r["summary"]
    print("%-28s %12.2f %12.0f %10.5g" % (name, 1e3 * s["median_seconds"], s["samples_per_second"], s["final_loss"]))
s = r1["summary"]
calls = r1["batches_per_epoch"]
per_call = s["allreduce_seconds_per_epoch"] / calls
nbytes = (256 * 16 + 16 + 1) * 4  # the gradient and the stop flag
rows = []
for line in open(out + "/allreduce.txt"):
    if line.startswith(" "):
        f = line.split()
        rows.append((int(f[0]), float(f[5]) * 1e-6))
size, bare = min(rows, key=lambda r: abs(r[0] - nbytes))
print("# ddp straggler ratio %.3f, busbw %.3f GB/s" % (s["straggler_ratio"], s["busbw_gbps"]))
# the step's call less its wait for the last rank to arrive: the engine's own time
engine = (s["allreduce_seconds_per_epoch"] - s["allreduce_wait_seconds_per_epoch"]) / calls
print("# allreduce in the step: %.1f us per call (%d B), mean over the ranks; of it %.1f us waiting for"
      " the last rank to arrive, %.1f us the engine's own" % (1e6 * per_call, nbytes,
      1e6 * (per_call - engine), 1e6 * engine))
print("# bare --allreduce-bandwidth at %d B: %.1f us; the step's engine time / bare = %.2f (target <= 1.25);"
      " with the wait = %.2f" % (size, 1e6 * bare, engine / bare, per_call / bare))
print("# ddp epoch / dp epoch: %.2f" % (r1["summary"]["median_seconds"] / r0["summary"]["median_seconds"]))
if os.path.exists(out + "/torch-ddp.json"):
    t = json.load(open(out + "/torch-ddp.json"))["runs"][0]["summary"]
    print("# torch: %s" % ctorch)
    print("# PyTorch DDP (gloo) median epoch %.2f ms; dpbench ddp is %.1fx faster (target >= 10x)"
          % (1e3 * t["median_seconds"], t["median_seconds"] / r1["summary"]["median_seconds"]))
PY
cat "$OUT/summary.txt"
