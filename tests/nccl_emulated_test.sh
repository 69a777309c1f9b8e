#!/usr/bin/env bash
# DDP on the host CUDA emulation (tests/fakecuda.c; NCCL's calls in
# tests/fakenccl.c, over shared memory), 2 ranks under mpirun, one emulated
# GPU each: nccl and mpi (the gradient staged through host memory) must
# learn what one cpu process learns with the global batch, and what 2 cpu
# ranks learn; each rank finds its own device (MPI's local rank, also
# without the launcher's variables, and with EXCLUSIVE_PROCESS devices);
# two ranks on one GPU are refused; --allreduce-bandwidth sums device
# memory; the allreduce's time is the collective's own; a hung peer ends
# the job; the communicator is made before any epoch. Says nothing about
# real GPUs or real NCCL. Run by make test-cuda-emulated with DPBENCH_CUDART,
# DPBENCH_CUBLAS, DPBENCH_LIBCUDA and DPBENCH_NCCL set; prints
# "N passed, N failed"; skips without mpirun or nccl in the emulated build.
set -u
BIN=$(realpath "${1:?emulated dpbench}")
cd "$(dirname "$0")/.."
. tests/lib.sh
if ! command -v mpirun >/dev/null || ! "$BIN" --version | grep -q '^comm:.*nccl'; then
    echo "skipped: no mpirun or no nccl in this build"; echo "0 passed, 0 failed"; exit 0
fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
export FAKE_CUDA_DEVICES=2 FAKE_ABORT=1 FAKE_DELAY_US=20
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
MPIRUN=(timeout 120 mpirun --oversubscribe --mca btl self,vader -np 2 -x DPBENCH_NCCL -x DPBENCH_CUDART
        -x DPBENCH_CUBLAS -x DPBENCH_LIBCUDA -x FAKE_CUDA_DEVICES -x FAKE_ABORT -x FAKE_DELAY_US)
C=(--config configs/ddp.yaml --set dataset.length=240 --set dataset.features=16 --set train.epochs=3
   --set train.warmup_epochs=0 --format json)
GPU=(--set parallel.device=cuda)
# same LABEL JSON: the same learning as one cpu process with the global batch
# and as 2 cpu ranks, up to float32 rounding (tests/paramdist.py: testutil.h's order_bound)
same() {
    if python3 tests/paramdist.py "$2" "$TMP/one.json" >"$TMP/d1" 2>&1 &&
       python3 tests/paramdist.py "$2" "$TMP/cpu.json" >"$TMP/d2" 2>&1; then ok
    else bad "$1: vs 1 cpu process: $(cat "$TMP/d1"); vs 2 cpu ranks: $(cat "$TMP/d2"): $(tail -c 600 "$TMP/err")"; fi
}
"${MPIRUN[@]}" "$BIN" "${C[@]}" >"$TMP/cpu.json" 2>"$TMP/err"
"$BIN" "${C[@]}" --set parallel.mode=dp --set loader.batch_size=30 >"$TMP/one.json"
"${MPIRUN[@]}" "$BIN" "${C[@]}" "${GPU[@]}" --set parallel.comm=nccl >"$TMP/gpu.json" 2>"$TMP/err"
same "nccl 2 ranks" "$TMP/gpu.json"
# comm mpi on cuda: the gradient staged through the host (a device pointer is no host memory)
"${MPIRUN[@]}" "$BIN" "${C[@]}" "${GPU[@]}" --set parallel.comm=mpi >"$TMP/gmpi.json" 2>"$TMP/err"
same "cuda with comm mpi" "$TMP/gmpi.json"
# the local rank is MPI's (MPI_COMM_TYPE_SHARED): without the launcher's
# variables each rank still takes its own device (both on device 0, NCCL refuses)
"${MPIRUN[@]}" env -u OMPI_COMM_WORLD_LOCAL_RANK -u OMPI_COMM_WORLD_LOCAL_SIZE "$BIN" "${C[@]}" \
    "${GPU[@]}" >"$TMP/noenv.json" 2>"$TMP/err"
