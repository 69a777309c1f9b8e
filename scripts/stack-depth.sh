#!/usr/bin/env bash
# The least stack (ulimit -s, KiB) each command of a corpus needs: for each,
# N bisected between 32 and 1024 KiB to 8 KiB under
#   bash -c 'ulimit -s N; exec dpbench ARGS'
# a run passing when it does not crash (SIGSEGV, SIGBUS). The deepest is what
# src/core/rlimits.c's STACK_MIN covers with a margin (docs/limits.md).
# Writes bench_results/stack/stack-depth-STAMP.txt. DPBENCH_STACK_MEASURE=1
# turns dpbench's refusal of a limit below the minimum off, for this.
#   scripts/stack-depth.sh [./dpbench]
set -u
BIN=$(realpath "${1:-./dpbench}")
cd "$(dirname "$0")/.."
out=bench_results/stack
mkdir -p "$out"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
"$BIN" --make-dataset folder "$T/jpg" --classes 2 --per-class 8 >/dev/null
"$BIN" --make-dataset folder "$T/png" --classes 2 --per-class 8 --format png >/dev/null
"$BIN" --make-dataset cifar10 "$T/cif" --per-class 4 >/dev/null
"$BIN" --make-dataset idx "$T/idx" --classes 2 --per-class 8 --gzip >/dev/null
"$BIN" --format json -q >"$T/a.json"
python3 -c "print('[' * 999 + ']' * 999)" >"$T/deep.json"
corpus=(
    "-q"
    "-q --set parallel.replicas=3 --set loader.num_workers=2"
    "-q --set parallel.device=emulated --set parallel.devices=[0,0,1] --set loader.pin_memory=true --set loader.async_copy=true"
    "-q --set dataset.kind=folder --set dataset.path=$T/jpg/train --set loader.num_workers=2 --set transform.resize=40 --set transform.crop=32 --set transform.pad=2 --set transform.hflip=true"
    "-q --set dataset.kind=folder --set dataset.path=$T/png/train --set loader.num_workers=2"
    "-q --set dataset.kind=cifar10 --set dataset.path=$T/cif --set loader.num_workers=1"
    "-q --set dataset.kind=idx --set dataset.path=$T/idx/train-images-idx3-ubyte.gz"
    "-q --set report.floor=true --set parallel.blas=libxsmm"
    "-q --set dataset.features=65536 --set model.out_features=64 --set dataset.length=64 --set loader.batch_size=32 --set parallel.replicas=2"
    "-q --tune --set tune.budget_s=2 --set tune.max_workers=2 --set dataset.sample_cost_us=10 --set dataset.length=300"
    "--export $T/ex --set dataset.kind=folder --set dataset.path=$T/jpg/train --set transform.crop=28"
    "--make-dataset idx $T/mk --classes 2 --per-class 4 --gzip"
    "--make-dataset folder $T/mk --classes 2 --per-class 4 --format png"
    "compare $T/a.json $T/a.json"
    "compare $T/deep.json $T/a.json"
)
crashes() { # N ARGS: 0 when dpbench crashed under ulimit -s N
    rm -rf "$T/ex" "$T/mk"
    local rc # the subshell, not this shell, reports the crash: to /dev/null
    rc=$( (DPBENCH_STACK_MEASURE=1 bash -c "ulimit -s $1; exec $BIN $2" >/dev/null 2>&1 </dev/null
           echo $?) 2>/dev/null)
    [ $rc -eq 139 ] || [ $rc -eq 135 ] || [ $rc -eq 134 ]
}
{
    echo "# command: scripts/stack-depth.sh ${1:-./dpbench}"
    echo "# date: $(date -u +%Y-%m-%dT%H:%M:%SZ)  commit: $(git rev-parse --short HEAD 2>/dev/null)"
    echo "# machine: $(uname -srm), $(nproc) cores"
    echo "# least KiB   command"
    for args in "${corpus[@]}"; do
        lo=32 hi=1024
        while [ $((hi - lo)) -gt 8 ]; do
            mid=$(( (lo + hi) / 2 ))
            if crashes $mid "$args"; then lo=$mid; else hi=$mid; fi
        done
        printf '%-11s %s\n' "$hi" "${args//$T/T}"
    done
} | tee "$out/stack-depth-$(date -u +%Y%m%d-%H%M%S).txt"
