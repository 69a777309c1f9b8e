#!/usr/bin/env bash
# The dpbench command line on the cuda backend, against tests/fakecuda.c (a
# host-only emulation of cudart and cuBLAS): the report's GPU fields, virtual
# and emulated real devices, the errors without a device, and
# scripts/gpu-targets.py reading what the GPU benchmark writes. Emulated
# timings mean nothing; only their presence and consistency are checked.
# Usage: tests/cuda_cli_test.sh EMULATED_DPBENCH. Prints "N passed, N failed".
set -u
BIN=$(realpath "$1")
cd "$(dirname "$0")/.."
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
export FAKE_DELAY_US=0 FAKE_ABORT=1
. tests/lib.sh

# a small gpu.yaml; more --set after these override them
small=(--config configs/gpu.yaml --set dataset.length=2048 --set dataset.features=32
       --set train.epochs=2)

# json CHECK ARGS...: runs with --format json, then the python CHECK on the
# document `d` (its first run `r`, summary `s`)
json() {
    local check=$1; shift
    if ! "$BIN" "${small[@]}" "$@" --format json >"$TMP/j.json" 2>"$TMP/err"; then
        bad "dpbench $* -> exit $? ($(head -c 300 "$TMP/err"))"; return
    fi
    if python3 - "$TMP/j.json" "$check" <<'PY'; then ok; else bad "dpbench $*: $check"; fi
import json, sys
d = json.load(open(sys.argv[1]))
r = d["runs"][0]
s = r["summary"]
sys.exit(0 if eval(sys.argv[2]) else 1)
PY
}

"$BIN" --version | grep -q "backends: cpu cuda" && ok || bad "--version lacks 'backends: cpu cuda'"

# one device: copy bandwidth, overlap and host overhead are reported
json 'r["backend"] == "cuda" and r["replicas"] == 1 and not r["shared_devices"]' \
     --set loader.async_copy=false
json 's["copy_gbps"] > 0 and 0 <= s["overlap"] <= 1 and s["host_us_per_step"] > 0' \
     --set loader.async_copy=true
json 'all(e["host_seconds"] > 0 and e["copy_seconds"] > 0 and e["copy_bytes"] == 2048 * 48 * 4
          for e in r["epochs"])' --set loader.pin_memory=false
json '"Fake GPU" in d["machine"]["devices"]'
# report.floor on cuda: the host gather only; no OpenBLAS threads chosen
json '(r["floor"]["gather_seconds"] > 0 and r["floor"]["compute_seconds"] is None and
      r["floor"]["seconds"] == r["floor"]["loading_seconds"] and r["blas_threads"] is None)' \
     --set report.floor=true
# virtual replicas share a device; the splits are the cpu's
json 'r["shared_devices"] and r["splits"][0] == [86, 86, 84] and r["splits"][-1] == [86, 86, 84]' \
     --set loader.batch_size=256 --set 'parallel.devices=[0,0,0]'
json 'r["splits"][-1] == [2, 2, 2, 2, 2]' \
     --set dataset.length=100 --set loader.batch_size=30 --set 'parallel.devices=[0,0,0,0,0,0,0,0]'
# three emulated devices: one replica each, then listed out of order with a repeat
FAKE_CUDA_DEVICES=3 json 'r["replicas"] == 3 and not r["shared_devices"]' --set parallel.replicas=3
FAKE_CUDA_DEVICES=3 json 'r["replicas"] == 4 and r["shared_devices"]' \
     --set 'parallel.devices=[2,0,1,0]'