same "nccl without OMPI_COMM_WORLD_LOCAL_RANK" "$TMP/noenv.json"
# EXCLUSIVE_PROCESS devices and pinned memory: each rank opens its own device only
mkdir "$TMP/excl"
FAKE_EXCLUSIVE_DIR=$TMP/excl "${MPIRUN[@]}" -x FAKE_EXCLUSIVE_DIR "$BIN" "${C[@]}" "${GPU[@]}" \
    --set loader.pin_memory=true --set loader.async_copy=true >"$TMP/excl.json" 2>"$TMP/err"
same "exclusive devices, pinned memory" "$TMP/excl.json"
# adaptive rounds over nccl: after each round rank 0's wish to stop reaches every rank
# (a host value: never the gradients' device buffer), and they end together
"${MPIRUN[@]}" "$BIN" "${C[@]}" "${GPU[@]}" --set parallel.comm=nccl --set train.epochs=1 \
    --sweep loader.num_workers=0,1 --set bench.max_rounds=10 >"$TMP/rounds.json" 2>"$TMP/err"
rc=$?
if [ $rc -eq 0 ] && python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["rounds"]; assert r["count"] >= 9 and r["end"] in ("decided", "round cap"), r' "$TMP/rounds.json"
then ok; else bad "adaptive rounds over nccl: exit $rc: $(tail -c 600 "$TMP/err")"; fi
# two ranks on one GPU: refused before NCCL, the ranks named
"${MPIRUN[@]}" "$BIN" "${C[@]}" "${GPU[@]}" --set 'parallel.devices=[0]' >/dev/null 2>"$TMP/err"
rc=$?
if [ $rc -ne 0 ] && grep -q "ranks 0 and 1 are both on one GPU of .* (device 0, PCI 0000:01:00)" "$TMP/err"; then ok
else bad "two ranks on GPU 0 -> exit $rc: $(tail -c 600 "$TMP/err")"; fi
# ... but device 0 of each rank is not one GPU where a launcher shows each rank
# its own GPU as device 0 (CUDA_VISIBLE_DEVICES per rank): the PCI address decides
FAKE_BUS_PER_RANK=1 "${MPIRUN[@]}" -x FAKE_BUS_PER_RANK "$BIN" "${C[@]}" "${GPU[@]}" \
    --set 'parallel.devices=[0]' >"$TMP/own0.json" 2>"$TMP/err"
same "each rank's own GPU as its device 0" "$TMP/own0.json"
# the report names the engine
"${MPIRUN[@]}" "$BIN" "${C[@]/json/text}" "${GPU[@]}" >"$TMP/out" 2>"$TMP/err"
if grep -q '^# ddp: 2 ranks (nccl)' "$TMP/out"; then ok; else bad "report: $(head -c 400 "$TMP/out") $(tail -c 300 "$TMP/err")"; fi

# --allreduce-bandwidth over nccl: device memory of each rank's own GPU, no wrong element
"${MPIRUN[@]}" "$BIN" --allreduce-bandwidth "${GPU[@]}" --set parallel.comm=nccl >"$TMP/bw" 2>"$TMP/err"
if grep -q "engine nccl, 2 ranks, float sum in place, device memory (GPU 0)" "$TMP/bw" &&
   [ "$(grep -c '^ *[0-9]' "$TMP/bw")" -eq 12 ] && awk '!/^#/ && $NF != 0 { exit 1 }' "$TMP/bw"
then ok; else bad "--allreduce-bandwidth nccl: $(cat "$TMP/bw") $(tail -c 400 "$TMP/err")"; fi

