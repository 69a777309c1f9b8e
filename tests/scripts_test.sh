#!/usr/bin/env bash
# Smoke test of the Python side scripts: torch_reference.py on the tutorial,
# compare.py against dpbench's JSON of the same config, plot.py to a PNG.
# Usage: tests/scripts_test.sh [./dpbench]   (PYTHON=... picks the interpreter,
# default /usr/bin/python3). Prints "N passed, N failed"; without torch it
# prints "skipped: no torch" and exits 0.
set -u
BIN=$(realpath "${1:-./dpbench}")
PY=${PYTHON:-/usr/bin/python3}
cd "$(dirname "$0")/.."
if ! "$PY" -c 'import torch' 2>/dev/null; then
    echo "skipped: no torch ($PY cannot import torch)"
    exit 0
fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
pass=0 fail=0
ok()  { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }
SHORT=(--set train.epochs=2 --set train.warmup_epochs=1)

# torch_reference.py: the tutorial in dpbench's schema, splits as the tutorial prints
if "$PY" scripts/torch_reference.py configs/tutorial.yaml "${SHORT[@]}" --out "$TMP/t.json" \
    2>"$TMP/err" && "$PY" - "$TMP/t.json" <<'PY'
import json, math, sys
d = json.load(open(sys.argv[1]))
assert set(d) >= {"dpbench", "date", "machine", "config", "interrupted", "runs"}, list(d)
assert d["dpbench"]["version"].startswith("torch-")
r = d["runs"][0]
assert r["backend"] == "torch-cpu" and r["replicas"] == 1, r["backend"]
assert r["splits"] == [[30], [30], [30], [10]], r["splits"]
assert len(r["epochs"]) == 2 and r["epochs"][0]["epoch"] == 1
assert all(e["samples"] == 100 and math.isfinite(e["loss"]) for e in r["epochs"])
assert r["epochs"][1]["loss"] < r["epochs"][0]["loss"], "loss does not fall"
assert r["summary"]["median_seconds"] > 0
PY
then ok; else bad "torch_reference.py on the tutorial: $(tail -3 "$TMP/err")"; fi

# DataParallel splits with 3 replicas on the cpu: torch.chunk sizes
if "$PY" scripts/torch_reference.py configs/tutorial.yaml --set parallel.replicas=3 \
    --set train.epochs=1 2>/dev/null | "$PY" -c '
import json, sys
s = json.load(sys.stdin)["runs"][0]["splits"]
assert s == [[10, 10, 10]] * 3 + [[4, 4, 2]], s'; then ok
else bad "torch_reference.py splits with 3 replicas"; fi

# config errors are refused like dpbench refuses them
"$PY" scripts/torch_reference.py configs/tutorial.yaml --set loader.num_worker=2 \
    >/dev/null 2>"$TMP/err"
rc=$?
if [ $rc -eq 2 ] && grep -q "did you mean loader.num_workers" "$TMP/err"; then ok
else bad "unknown key: exit $rc, $(cat "$TMP/err")"; fi

# compare.py against dpbench's JSON of the same config
if [ ! -x "$BIN" ]; then
    bad "no dpbench binary at $BIN (run make first)"
elif ! "$BIN" --config configs/tutorial.yaml "${SHORT[@]}" --format json >"$TMP/d.json" \
    2>"$TMP/err"; then
    bad "dpbench: $(tail -3 "$TMP/err")"
else
    if "$PY" scripts/compare.py "$TMP/d.json" "$TMP/t.json" >"$TMP/cmp" 2>"$TMP/err" &&
        grep -q '^# point' "$TMP/cmp" && grep -qE '^\(base\) .* yes$' "$TMP/cmp"; then ok
    else bad "compare.py: $(cat "$TMP/cmp" "$TMP/err")"; fi
    if "$PY" scripts/compare.py --markdown "$TMP/d.json" "$TMP/t.json" >"$TMP/md" &&
        grep -q '^|---' "$TMP/md"; then ok
    else bad "compare.py --markdown: $(cat "$TMP/md")"; fi
    "$PY" scripts/compare.py "$TMP/d.json" configs/tutorial.yaml >/dev/null 2>"$TMP/err"
    rc=$?
    if [ $rc -eq 2 ] && grep -q "not valid JSON" "$TMP/err"; then ok
    else bad "compare.py on a non-JSON file: exit $rc, $(cat "$TMP/err")"; fi
fi

# a key given twice is refused, with its line, as dpbench refuses it
printf 'loader:\n  batch_size: 30\n  batch_size: 40\n' >"$TMP/dup.yaml"
"$PY" scripts/torch_reference.py "$TMP/dup.yaml" >/dev/null 2>"$TMP/err"
rc=$?
if [ $rc -eq 2 ] && grep -q "duplicate key batch_size" "$TMP/err" && grep -q "line 3" "$TMP/err"
then ok; else bad "duplicate key: exit $rc, $(cat "$TMP/err")"; fi

# plot.py: a PNG file
inputs=("$TMP/t.json")
[ -s "$TMP/d.json" ] && inputs+=("$TMP/d.json")
if "$PY" scripts/plot.py "${inputs[@]}" -o "$TMP/p.png" 2>"$TMP/err" &&
    [ "$(head -c 8 "$TMP/p.png" | od -An -tx1 | tr -d ' \n')" = "89504e470d0a1a0a" ]; then ok
else bad "plot.py: $(cat "$TMP/err")"; fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
