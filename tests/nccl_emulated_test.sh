#!/usr/bin/env bash
# DDP with comm nccl on the host CUDA emulation (tests/fakecuda.c, whose NCCL
# calls run over MPI): 2 ranks under mpirun, one emulated GPU each, must learn
# what one cpu process learns with the global batch, and what 2 cpu ranks
# learn over MPI. Says nothing about real GPUs or real NCCL. Run by make
# test-cuda-emulated with DPBENCH_CUDART / DPBENCH_CUBLAS set; prints
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
export FAKE_CUDA_DEVICES=2 FAKE_ABORT=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
MPIRUN=(mpirun --oversubscribe --mca btl self,vader -np 2 -x DPBENCH_NCCL -x DPBENCH_CUDART
        -x DPBENCH_CUBLAS -x DPBENCH_LIBCUDA -x FAKE_CUDA_DEVICES -x FAKE_ABORT)
C=(--config configs/ddp.yaml --set dataset.length=240 --set dataset.features=16 --set train.epochs=3
   --set train.warmup_epochs=0 --format json)
"${MPIRUN[@]}" "$BIN" "${C[@]}" --set parallel.device=cuda --set parallel.comm=nccl >"$TMP/gpu.json" 2>"$TMP/err"
"${MPIRUN[@]}" "$BIN" "${C[@]}" >"$TMP/cpu.json" 2>>"$TMP/err"
"$BIN" "${C[@]}" --set parallel.mode=dp --set loader.batch_size=30 >"$TMP/one.json"
# the same learning up to float32 rounding: tests/paramdist.py (testutil.h's order_bound)
if python3 tests/paramdist.py "$TMP/gpu.json" "$TMP/one.json" >"$TMP/d1" 2>&1 &&
   python3 tests/paramdist.py "$TMP/gpu.json" "$TMP/cpu.json" >"$TMP/d2" 2>&1; then ok; else
    bad "nccl 2 ranks vs 1 cpu process: $(cat "$TMP/d1"); vs mpi 2 ranks: $(cat "$TMP/d2" 2>/dev/null): $(tail -c 600 "$TMP/err")"; fi
# the report names the engine
"${MPIRUN[@]}" "$BIN" "${C[@]/json/text}" --set parallel.device=cuda >"$TMP/out" 2>"$TMP/err"
if grep -q '^# ddp: 2 ranks (nccl)' "$TMP/out"; then ok; else bad "report: $(head -c 400 "$TMP/out") $(tail -c 300 "$TMP/err")"; fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