# the allreduce's time is the collective's own: rank 1's compute ops take
# 20 ms each, so it arrives last at each of the 8 allreduces of an epoch and
# its calls are short (the NCCL op of the emulation: well under 10 ms), while
# rank 0 waits in each for about a step of rank 1 (5 ops, 100 ms); rank 0's
# host overhead leaves that wait out
SLOW='[ "$OMPI_COMM_WORLD_RANK" = 1 ] && export FAKE_KERNEL_US=20000; exec "$0" "$@"'
"${MPIRUN[@]}" sh -c "$SLOW" "$BIN" "${C[@]}" "${GPU[@]}" --set train.epochs=2 >"$TMP/slow.json" 2>"$TMP/err"
if python3 - "$TMP/slow.json" <<'PY'; then ok; else bad "allreduce timing: $(tail -c 400 "$TMP/err")"; fi
import json, sys
r = json.load(open(sys.argv[1]))["runs"][0]
fast, slow = r["ranks"][0]["epochs"], r["ranks"][1]["epochs"]
for k, (f, s) in enumerate(zip(fast, slow)):
    ok = s["allreduce_seconds"] / 8 < 0.010 and f["allreduce_seconds"] / 8 > 0.050
    ok &= r["epochs"][k]["host_seconds"] < 0.2 * f["allreduce_seconds"]
    if not ok:
        sys.exit(f"epoch {k + 1}: rank 1 {s['allreduce_seconds']:.4f} s, rank 0 "
                 f"{f['allreduce_seconds']:.4f} s in 8 allreduces; rank 0's host "
                 f"{r['epochs'][k]['host_seconds']:.4f} s")
PY

# a hung peer: rank 1's allreduces stop arriving at its third (the first is
# the communicator's own, before the epochs); DPBENCH_NCCL_TIMEOUT_S=2 aborts
# the communicator and the job ends, failed (exit 1), saying why: the rank
# that timed out first says so, the other that its peer aborted
t0=$(date +%s)
FAKE_NCCL_HANG_RANK=1 FAKE_NCCL_HANG_AFTER=3 DPBENCH_NCCL_TIMEOUT_S=2 "${MPIRUN[@]}" \
    -x FAKE_NCCL_HANG_RANK -x FAKE_NCCL_HANG_AFTER -x DPBENCH_NCCL_TIMEOUT_S "$BIN" "${C[@]}" \
    "${GPU[@]}" >/dev/null 2>"$TMP/err"
rc=$? t=$(( $(date +%s) - t0 ))
if [ $rc -eq 1 ] && [ $t -lt 60 ] &&
   grep -qE "did not complete in 2 s|aborted a call that did not complete" "$TMP/err"
then ok; else bad "hung peer -> exit $rc after $t s: $(tail -c 600 "$TMP/err")"; fi

# the communicator is made before the first epoch: ncclCommInitRank taking
# 3 s shows in no epoch (warmup_epochs 0; an epoch here takes milliseconds)
FAKE_NCCL_INIT_US=3000000 "${MPIRUN[@]}" -x FAKE_NCCL_INIT_US "$BIN" "${C[@]}" "${GPU[@]}" \
    >"$TMP/init.json" 2>"$TMP/err"
if python3 -c 'import json, sys; r = json.load(open(sys.argv[1]))["runs"][0]
sys.exit(0 if max(e["seconds"] for e in r["epochs"]) < 1.5 else 1)' "$TMP/init.json"
then ok; else bad "slow NCCL init in an epoch: $(head -c 300 "$TMP/init.json") $(tail -c 300 "$TMP/err")"; fi

# a diverging job stops where 2 cpu ranks stop, though the GPU's losses are
# read at the epoch's end: every rank joins the late check, rank 0 names the
# rank and batch once, over nccl and over mpi
DIV=(--config configs/ddp.yaml --set train.lr=1e6 --set train.warmup_epochs=0 --set train.epochs=5)
"${MPIRUN[@]}" "$BIN" "${DIV[@]}" >/dev/null 2>"$TMP/cpu.err"
for comm in nccl mpi; do
    "${MPIRUN[@]}" "$BIN" "${DIV[@]}" "${GPU[@]}" --set parallel.comm=$comm --format json >"$TMP/div.json" 2>"$TMP/err"
    rc=$?
    if stops_as_cpu $rc "on rank 0 at batch 1 of epoch 2" && python3 -c "import json,sys; r=json.load(open(sys.argv[1]))['runs'][0]; assert r['failed'] and len(r['epochs']) == 1, r['stopped']" "$TMP/div.json"
    then ok; else bad "divergence on cuda over $comm: exit $rc: $(tail -c 400 "$TMP/err") against the cpu's: $(cat "$TMP/cpu.err")"; fi
