#!/usr/bin/env bash
# The GPU benchmark, one command on a fresh GPU machine: scripts/gpu-bench.sh
#
#  1. Checks first what will run: the NVIDIA driver and the CUDA version it
#     supports, the CUDA toolkits here (the newest one the driver can run is
#     built with), and the devices CUDA itself sees (CUDA_VISIBLE_DEVICES and
#     MIG instances as the runtime applies them, not nvidia-smi's list).
#  2. Builds dpbench for that toolkit, the dependencies installed through
#     scripts/install-deps.sh where the package mirror answers; where it does
#     not, and the libraries are not here either, it says so and runs the
#     prebuilt kit that scripts/gpu-kit.sh packs (DPBENCH_KIT=DIR, or
#     .gpu-kit when present), if the driver can run the CUDA it was built with.
#  3. Runs each part on its own, a failing one reported and the next one run:
#     the GPU tests; the host-to-device bandwidth sweep; the GPU configs and the cpu on gpu.yaml;
#     the tutorial on 1, 2 and 8 replicas; waiting threads that block against
#     spinning ones (DPBENCH_CUDA_SYNC); compute-sanitizer's memcheck,
#     racecheck and synccheck on short runs (dpbench's own loss and accuracy
#     kernels included; compute-sanitizer from PATH, else the toolkit's bin);
#     DDP under mpirun --bind-to none: with 2 or more
#     GPUs over NCCL and over MPI (configs/ddp.yaml, gpu.yaml as ddp, and
#     --allreduce-bandwidth), with one --allreduce-bandwidth over a 1-rank
#     NCCL communicator (NCCL only where dpbench has it and libnccl.so.2 is
#     here: libnccl2 is not part of the toolkit); then scripts/gpu-targets.py.
#  4. Ends with a summary: each part ok, FAILED or skipped, and every file
#     written.
#
# Writes into bench_results/gpu/ (stamped YYYYmmdd-HHMMSS): machine-STAMP.txt,
# one NAME-STAMP.txt per part (its output), dpbench's NAME-STAMP.json / .csv /
# -summary.csv result files, targets-STAMP.txt and summary-STAMP.txt.
# Takes: with the kit on one H200, 90 s of runs with the rounds capped
# (GPU_BENCH_ARGS='--set bench.budget_s=20 --set bench.min_rounds=3',
# bench_results/gpu/); uncapped, each sweep adds rounds until its verdicts are
# decided, up to bench.budget_s (480 s) each: up to about 20 minutes. Building
# there adds 2-4 minutes, and the dependencies' install on a fresh machine. Exit status 0 when every part
# that ran passed, 1 when one failed or no GPU could be used. GPU_BENCH_ARGS adds --set options to every
# training run (e.g. '--set train.epochs=1' for a quick look), GPU_BENCH_OUT
# names another folder for the results, GPU_BENCH_SANITIZER_S limits each
# compute-sanitizer run (default 600 s; the sanitizers run last), and
# GPU_BENCH_PART_S every other program a part runs (default 1200 s: a part
# that hangs is stopped, marked FAILED, and the next one runs).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

out=${GPU_BENCH_OUT:-bench_results/gpu}
stamp=$(date +%Y%m%d-%H%M%S)
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
touch "$tmp/start"
summary=() tutorial=()
read -r -a extra <<<"${GPU_BENCH_ARGS:-}"

# part NAME CMD...: runs CMD, its output on the terminal and in NAME-STAMP.txt;
# a program stopped after GPU_BENCH_PART_S seconds (a function: each program
# it runs), so a part that hangs costs its limit, not the machine's lease.
# timeout gives the program a process group of its own, killed whole at the
# limit (mpirun's ranks too); the terminal's Ctrl-C does not reach that group,
# so limited passes it on, and a part so stopped ends the script (exit 130).
part_s=${GPU_BENCH_PART_S:-1200}
limited() { # [limit_s=S] limited CMD...
    local pid rc
    timeout -k 30 "${limit_s:-$part_s}" "$@" &
    pid=$!
    trap "kill -INT -- -$pid 2>/dev/null" INT
    trap "kill -TERM -- -$pid 2>/dev/null" TERM
    wait "$pid"
    rc=$?
    while kill -0 "$pid" 2>/dev/null; do wait "$pid"; rc=$?; done # a wait cut short by a signal
    trap - INT TERM
    return "$rc"
}
part() {
    local name=$1 rc
    shift
    echo "== $name: $*"
    if declare -F "$1" >/dev/null; then "$@"; else limited "$@"; fi 2>&1 | tee "$out/$name-$stamp.txt"
    rc=${PIPESTATUS[0]}
    if [ "$rc" -eq 0 ]; then summary+=("ok       $name")
    elif [ "$rc" -eq 124 ]; then summary+=("FAILED   $name (exit 124: over its time limit, GPU_BENCH_PART_S=${part_s} s or GPU_BENCH_SANITIZER_S)")
    elif [ "$rc" -eq 137 ]; then summary+=("FAILED   $name (exit 137: killed, after its time limit or out of memory)")
    else summary+=("FAILED   $name (exit $rc)"); fi
    [ "$rc" -eq 130 ] && { echo "gpu-bench: interrupted during $name" >&2; exit 130; }
    return "$rc"
}
skip() { echo "== $1: skipped: $2"; summary+=("skipped  $1: $2"); }

