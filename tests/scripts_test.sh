#!/usr/bin/env bash
# The Python side scripts: torch_reference.py trains on what `dpbench --export`
# writes, and compare.py checks that dpbench and PyTorch end at the same
# parameters and losses (within 1e-4) for several configs; plot.py draws a PNG.
# Each PyTorch run is bounded by a timeout, so a hung rank fails the test instead of
# hanging it.
# Usage: tests/scripts_test.sh [./dpbench]   (PYTHON=... picks the interpreter,
# default /usr/bin/python3). Prints "N passed, N failed"; without torch it
# prints "skipped: no torch" and exits 0.
set -u
BIN=$(realpath "${1:-./dpbench}")
PY=${PYTHON:-/usr/bin/python3}
cd "$(dirname "$0")/.."
# Without its modules (here: -S, no site-packages) a script says in one line
# which interpreter lacks which Debian package, and exits 2. Needs no torch.
for script in torch_reference.py:python3-numpy plot.py:python3-matplotlib; do
    err=$("$PY" -S "scripts/${script%%:*}" configs/tutorial.yaml -o /dev/null 2>&1 >/dev/null)
    rc=$?
    if [ $rc -ne 2 ] || [ "$(printf '%s\n' "$err" | wc -l)" -ne 1 ] ||
        [[ "$err" != *"$("$PY" -c 'import sys; print(sys.executable)') cannot import"*"apt-get install ${script#*:}"* ]]; then
        echo "FAIL: ${script%%:*} without its modules: exit $rc, want 2 and one line: $err" >&2
        echo "scripts: 0 passed, 1 failed"
        exit 1
    fi
done
if ! "$PY" -c 'import torch, numpy' 2>/dev/null; then
    echo "skipped: no torch ($PY cannot import torch and numpy); the missing-module message: 2 passed"
    exit 0
fi
if [ ! -x "$BIN" ]; then
    echo "FAIL: no dpbench binary at $BIN (run make first)" >&2
    echo "0 passed, 1 failed"
    exit 1
fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
. tests/lib.sh
REF=(scripts/torch_reference.py --dpbench "$BIN")

# side NAME CONFIG ARGS...: dpbench and torch_reference.py (given the config
# in its positional form) on the same config and overrides, then compare.py;
# passes when compare.py finds every point within its tolerance (exit 0, an
# "ok" agreement line, identical splits)
side() {
    local name=$1 cfg=$2; shift 2
    if ! "$BIN" --config "$cfg" "$@" --format json >"$TMP/$name.d.json" 2>"$TMP/err"; then
        bad "$name: dpbench: $(tail -3 "$TMP/err")"; return
    fi
    if ! timeout -k 10 300 "$PY" "${REF[@]}" "$cfg" "$@" --out "$TMP/$name.t.json" 2>"$TMP/err"; then
        bad "$name: torch_reference.py: $(tail -3 "$TMP/err")"; return
    fi
    if "$PY" scripts/compare.py --dpbench "$BIN" "$TMP/$name.d.json" "$TMP/$name.t.json" >"$TMP/$name.cmp" \
        2>"$TMP/err" && grep -q '^# agreement: .*: ok$' "$TMP/$name.cmp" &&
        [ -z "$(awk '!/^#/ && $(NF-2) != "yes"' "$TMP/$name.cmp")" ]; then ok
    else bad "$name: compare.py: $(cat "$TMP/$name.cmp" "$TMP/err")"; fi
}