# errors: one line, exit 1
expect_error() { # FRAGMENT ARGS...
    local frag=$1; shift
    "$BIN" "$@" >"$TMP/out" 2>"$TMP/err"
    local rc=$?
    if [ "$rc" -eq 1 ] && grep -qF -- "$frag" "$TMP/err" && [ "$(wc -l <"$TMP/err")" -eq 1 ]; then ok
    else bad "dpbench $* -> exit $rc: $(head -c 300 "$TMP/err")"; fi
}
expect_error "CUDA device 3 does not exist" "${small[@]}" --set 'parallel.devices=[0,3]'
FAKE_CUDA_DEVICES=0 expect_error "no CUDA device" "${small[@]}"
if FAKE_CUDA_DEVICES=0 "$BIN" "${small[@]}" --set parallel.device=auto >"$TMP/out" 2>"$TMP/err" &&
    grep -q "cpu" "$TMP/err"; then ok; else bad "device auto without a device: $(cat "$TMP/err")"; fi

# a diverging run stops where the cpu's does, though the GPU's losses are
# read only at the epoch's end: the first batch whose loss is nan or infinite
# (past float's range), that epoch not kept; also with 3 virtual replicas
for case in "batch 1 of epoch 2|" "batch 4 of epoch 1|--set dataset.noise=1e6" \
    "batch 1 of epoch 2|--set parallel.devices=[0,0,0]"; do
    want=${case%%|*} args=${case#*|}
    div=(--config configs/tutorial.yaml --set train.lr=1e6 --set train.warmup_epochs=0 --set train.epochs=3 $args)
    "$BIN" "${div[@]/parallel.devices=\[0,0,0\]/parallel.replicas=3}" --set parallel.device=cpu -q \
        >/dev/null 2>"$TMP/cpu.err"
    "$BIN" "${div[@]}" --set parallel.device=cuda --format json >"$TMP/div.json" 2>"$TMP/err"
    rc=$?
    if stops_as_cpu $rc "at $want" && python3 -c "import json,sys; r=json.load(open(sys.argv[1]))['runs'][0]; assert r['failed'] and len(r['epochs']) == (0 if 'epoch 1' in r['stopped'] else 1), r" "$TMP/div.json"
    then ok; else bad "divergence on cuda ($args): exit $rc: $(cat "$TMP/err") against the cpu's: $(cat "$TMP/cpu.err")"; fi
done

# --tune holds each trial's run open between its rounds: several runs live
# at once on one device, each with its own module (its functions its own),
# streams and pinned pool; every module unloaded at the end
rm -f "$TMP/report"
if FAKE_REPORT=$TMP/report "$BIN" --tune -c configs/gpu.yaml --set dataset.length=4000 \
    --set tune.max_workers=2 --set tune.budget_s=30 -q --format json >"$TMP/tune.json" 2>"$TMP/err" &&
    grep -qx "modules 0" "$TMP/report" &&
    python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert len(d['runs']) >= 3 and all(r['epochs'] for r in d['runs']) and d['tune']['outcome'], d['tune']['outcome']" "$TMP/tune.json"
then ok; else bad "--tune on cuda: $(tr '\n' ' ' <"$TMP/report" 2>/dev/null) $(tail -c 400 "$TMP/err")"; fi

# a context only on the devices the run uses: none opened by the probe, the
# pinned pool pinned through the run's device (not device 0)
rm -f "$TMP/report"
if FAKE_CUDA_DEVICES=2 FAKE_REPORT=$TMP/report "$BIN" "${small[@]}" --set 'parallel.devices=[1]' \
    --set loader.pin_memory=true --set loader.async_copy=true >/dev/null 2>"$TMP/err" &&
    grep -qx "ctx1 1" "$TMP/report" && ! grep -q "^ctx0 " "$TMP/report"; then ok
else bad "devices [1] opened contexts: $(tr '\n' ' ' <"$TMP/report") $(head -c 300 "$TMP/err")"; fi
# a device that another process holds (EXCLUSIVE_PROCESS): named, exit 1
mkdir -p "$TMP/excl"
exec 9>"$TMP/excl/dev0"
flock -n 9
FAKE_EXCLUSIVE_DIR=$TMP/excl expect_error "device 0 will not open a context" "${small[@]}"
exec 9>&-

# the driver and runtime versions, checked before any device is touched: a
# driver one CUDA major older than the headers dpbench was built with (the
# emulation's runtime reports that version, as the device line shows)
major=$("$BIN" "${small[@]}" --set train.epochs=1 --format json 2>/dev/null |
        sed -n 's/.*runtime \([0-9]*\)\.[0-9]*.*/\1/p' | head -1)
old=$((major - 1))
branch=$([ "$major" -ge 13 ] && echo 580 || echo 525)
FAKE_DRIVER_VERSION=${old}040 expect_error "the NVIDIA driver supports CUDA $old.4, this dpbench was built with CUDA $major." "${small[@]}"
FAKE_DRIVER_VERSION=${old}040 expect_error "(R$branch or later)" "${small[@]}"
FAKE_RUNTIME_VERSION=${old}080 expect_error "the CUDA runtime loaded is $old.8" "${small[@]}"
FAKE_DRIVER_VERSION=0 expect_error "no CUDA device: no NVIDIA driver" "${small[@]}"
if FAKE_DRIVER_VERSION=${old}040 "$BIN" "${small[@]}" --set parallel.device=auto >"$TMP/out" 2>"$TMP/err" &&
    grep -q "using cpu (.*driver supports CUDA $old.4" "$TMP/err"; then ok
else bad "device auto with an old driver: $(cat "$TMP/err")"; fi

# the CUDA libraries are opened only by runs that use them
FAKE_CUDA_LOADED=$TMP/loaded "$BIN" --config configs/tutorial.yaml >/dev/null 2>&1
FAKE_CUDA_LOADED=$TMP/loaded "$BIN" --version >/dev/null 2>&1
if [ ! -e "$TMP/loaded" ]; then ok; else bad "a cpu run or --version loaded cudart"; fi
FAKE_CUDA_LOADED=$TMP/loaded "$BIN" "${small[@]}" >/dev/null 2>&1
if [ -e "$TMP/loaded" ]; then ok; else bad "a cuda run did not load cudart"; fi
# a missing library: cuda refuses in one line, auto falls back to the cpu
DPBENCH_CUDART=$TMP/no-cudart.so expect_error "cannot load $TMP/no-cudart.so" "${small[@]}"
DPBENCH_CUBLAS=$TMP/no-cublas.so expect_error "cannot load $TMP/no-cublas.so" "${small[@]}"
if DPBENCH_CUDART=$TMP/no-cudart.so "$BIN" "${small[@]}" --set parallel.device=auto \
    >"$TMP/out" 2>"$TMP/err" && grep -q "using cpu (.*cannot load" "$TMP/err"; then ok
else bad "device auto without cudart: $(cat "$TMP/err")"; fi
DPBENCH_CUDART=$TMP/no-cudart.so "$BIN" --version | grep -q "backends: cpu cuda" && ok ||
    bad "--version without cudart lacks the cuda backend"

# gpu-targets.py on files shaped like gpu-bench.sh's: a bandwidth table, the
# overlap sweep, tutorial runs. The emulated numbers may pass or fail the
# targets; the script must read them and print one verdict per target.
"$BIN" --h2d-bandwidth --out "$TMP/prof" >"$TMP/h2d.txt" 2>"$TMP/err" || bad "--h2d-bandwidth: $(cat "$TMP/err")"
if awk '!/^#/ && $NF != 0 { exit 1 }' "$TMP/h2d.txt" && grep -q "^ *67108864 " "$TMP/h2d.txt"
then ok; else bad "bandwidth table lacks the 64 MiB row or has wrong words: $(cat "$TMP/h2d.txt")"; fi
# the profile --out wrote: replayed by the emulated device, a config key overriding it
"$BIN" -c configs/tutorial.yaml --set parallel.device=emulated --set train.epochs=1 \
    --set emulate.profile="$TMP/prof/h2d-profile.json" --set emulate.pageable_gbps=3 \
    --format json >"$TMP/emu.json" 2>"$TMP/err" || bad "emulate.profile run: $(cat "$TMP/err")"
if python3 - "$TMP/prof/h2d-profile.json" "$TMP/emu.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
em = json.load(open(sys.argv[2]))["runs"][0]["config"]["emulate"]
big = max(p["rows"], key=lambda r: r["bytes"])
assert p["device"].startswith("Fake GPU") and len(p["rows"]) >= 8, p
assert abs(em["h2d_gbps"] - big["pinned_gbps"]) < 1e-9 * big["pinned_gbps"], (em, big)
assert em["pageable_gbps"] == 3, em
PY
then ok; else bad "h2d profile round trip"; fi
"$BIN" --config configs/gpu-overlap.yaml --set dataset.length=2048 --set dataset.features=64 \
    --set model.out_features=16 --set loader.batch_size=256 --set train.epochs=1 \
    --set loader.num_workers=2 --out "$TMP" >/dev/null 2>&1 || bad "gpu-overlap run failed"
"$BIN" --config configs/tutorial.yaml --set parallel.device=cuda --set 'parallel.devices=[0,0]' \
    --set name=tutorial-gpu --out "$TMP" >/dev/null 2>&1 || bad "tutorial on cuda failed"
python3 scripts/gpu-targets.py --bandwidth "$TMP/h2d.txt" --overlap "$TMP"/gpu-overlap-*.json \
    --tutorial "$TMP"/tutorial-gpu-*.json >"$TMP/targets" 2>"$TMP/err"
rc=$?
if [ "$rc" -le 1 ] && [ "$(grep -cE '^(PASS|FAIL)  ' "$TMP/targets")" -eq 3 ] &&
    grep -q "tutorial, 2 replicas (shared device): host overhead" "$TMP/targets"; then ok
else bad "gpu-targets.py -> exit $rc: $(cat "$TMP/targets" "$TMP/err")"; fi

# labelled data on cuda: cross-entropy and the accuracy count by their
# kernels (the emulation runs their host twins); the same learning as the
# cpu, 1 and 3 devices
"$BIN" --make-dataset idx "$TMP/idx" --classes 4 --per-class 15 >/dev/null || bad "--make-dataset"
IDX=(--set dataset.kind=idx --set dataset.path="$TMP/idx/train-images-idx3-ubyte"
     --set train.epochs=3 --set loader.batch_size=16 --format json)
"$BIN" "${IDX[@]}" >"$TMP/ce-cpu.json" 2>"$TMP/err" || bad "idx on cpu: $(cat "$TMP/err")"
for devs in 1 3; do
    if FAKE_CUDA_DEVICES=$devs "$BIN" "${IDX[@]}" --set parallel.device=cuda --set parallel.replicas=$devs \
        >"$TMP/ce-gpu.json" 2>"$TMP/err" && python3 - "$TMP/ce-cpu.json" "$TMP/ce-gpu.json" <<'PY' &&
import json, sys
a, b = (json.load(open(p))["runs"][0] for p in sys.argv[1:3])
# eval: 20 samples of parameters equal up to rounding (below): one may flip
# class, and its loss is a mean over them like an epoch's
bound = 10 * 2**-24 * (3 * 4 * (16 + 784 + 2)) ** 0.5  # testutil.h's order_bound
ok = b["loss"] == "cross_entropy" and b["backend"] == "cuda" and len(b["epochs"]) == 3
ok &= abs(a["eval"]["loss"] - b["eval"]["loss"]) <= bound * a["eval"]["loss"]
ok &= abs(a["eval"]["accuracy"] - b["eval"]["accuracy"]) * a["eval"]["samples"] <= 1 + 1e-9
# each epoch's accuracy counted on the device: 60 samples, one may flip likewise
ok &= all(abs(x["accuracy"] - y["accuracy"]) * 60 <= 1 + 1e-9 for x, y in zip(a["epochs"], b["epochs"]))
sys.exit(0 if ok else 1)
PY
        python3 tests/paramdist.py "$TMP/ce-gpu.json" "$TMP/ce-cpu.json" >"$TMP/dist" 2>&1
    then ok; else bad "cross_entropy on $devs emulated device(s) differs from the cpu: $(cat "$TMP/dist" 2>/dev/null) $(head -c 300 "$TMP/err")"; fi
done

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
