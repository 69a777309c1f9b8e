#!/usr/bin/env bash
# scripts/gpu-bench.sh end to end on the host CUDA emulation: a stand-in
# nvidia-smi, the emulated dpbench and gpu_test as the kit (DPBENCH_KIT),
# two emulated GPUs, small runs (GPU_BENCH_ARGS). Every part runs (the
# sanitizer is skipped: not here), DDP over NCCL and MPI included; the
# emulated numbers miss the GPU targets, so that part fails, the run goes on
# and the summary says so and lists the files; a driver older than the kit's
# CUDA is refused, named. Says nothing about a real GPU. Run by make
# test-cuda-emulated; prints "N passed, N failed".
# Usage: tests/gpu_bench_test.sh EMULATED_BUILD_DIR (gpu_test and dpbench)
set -u
EMU=$(realpath "${1:?the emulated build folder}")
cd "$(dirname "$0")/.." || exit 1
. tests/lib.sh
TMP=$(mktemp -d)
trap '[ -n "${KEEP:-}" ] || rm -rf "$TMP"' EXIT
mkdir -p "$TMP/bin" "$TMP/kit/bin"
cp "$EMU/dpbench" "$EMU/gpu_test" "$TMP/kit/bin/"
echo "cuda 13.0" >"$TMP/kit/BUILD"
cat >"$TMP/bin/nvidia-smi" <<'SMI'
#!/bin/sh
case "$*" in
*driver_version*) echo "$SMI_DRIVER" ;;
*--query-gpu*) echo "index, name"; echo "0, Fake GPU" ;;
topo*) echo "GPU0 X" ;;
*) echo "| NVIDIA-SMI $SMI_DRIVER   Driver Version: $SMI_DRIVER   CUDA Version: $SMI_CUDA |" ;;
esac
SMI
chmod +x "$TMP/bin/nvidia-smi"
export PATH=$TMP/bin:$PATH DPBENCH_KIT=$TMP/kit FAKE_CUDA_DEVICES=2 FAKE_DELAY_US=0
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export GPU_BENCH_ARGS="--set dataset.length=2048 --set dataset.features=32 --set model.out_features=4 --set train.epochs=3 --set train.warmup_epochs=0"

SMI_DRIVER=580.65.06 SMI_CUDA=13.0 GPU_BENCH_OUT=$TMP/out scripts/gpu-bench.sh >"$TMP/log" 2>&1
rc=$?
sum=$(ls "$TMP"/out/summary-*.txt 2>/dev/null)
want="test-gpu h2d-bandwidth gpu gpu-on-cpu multi-gpu gpu-sync-vs-async gpu-overlap tutorial-gpu-1
      tutorial-gpu-2 tutorial-gpu-8 block-vs-spin ddp-nccl ddp-gpu-nccl allreduce-nccl ddp-mpi
      ddp-gpu-mpi allreduce-mpi"
missing=$(for p in $want; do grep -qx "ok       $p" "$sum" 2>/dev/null || echo "$p"; done)
if [ $rc -eq 1 ] && [ -z "$missing" ] && grep -q "^FAILED   targets" "$sum"; then ok
else bad "gpu-bench -> exit $rc, parts not ok: $missing; $(tail -c 800 "$TMP/log")"; fi
# the summary lists every file written but itself, and they are there
listed=$(sed -n '/^# files written:/,$p' "$sum" | grep -c "^$TMP/out/")
if [ "$listed" -ge 40 ] && [ "$listed" -eq "$(find "$TMP/out" -type f ! -name 'summary-*' | wc -l)" ] &&
   [ -s "$(ls "$TMP"/out/ddp-nccl-*.json | head -1)" ]; then ok
else bad "summary lists $listed files of $(find "$TMP/out" -type f | wc -l)"; fi
# a driver older than the kit's CUDA: said before anything runs, exit 1
SMI_DRIVER=550.54 SMI_CUDA=12.4 GPU_BENCH_OUT=$TMP/old scripts/gpu-bench.sh >"$TMP/log" 2>&1
rc=$?
if [ $rc -eq 1 ] && grep -q "skipped  kit: built with CUDA 13.0, which this driver (550.54, CUDA 12.4) cannot run" \
    "$TMP"/old/summary-*.txt; then ok; else bad "old driver -> exit $rc: $(tail -c 600 "$TMP/log")"; fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