T=configs/tutorial.yaml
side replicas $T --sweep parallel.replicas=1,3,8      # a sweep; DataParallel splits
# compare.py's speed columns are dpbench compare's: the same ratio, interval and verdict
"$BIN" compare "$TMP/replicas.d.json" "$TMP/replicas.t.json" --format json >"$TMP/speed.json" 2>"$TMP/err"
if "$PY" - "$TMP/speed.json" "$TMP/replicas.cmp" <<'PY'
import json, sys
pairs = json.load(open(sys.argv[1]))["pairs"]
rows = [l.split() for l in open(sys.argv[2]) if not l.startswith("#")]
assert len(pairs) == 3 and len(rows) == 3, (pairs, rows)
for p, r in zip(pairs, rows):
    assert r[0] == p["a"]["point"] and r[3] == "%.2f" % p["ratio"], (r, p)
    assert r[4] == "%.2f-%.2f" % tuple(p["ci95"]) and r[5] == p["verdict"], (r, p)
PY
then ok; else bad "compare.py's speed columns vs dpbench compare: $(cat "$TMP/err" "$TMP/replicas.cmp")"; fi
side noshuffle $T --set loader.shuffle=false --set parallel.replicas=2
side droplast $T --set loader.drop_last=true --set loader.batch_size=40
side workers $T --set loader.num_workers=2 --set loader.persistent_workers=true
side wide $T --set dataset.length=3000 --set dataset.features=64 \
    --set model.out_features=8 --set loader.batch_size=128 --set train.epochs=3 \
    --set parallel.replicas=3