# ---- 1. what this machine has ---------------------------------------------
if ! command -v nvidia-smi >/dev/null || ! nvidia-smi >/dev/null 2>&1; then
    echo "gpu-bench: no NVIDIA driver here (nvidia-smi missing or failing): nothing to measure" >&2
    exit 1
fi
driver=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1)
driver_cuda=$(nvidia-smi | sed -n 's/.*CUDA Version: *\([0-9][0-9.]*\).*/\1/p' | head -1)
driver_major=${driver_cuda%%.*}
echo "gpu-bench: NVIDIA driver $driver, which runs CUDA up to ${driver_cuda:-unknown}"

# toolkit_version DIR: "12.8" for DIR's nvcc
toolkit_version() { "$1/bin/nvcc" --version 2>/dev/null | sed -n 's/.*release \([0-9]*\.[0-9]*\).*/\1/p'; }
# the newest toolkit here whose CUDA major the driver runs
nvcc_dir=$(command -v nvcc 2>/dev/null | xargs -r dirname | xargs -r dirname)
for d in ${CUDA_HOME:-} $nvcc_dir /usr/local/cuda /usr/local/cuda-*; do
    [ -x "$d/bin/nvcc" ] && realpath "$d"
done | sort -u | while read -r d; do
    v=$(toolkit_version "$d")
    [ -n "$v" ] || continue
    if [ -n "$driver_major" ] && [ "${v%%.*}" -gt "$driver_major" ]; then
        echo "gpu-bench: CUDA toolkit $v in $d is too new for this driver (CUDA $driver_cuda)" >&2
        continue
    fi
    echo "$v $d"
done | sort -V | tail -1 >"$tmp/toolkit"
read -r toolkit_ver toolkit <"$tmp/toolkit" || toolkit="" toolkit_ver=""
echo "gpu-bench: CUDA toolkit to build with: ${toolkit:-none} ${toolkit_ver}"

# ---- 2. dpbench: built here, or the kit ------------------------------------
deps_here() { pkg-config --exists yaml-0.1 libcjson openblas cmocka libjpeg libpng zlib 2>/dev/null; }
mirror_answers() { [ "$(id -u)" -eq 0 ] && timeout 120 apt-get update -qq >/dev/null 2>&1; } # as root
kit=${DPBENCH_KIT:-}
[ -z "$kit" ] && [ -d .gpu-kit ] && ! deps_here && kit=.gpu-kit
dpbench="" gpu_test=""
if [ -z "$kit" ] && [ -n "$toolkit" ]; then
    if ! deps_here; then
        if mirror_answers; then
            echo "gpu-bench: installing the build dependencies (scripts/install-deps.sh)"
            scripts/install-deps.sh make || echo "gpu-bench: install-deps.sh failed; building anyway" >&2
        else
            echo "gpu-bench: the package mirror does not answer (or this is not root on Debian/" \
                 "Ubuntu) and the libraries dpbench links are not installed: run" \
                 "scripts/gpu-kit.sh where dpbench builds and copy .gpu-kit/ here (DPBENCH_KIT)" >&2
        fi
    fi
    if part build make -s -j"$(nproc)" CUDA_HOME="$toolkit" dpbench build/tests/gpu_test; then
        dpbench=./dpbench gpu_test=build/tests/gpu_test
        export LD_LIBRARY_PATH="$toolkit/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    fi
elif [ -n "$kit" ]; then
    kit=$(realpath "$kit")
    kit_ver=$(sed -n 's/^cuda //p' "$kit/BUILD" 2>/dev/null)
    echo "gpu-bench: the kit in $kit, built with CUDA ${kit_ver:-unknown}"
    if [ -n "$driver_major" ] && [ -n "$kit_ver" ] && [ "${kit_ver%%.*}" -gt "$driver_major" ]; then
        skip kit "built with CUDA $kit_ver, which this driver ($driver, CUDA $driver_cuda) cannot run: pack the kit with a CUDA $driver_major toolkit, or update the driver"
    else
        libs=""
        for d in ${toolkit:+"$toolkit"} /usr/local/cuda-"${kit_ver%%.*}"* /usr/local/cuda; do
            [ -d "$d/lib64" ] && libs+="$d/lib64:"
        done
        export LD_LIBRARY_PATH="$kit/lib:$libs${LD_LIBRARY_PATH:-}"
        dpbench=$kit/bin/dpbench gpu_test=$kit/bin/gpu_test
    fi