done
# a diverging job stopped by SIGTERM to its ranks (as a batch system stops a
# job) before its epoch ends: every rank stops after the same step and reads
# the losses it has, so rank 0's result file names the batch the cpu's
# per-step check names (not a plain interrupt), no epoch kept. The ranks are
# signalled, not mpirun, which kills them a second after it forwards one.
DIVI=(--config configs/ddp.yaml --set train.lr=1e6 --set train.warmup_epochs=0 --set train.epochs=3
      --set dataset.length=200000 --set dataset.sample_cost_us=50 -q)
"${MPIRUN[@]}" "$BIN" "${DIVI[@]}" >/dev/null 2>"$TMP/cpu.err"
where=$(grep -o "on rank [0-9]* at batch [0-9]* of epoch 1" "$TMP/cpu.err" | head -1)
ranks() { for p in $(pids_matching "name=$1"); do [ "$(cat "/proc/$p/comm" 2>/dev/null)" = dpbench ] && echo "$p"; done; }
for comm in nccl mpi; do
    mark=divint-$comm-$$
    "${MPIRUN[@]}" "$BIN" "${DIVI[@]}" "${GPU[@]}" --set parallel.comm=$comm --set name=$mark \
        --out "$TMP/$mark" --format json >/dev/null 2>"$TMP/err" &
    pid=$!
    wait_busy "name=$mark" 2 50 # both ranks a half second into epoch 1 (of about 5 s)
    kill -TERM $(ranks "$mark")
    wait $pid
    rc=$?
    if [ "$rc" -ne 0 ] && [ -n "$where" ] && python3 - "$TMP/$mark" "$where" >"$TMP/py" 2>&1 <<'PY'
import glob, json, sys
d = json.load(open(glob.glob(sys.argv[1] + "/*.json")[0]))
r = d["runs"][0]
assert d["interrupted"] and r["failed"] and "infinite " + sys.argv[2] in r["stopped"] and not r["epochs"], \
    (d["interrupted"], r["failed"], r["stopped"], len(r["epochs"]))
PY
    then ok; else bad "diverging job stopped by SIGTERM, cuda over $comm: exit $rc: $(tail -2 "$TMP/py") $(tail -c 300 "$TMP/err") against the cpu's: $(cat "$TMP/cpu.err")"; fi
done
# 4 ranks whose losses overflow at different batches: the earliest batch is
# named (rank 3's), not the lowest rank's later one, as on the cpu
DIV4=(--config configs/ddp.yaml --set dataset.length=2000 --set train.lr=2 --set seed=0
      --set train.warmup_epochs=0 --set train.epochs=100 -q)
MPI4=("${MPIRUN[@]:0:7}" -np 4 "${MPIRUN[@]:9}") # MPIRUN with -np 4
"${MPI4[@]}" "$BIN" "${DIV4[@]}" >/dev/null 2>"$TMP/cpu.err"
for comm in nccl mpi; do
    FAKE_CUDA_DEVICES=4 "${MPI4[@]}" "$BIN" "${DIV4[@]}" "${GPU[@]}" --set parallel.comm=$comm >/dev/null 2>"$TMP/err"
    rc=$?
    if stops_as_cpu $rc "on rank 3 at batch 28 of epoch 8"; then ok; else bad "4-rank divergence on cuda over $comm: exit $rc: $(tail -c 400 "$TMP/err") against the cpu's: $(cat "$TMP/cpu.err")"; fi
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