# labelled files read by each side itself (dpbench: its loader; PyTorch: a
# Dataset over the same idx and PNG files with numpy and PIL), cross-entropy
if "$BIN" --make-dataset idx "$TMP/idx" --classes 3 --per-class 10 --gzip >/dev/null &&
    "$BIN" --make-dataset folder "$TMP/png" --classes 3 --per-class 4 --format png --size 12x10 >/dev/null; then
    side idx $T --set dataset.kind=idx --set dataset.path="$TMP/idx/train-images-idx3-ubyte.gz" \
        --set transform.mean=0.5 --set transform.std=0.25 --set parallel.replicas=2
    side png $T --set dataset.kind=folder --set dataset.path="$TMP/png/train" \
        --set loader.num_workers=1 --set loader.batch_size=5
    # PIL's resize on the PyTorch side: 150 x 100 to 40 reads all 100 rows (more
    # than one of the resize's 64-row blocks), a non-square source, centre crop
    if "$BIN" --make-dataset folder "$TMP/big" --classes 3 --per-class 3 --format png --size 150x100 >/dev/null
    then side resize $T --set dataset.kind=folder --set dataset.path="$TMP/big/train" \
        --set transform.resize=40 --set loader.batch_size=3
    else bad "dpbench --make-dataset folder 150x100"; fi
    # ImageFolder's order on a tree: nested folders ("a b" sorts before "a/z",
    # as the walk's paths compare), upper-case and hidden names, a hidden class
    # folder, a symlinked folder, a file without an image extension (skipped)
    P=$TMP/png/train R=$TMP/tree
    mkdir -p "$R/class_00/a/z" "$R/class_00/a b" "$R/class_01" "$R/class_02" "$R/.extra"
    cp "$P/class_00/000000.png" "$R/class_00/a/z/"; cp "$P/class_00/000001.png" "$R/class_00/a b/x.PNG"
    cp "$P/class_00/000002.png" "$R/class_00/a/"; cp "$P/class_00/000003.png" "$R/class_00/.h.png"
    cp "$P"/class_01/* "$R/class_01/"; echo notes >"$R/class_01/notes.txt"
    ln -s "$P/class_02" "$R/class_02/linked"; cp "$P/class_01/000001.png" "$R/class_02/zz.png"
    cp "$P/class_02/000003.png" "$R/.extra/"
    side tree $T --set dataset.kind=folder --set dataset.path="$R" --set loader.batch_size=3 \
        --set train.epochs=3
else bad "dpbench --make-dataset"; fi
# random transforms: torch_reference.py applies dpbench's own crop offsets and
# flips (the export's augment.npy), so the losses agree; workers 0 and 2 too
AUG=(--set dataset.kind=cifar10 --set dataset.path="$TMP/cifar" --set transform.crop=32
     --set transform.pad=4 --set transform.hflip=true --set transform.mean=0.5
     --set transform.std=0.25 --set loader.batch_size=10 --set train.lr=0.02
     --set train.warmup_epochs=0 --set train.epochs=2)
if "$BIN" --make-dataset cifar10 "$TMP/cifar" --per-class 6 --eval-per-class 1 >/dev/null; then
    side augment $T "${AUG[@]}" --sweep loader.num_workers=0,2
    # ... and other choices than dpbench's would exceed the tolerance: every flip inverted
    "$BIN" --config $T "${AUG[@]}" --sweep loader.num_workers=0,2 --export "$TMP/aug" 2>/dev/null
    if "$PY" -c '
import numpy as np, sys
for path in sys.argv[1:]:
    a = np.load(path)
    assert a.shape == (2, 60, 3) and a[..., :2].min() >= 0 and a[..., :2].max() <= 8, a.shape
    assert 0.2 < a[..., 2].mean() < 0.8 and (a[0] != a[1]).any()  # both flips; epochs differ
    a[..., 2] = 1 - a[..., 2]
    np.save(path, a)' "$TMP"/aug/point-00[01]/augment.npy &&
        "$PY" scripts/torch_reference.py --export-dir "$TMP/aug" --out "$TMP/aug.t.json" 2>"$TMP/err" &&
        ! "$PY" scripts/compare.py --dpbench "$BIN" "$TMP/augment.d.json" "$TMP/aug.t.json" >"$TMP/cmp" 2>&1 &&
        grep -q "EXCEEDED" "$TMP/cmp"; then ok
    else bad "inverted flips must exceed the tolerance: $(cat "$TMP/cmp" "$TMP/err")"; fi
else bad "dpbench --make-dataset cifar10"; fi

# DDP: 3 ranks under mpirun against torch.distributed (gloo) with
# DistributedSampler and DistributedDataParallel on 3 processes; 100 samples
# over 3 ranks pads the permutation by 2 (skipped without mpirun or MPI)
if command -v mpirun >/dev/null && "$BIN" --version | grep -q '^comm:.*mpi'; then
    if OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout -k 10 120 mpirun --oversubscribe -np 3 \
        "$BIN" --config configs/ddp.yaml --set loader.batch_size=10 --set train.epochs=3 \
        --format json >"$TMP/ddp.d.json" 2>"$TMP/err" &&
       timeout -k 10 300 "$PY" "${REF[@]}" configs/ddp.yaml --set loader.batch_size=10 --set train.epochs=3 \
        --world-size 3 --out "$TMP/ddp.t.json" 2>>"$TMP/err" &&
       "$PY" scripts/compare.py --dpbench "$BIN" "$TMP/ddp.d.json" "$TMP/ddp.t.json" >"$TMP/ddp.cmp" 2>>"$TMP/err" &&
       grep -q '^# agreement: .*: ok$' "$TMP/ddp.cmp" &&
       [ -z "$(awk '!/^#/ && $(NF-2) != "yes"' "$TMP/ddp.cmp")" ]; then ok
    else bad "ddp vs torch DDP: $(cat "$TMP/ddp.cmp" 2>/dev/null) $(tail -5 "$TMP/err")"; fi
fi

# the results are in dpbench's schema, with the splits the tutorial prints
if "$PY" - "$TMP/replicas.t.json" <<'PY'
import json, math, sys
d = json.load(open(sys.argv[1]))
assert set(d) >= {"dpbench", "date", "machine", "config", "interrupted", "runs"}, list(d)
assert d["dpbench"]["version"].startswith("torch-")
assert d["config"]["sweep"] == {"parallel.replicas": ["1", "3", "8"]}, d["config"].get("sweep")
r1, r3, r8 = d["runs"]
assert [r["point"] for r in d["runs"]] == ["parallel.replicas=%d" % n for n in (1, 3, 8)]
assert r1["backend"] == "torch-cpu" and r3["replicas"] == 3
assert r1["splits"] == [[30], [30], [30], [10]], r1["splits"]
assert r3["splits"] == [[10, 10, 10]] * 3 + [[4, 4, 2]], r3["splits"]
assert r8["splits"] == [[4] * 7 + [2]] * 3 + [[2] * 5], r8["splits"]
assert len(r1["epochs"]) == 10 and r1["epochs"][0]["epoch"] == 1
assert all(e["samples"] == 100 and math.isfinite(e["loss"]) for e in r1["epochs"])
assert r1["epochs"][-1]["loss"] < r1["epochs"][0]["loss"], "loss does not fall"
assert r1["summary"]["median_seconds"] > 0 and len(r1["final_params"]["weight"]) == 10
assert list(r1)[-2:] == ["summary", "final_params"], list(r1)
PY
then ok; else bad "torch_reference.py result schema"; fi
if "$PY" -c '
import json, sys
r = json.load(open(sys.argv[1]))["runs"][0]
assert r["splits"] == [[40], [40]] and all(e["samples"] == 80 for e in r["epochs"]), r["splits"]
' "$TMP/droplast.t.json"; then ok; else bad "drop_last in torch_reference.py"; fi

# exceeding the tolerance is a failure: a parameter or a loss moved by 1e-3
"$PY" - "$TMP/replicas.t.json" "$TMP/params.json" "$TMP/loss.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["runs"][1]["final_params"]["weight"][3] *= 1.001
json.dump(d, open(sys.argv[2], "w"))
d = json.load(open(sys.argv[1]))
d["runs"][2]["epochs"][4]["loss"] *= 1.001
json.dump(d, open(sys.argv[3], "w"))
PY
for f in params loss; do
    "$PY" scripts/compare.py --dpbench "$BIN" "$TMP/replicas.d.json" "$TMP/$f.json" >"$TMP/cmp" 2>"$TMP/err"
    rc=$?
    if [ $rc -eq 1 ] && grep -q 'EXCEEDED' "$TMP/cmp" && grep -q 'differ by more than' "$TMP/err"
    then ok; else bad "compare.py with a perturbed $f: exit $rc, $(cat "$TMP/cmp" "$TMP/err")"; fi
done
# ... and a looser tolerance lets the same files pass
if "$PY" scripts/compare.py --dpbench "$BIN" --tolerance 1e-2 "$TMP/replicas.d.json" "$TMP/params.json" >/dev/null
then ok; else bad "compare.py --tolerance 1e-2"; fi

# an existing export is read as is: the same training as from the config
"$BIN" --config $T --set loader.shuffle=false --set parallel.replicas=2 --export "$TMP/ex" 2>/dev/null
if "$PY" scripts/torch_reference.py --export-dir "$TMP/ex" --out "$TMP/ex.json" 2>"$TMP/err" &&
    "$PY" -c '
import json, sys
a, b = (json.load(open(p))["runs"][0] for p in sys.argv[1:3])
assert a["final_params"] == b["final_params"] and len(a["epochs"]) == 10
' "$TMP/ex.json" "$TMP/noshuffle.t.json"; then ok
else bad "--export-dir: $(cat "$TMP/err")"; fi

# config errors are dpbench's: its message and its exit status come through
"$PY" "${REF[@]}" --config $T --set loader.num_worker=2 >/dev/null 2>"$TMP/err"
rc=$?
if [ $rc -eq 2 ] && grep -q "did you mean loader.num_workers" "$TMP/err" &&
    [ "$(wc -l <"$TMP/err")" -eq 1 ]; then ok
else bad "unknown key: exit $rc, $(cat "$TMP/err")"; fi
"$PY" scripts/torch_reference.py --export-dir "$TMP/nowhere" >/dev/null 2>"$TMP/err"
rc=$?
if [ $rc -eq 2 ] && grep -q "nowhere/export.json: cannot read" "$TMP/err"; then ok
else bad "missing export: exit $rc, $(cat "$TMP/err")"; fi

# a diverging run stops where PyTorch's float32 loss turns infinite: dpbench
# keeps exactly the epochs whose PyTorch loss is finite, with the same loss
# (its sums run in double, but a batch's sum beyond float's range is inf as in
# PyTorch; target noise of 1e6 makes batch 4 of epoch 1 the first such one)
for args in "train.lr=1e6" "train.lr=1e6 dataset.noise=1e6"; do
    sets=(--set train.warmup_epochs=0 --set train.epochs=3)
    for a in $args; do sets+=(--set "$a"); done
    "$BIN" --config $T "${sets[@]}" --format json >"$TMP/div.d.json" 2>"$TMP/err"
    rc=$?
    if [ $rc -eq 1 ] && timeout -k 10 300 "$PY" "${REF[@]}" $T "${sets[@]}" --out "$TMP/div.t.json" 2>"$TMP/err2" &&
        "$PY" - "$TMP/div.d.json" "$TMP/div.t.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))["runs"][0]
t = json.load(open(sys.argv[2]))["runs"][0]["epochs"]
finite = [e["loss"] for e in t if e["loss"] is not None]
assert len(finite) < len(t) and t[len(finite)]["loss"] is None, t
assert "infinite" in d["stopped"] and len(d["epochs"]) == len(finite), (d["stopped"], d["epochs"], t)
for a, b in zip(d["epochs"], finite):
    assert abs(a["loss"] - b) <= 1e-4 * abs(b), (a["loss"], b)
PY
    then ok; else bad "divergence against PyTorch ($args): dpbench exit $rc: $(tail -3 "$TMP/err" "$TMP/err2")"; fi
done

# compare.py: Markdown, and a file that is not a result
if "$PY" scripts/compare.py --dpbench "$BIN" --markdown "$TMP/replicas.d.json" "$TMP/replicas.t.json" >"$TMP/md" &&
    grep -q '^|---' "$TMP/md" && grep -q 'params rdiff' "$TMP/md"; then ok
else bad "compare.py --markdown: $(cat "$TMP/md")"; fi
"$PY" scripts/compare.py --dpbench "$BIN" "$TMP/replicas.d.json" configs/tutorial.yaml >/dev/null 2>"$TMP/err"
rc=$?
if [ $rc -eq 2 ] && grep -q "not valid JSON" "$TMP/err"; then ok
else bad "compare.py on a non-JSON file: exit $rc, $(cat "$TMP/err")"; fi

# plot.py: a PNG file
if "$PY" scripts/plot.py "$TMP/replicas.t.json" "$TMP/replicas.d.json" -o "$TMP/p.png" 2>"$TMP/err" &&
    [ "$(head -c 8 "$TMP/p.png" | od -An -tx1 | tr -d ' \n')" = "89504e470d0a1a0a" ]; then ok
else bad "plot.py: $(cat "$TMP/err")"; fi
# the breakdown stacks each part once: a device's wait that overlapped its
# compute (wait + copy + compute over the epoch) never makes a bar taller
# than its epoch
if (cd scripts && "$PY" - <<'PY'
import plot
e = plot.exposed({"seconds": 1.0, "wait_seconds": 0.89, "copy_seconds": 0.2, "overlap": 0.5,
                  "compute_seconds": 0.7})
assert abs(e["compute"] - 0.7) < 1e-12 and abs(e["copy"] - 0.1) < 1e-12, e
assert abs(e["compute"] + e["copy"] + e["wait"] - 1.0) < 1e-12, e
e = plot.exposed({"seconds": 1.0, "wait_seconds": 0.3, "copy_seconds": 0, "compute_seconds": 0.5})
assert e["wait"] == 0.3 and e["compute"] == 0.5, e
PY
); then ok; else bad "plot.py: a bar taller than its epoch"; fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