else
    skip build "no CUDA toolkit this driver can run, and no kit (DPBENCH_KIT)"
fi

ngpu=0
if [ -n "$dpbench" ]; then
    ngpu=$("$gpu_test" --count 2>"$tmp/count") || ngpu=0
    [ "$ngpu" -gt 0 ] 2>/dev/null || { echo "gpu-bench: CUDA sees no device: $(cat "$tmp/count")" >&2; ngpu=0; }
fi
{
    built=$(git rev-parse --short HEAD 2>/dev/null || echo unknown) # the kit's own where it runs
    [ -n "$kit" ] && built=$(sed -n 's/^commit //p' "$kit/BUILD" 2>/dev/null)
    echo "# date: $(date -u +%Y-%m-%dT%H:%M:%SZ)  commit: ${built:-unknown}"
    echo "# driver: $driver (CUDA $driver_cuda); toolkit: ${toolkit:-none} $toolkit_ver; kit: ${kit:-none}"
    echo "# devices CUDA sees: $ngpu (CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-unset})"
    nvidia-smi --query-gpu=index,name,memory.total,mig.mode.current,compute_mode,pcie.link.gen.current,pcie.link.width.current \
        --format=csv
    nvidia-smi topo -m 2>/dev/null || true
    [ -n "$dpbench" ] && "$dpbench" --version
} 2>&1 | tee "$out/machine-$stamp.txt"

# ---- 3. the parts ----------------------------------------------------------
run() { # NAME ARGS...: one dpbench run; its result files by --out
    local name=$1; shift
    part "$name" "$dpbench" "$@" "${extra[@]}" --set name="$name" --out "$out"
}
json() { find "$out" -name "$1-2*.json" | sort | tail -1; } # the newest result file of a run name

sanitize() { # TOOL: compute-sanitizer on two short runs (MSE; cross-entropy and the count)
    local tool=$1 extra=() limit=${GPU_BENCH_SANITIZER_S:-600}
    [ "$tool" = memcheck ] && extra=(--leak-check full)
    limit_s=$limit limited "$sanitizer" --tool "$tool" "${extra[@]}" --error-exitcode 1 "$dpbench" \
        --config configs/gpu.yaml --set dataset.length=20000 --set train.warmup_epochs=0 \
        --set train.epochs=1 --set parallel.replicas=3 --set 'parallel.devices=[0,0,0]' &&
    limit_s=$limit limited "$sanitizer" --tool "$tool" "${extra[@]}" --error-exitcode 1 "$dpbench" \
        --config configs/gpu.yaml --set dataset.kind=idx --set dataset.path="$tmp/idx/train-images-idx3-ubyte" \
        --set loader.batch_size=64 --set train.warmup_epochs=0 --set train.epochs=1
}

block_vs_spin() { # the same runs with spinning and with sleeping waits, then B against A
    for sync in spin block; do
        DPBENCH_CUDA_SYNC=$sync limited "$dpbench" --config configs/gpu.yaml "${extra[@]}" \
            --set name="sync-$sync-gpu" --out "$out" -q >/dev/null &&
        DPBENCH_CUDA_SYNC=$sync limited "$dpbench" --config configs/tutorial.yaml --set parallel.device=cuda \
            --set train.epochs=100 "${extra[@]}" --set name="sync-$sync-tutorial" --out "$out" -q \
            >/dev/null || return # its exit status: 124 where it was stopped
    done
    for cfg in gpu tutorial; do
        echo "# $cfg: block (B) against spin (A): a ratio above 1.02 is a step more than 2% slower"
        limited "$dpbench" compare "$(json "sync-spin-$cfg")" "$(json "sync-block-$cfg")"
    done
}

h2d() { # the table alone in the part's file (gpu-targets.py reads it); the profile by --out
    limited "$dpbench" --h2d-bandwidth --out "$out" 2>"$tmp/h2d.err" || { local rc=$?; cat "$tmp/h2d.err"; return $rc; }
}

