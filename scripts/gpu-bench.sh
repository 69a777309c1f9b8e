#!/usr/bin/env bash
# GPU benchmark for a CUDA machine: builds, runs the GPU tests, a short run
# under compute-sanitizer, the host-to-device bandwidth sweep, the GPU configs
# (plus the cpu on gpu.yaml for comparison) and the tutorial on the GPU, then
# checks the GPU targets (scripts/gpu-targets.py). Everything lands in
# bench_results/gpu/, stamped with the GPU, driver and CUDA versions.
# With DPBENCH_KIT=DIR (made by scripts/gpu-kit.sh) it builds nothing and runs
# the binaries and libraries of DIR instead.
set -euo pipefail
cd "$(dirname "$0")/.."

CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
PATH=$PATH:$CUDA_HOME/bin
if ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L >/dev/null 2>&1; then
    echo "gpu-bench: no usable NVIDIA GPU (nvidia-smi missing or failing)" >&2
    exit 1
fi

out=bench_results/gpu
stamp=$(date +%Y%m%d-%H%M%S)
mkdir -p "$out"
ngpu=$(nvidia-smi -L | wc -l)
gpu=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)
cuda=$(nvcc --version 2>/dev/null | sed -n 's/.*release \([0-9.]*\).*/\1/p')
{
    echo "# date: $(date -u +%Y-%m-%dT%H:%M:%SZ)  commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
    echo "# gpu, driver: $gpu  (x$ngpu)"
    echo "# cuda toolkit: ${cuda:-unknown}"
    nvidia-smi --query-gpu=index,name,memory.total,pcie.link.gen.current,pcie.link.width.current \
        --format=csv
    nvidia-smi topo -m 2>/dev/null || true
} | tee "$out/machine-$stamp.txt"

if [ -n "${DPBENCH_KIT:-}" ]; then
    kit=$(realpath "$DPBENCH_KIT")
    export LD_LIBRARY_PATH="$kit/lib:$CUDA_HOME/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    dpbench=$kit/bin/dpbench gpu_test=$kit/bin/gpu_test
else
    make -s dpbench build/tests/gpu_test
    dpbench=./dpbench gpu_test=build/tests/gpu_test
fi
"$dpbench" --version | tee -a "$out/machine-$stamp.txt"
"$gpu_test" 2>&1 | tee "$out/test-gpu-$stamp.txt"

# memcheck and synccheck on a short run that takes every path: virtual
# replicas, pinned memory, the copy thread. A finding (or a sanitizer that
# cannot run on this machine) is reported and the benchmark goes on.
sanitized=ok
if command -v compute-sanitizer >/dev/null; then
    for tool in memcheck synccheck; do
        extra=(); [ "$tool" = memcheck ] && extra=(--leak-check full)
        log="$out/sanitizer-$tool-$stamp.txt"
        if compute-sanitizer --tool "$tool" "${extra[@]}" --error-exitcode 1 \
            "$dpbench" --config configs/gpu.yaml --set dataset.length=20000 \
            --set train.warmup_epochs=0 --set train.epochs=1 --set parallel.replicas=3 \
            --set 'parallel.devices=[0,0,0]' >"$log" 2>&1; then
            tail -1 "$log"
        else
            sanitized=failed
            echo "gpu-bench: compute-sanitizer $tool failed, see $log" >&2
        fi
    done
else
    sanitized=skipped
    echo "gpu-bench: compute-sanitizer not found; skipped" >&2
fi

"$dpbench" --h2d-bandwidth | tee "$out/h2d-bandwidth-$stamp.txt"

run() { # NAME ARGS...: one dpbench run, text in NAME-STAMP.txt, json/csv by --out
    local name=$1; shift
    "$dpbench" "$@" --out "$out" | tee "$out/$name-$stamp.txt"
}
json() { ls -t "$out/$1"-2*.json | head -1; } # the newest result file of a run name
run gpu --config configs/gpu.yaml
run gpu-on-cpu --config configs/gpu.yaml --set name=gpu-on-cpu --set parallel.device=cpu \
    --set loader.pin_memory=false --set loader.async_copy=false
if [ "$ngpu" -ge 2 ]; then
    run multi-gpu --config configs/multi-gpu.yaml --set parallel.replicas="$ngpu"
else # one GPU: the same code path as virtual replicas
    run multi-gpu --config configs/multi-gpu.yaml --set parallel.replicas=4 \
        --set 'parallel.devices=[0,0,0,0]'
fi
run gpu-sync-vs-async --config configs/gpu-sync-vs-async.yaml
run gpu-overlap --config configs/gpu-overlap.yaml
# the tutorial on the GPU, 400 steps each: host overhead per step with 1, 2
# and 8 replicas (virtual replicas on device 0)
tutorial=()
for devs in 0 0,0 0,0,0,0,0,0,0,0; do
    n=$(( (${#devs} + 1) / 2 ))
    run "tutorial-gpu-$n" --config configs/tutorial.yaml --set name="tutorial-gpu-$n" \
        --set parallel.device=cuda --set "parallel.devices=[$devs]" --set train.epochs=100
    tutorial+=("$(json "tutorial-gpu-$n")")
done
python3 scripts/gpu-targets.py --bandwidth "$out/h2d-bandwidth-$stamp.txt" \
    --overlap "$(json gpu-overlap)" --tutorial "${tutorial[@]}" | tee "$out/targets-$stamp.txt" \
    || echo "gpu-bench: some GPU targets were missed, see $out/targets-$stamp.txt" >&2
echo "compute-sanitizer: $sanitized" | tee -a "$out/targets-$stamp.txt"
echo "gpu-bench: results in $out/ (stamp $stamp)"
