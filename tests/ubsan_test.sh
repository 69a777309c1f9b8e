#!/usr/bin/env bash
# dpbench built with UBSan (halting on the first report) over shapes that
# stress the size arithmetic: large products of features and out_features,
# odd batch and replica counts, workers, sweeps, result files.
set -u
BIN=$1
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
pass=0 fail=0
while read -r args; do
    # shellcheck disable=SC2086
    if "$BIN" $args --out "$TMP" >"$TMP/out" 2>"$TMP/err"; then pass=$((pass + 1))
    else fail=$((fail + 1)); echo "FAIL: dpbench $args: $(head -5 "$TMP/err")" >&2; fi
done <<'ARGS'
--set dataset.features=65536 --set model.out_features=512 --set dataset.length=2 --set loader.batch_size=2 --set parallel.replicas=2
--set dataset.features=1048576 --set model.out_features=3 --set dataset.length=3 --set loader.batch_size=3
--set dataset.length=1000 --set loader.batch_size=999 --set parallel.replicas=7 --set loader.num_workers=3
--set dataset.length=5000 --set loader.batch_size=1 --set loader.num_workers=2 --set loader.prefetch_factor=5 --set dataset.sample_cost_us=1
--sweep parallel.replicas=1,3,8 --sweep loader.drop_last=false,true --set train.epochs=2
--set parallel.device=auto --set parallel.devices=[0,0,0] --set train.epochs=3 --format json
ARGS
"$BIN" --set dataset.features=1048576 --set model.out_features=2048 >/dev/null 2>"$TMP/err"
if [ $? -eq 2 ] && grep -q "BLAS' int sizes" "$TMP/err"; then pass=$((pass + 1))
else fail=$((fail + 1)); echo "FAIL: a shape beyond BLAS' int sizes: $(cat "$TMP/err")" >&2; fi
echo "ubsan: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