if [ "$ngpu" -gt 0 ]; then
    part test-gpu "$gpu_test"
    "$dpbench" --make-dataset idx "$tmp/idx" --classes 10 --per-class 64 >/dev/null 2>&1
    part h2d-bandwidth h2d
    run gpu --config configs/gpu.yaml
    run gpu-on-cpu --config configs/gpu.yaml --set parallel.device=cpu \
        --set loader.pin_memory=false --set loader.async_copy=false
    if [ "$ngpu" -ge 2 ]; then
        run multi-gpu --config configs/multi-gpu.yaml --set parallel.replicas="$ngpu"
    else # one GPU: the same code path as virtual replicas
        run multi-gpu --config configs/multi-gpu.yaml --set parallel.replicas=4 --set 'parallel.devices=[0,0,0,0]'
    fi
    run gpu-sync-vs-async --config configs/gpu-sync-vs-async.yaml
    run gpu-overlap --config configs/gpu-overlap.yaml
    tutorial=() # host overhead per step with 1, 2 and 8 replicas (virtual ones on device 0)
    for devs in 0 0,0 0,0,0,0,0,0,0,0; do
        n=$(( (${#devs} + 1) / 2 ))
        run "tutorial-gpu-$n" --config configs/tutorial.yaml --set parallel.device=cuda \
            --set "parallel.devices=[$devs]" --set train.epochs=100 && tutorial+=("$(json "tutorial-gpu-$n")")
    done
    part block-vs-spin block_vs_spin
    # last: the slowest part; the toolkit's bin is often not on PATH
    sanitizer=$(command -v compute-sanitizer || ls -d ${toolkit:+"$toolkit/bin/compute-sanitizer"} \
                /usr/local/cuda/bin/compute-sanitizer 2>/dev/null | head -1)
    if [ -n "$sanitizer" ]; then
        for tool in memcheck racecheck synccheck; do part "sanitizer-$tool" sanitize "$tool"; done
    else
        skip compute-sanitizer "not on PATH, in the toolkit's bin or in /usr/local/cuda/bin"
    fi
else
    skip "GPU parts" "no device CUDA can use (see above)"
fi

# DDP: the ranks of this machine under mpirun, one GPU each, not bound to a core each
# (Open MPI's default: a rank's loader workers and copy thread would share one core)
have_nccl() { # built with comm nccl, and libnccl.so.2 (a package of its own) here to open
    local d
    "$dpbench" --version | grep -q '^comm:.*nccl' || return 1
    ldconfig -p 2>/dev/null | grep -q 'libnccl\.so\.2' && return 0
    for d in ${LD_LIBRARY_PATH//:/ }; do [ -e "$d/libnccl.so.2" ] && return 0; done
    return 1
}
if [ "$ngpu" -gt 0 ] && command -v mpirun >/dev/null; then
    mpi=(mpirun --bind-to none -np "$ngpu")
    engines=(mpi)
    have_nccl && engines=(nccl mpi)
    [ "$(id -u)" -eq 0 ] && mpi+=(--allow-run-as-root)
    ddp() {
        local name=$1; shift
        part "$name" "${mpi[@]}" "$dpbench" "$@" "${extra[@]}" --set name="$name" --out "$out"
    }
    if [ "$ngpu" -ge 2 ]; then
        for engine in "${engines[@]}"; do
            ddp "ddp-$engine" --config configs/ddp.yaml --set parallel.device=cuda --set parallel.comm=$engine
            ddp "ddp-gpu-$engine" --config configs/gpu.yaml --set parallel.mode=ddp --set parallel.comm=$engine
            ddp "allreduce-$engine" --allreduce-bandwidth --set parallel.device=cuda \
                --set parallel.comm=$engine
        done
        have_nccl || skip "ddp over nccl" "no comm nccl in this dpbench or no libnccl.so.2 (libnccl2)"
    elif have_nccl; then # a 1-rank NCCL communicator: the engine's own call, timed by its events
        ddp allreduce-nccl --allreduce-bandwidth --set parallel.device=cuda --set parallel.comm=nccl
        skip "ddp over nccl and mpi" "one GPU: NCCL takes one rank per GPU"
    else
        skip ddp "one GPU, and no comm nccl in this dpbench or no libnccl.so.2 (libnccl2)"
    fi
elif [ "$ngpu" -gt 0 ]; then
    skip ddp "no mpirun (openmpi-bin)"
fi

if [ "$ngpu" -gt 0 ] && command -v python3 >/dev/null && [ ${#tutorial[@]} -gt 0 ] &&
   [ -n "$(json gpu-overlap)" ]; then
    part targets python3 scripts/gpu-targets.py --bandwidth "$out/h2d-bandwidth-$stamp.txt" \
        --overlap "$(json gpu-overlap)" --tutorial "${tutorial[@]}"
else
    skip targets "no results to check, or no python3"
fi

# ---- 4. the summary ----------------------------------------------------------
{
    echo "# gpu-bench $stamp: driver $driver (CUDA $driver_cuda), ${ngpu} device(s) CUDA sees"
    printf '%s\n' "${summary[@]}"
    echo "# files written:"
    find "$out" -newer "$tmp/start" -type f ! -name "summary-$stamp.txt" | sort
} | tee "$out/summary-$stamp.txt"
[ "$ngpu" -gt 0 ] && ! printf '%s\n' "${summary[@]}" | grep -q '^FAILED'
