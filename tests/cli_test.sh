#!/usr/bin/env bash
# End-to-end checks of the dpbench command line: outputs, exit statuses and
# error messages, result files, and interruption. Prints "N passed, N failed".
. "$(dirname "$0")/lib.sh"
test_init "$@"
yaml() { printf -- "$2" >"$TMP/$1"; echo "$TMP/$1"; }

# ---- outputs
expect 0 "30 -> 30 (x3)" -- --config configs/tutorial.yaml
expect 0 "verdict:" -- --config configs/tutorial.yaml
expect 0 "backends: cpu" -- --version
expect 0 "comm: " -- --version
expect 0 "loader.num_workers" -- --help-config
expect 0 "--config FILE" -- --help
expect 0 "30 -> 15/15 (x3)" -- -c configs/tutorial.yaml --set parallel.replicas=2
expect 0 "10 -> 4/4/2 (x1)" -- -c configs/tutorial.yaml --set parallel.replicas=3
expect 0 "10 -> 2/2/2/2/2 (x1)  5 of 8 replicas used" -- -c configs/tutorial.yaml --set parallel.replicas=8
expect 0 "no effect on the cpu" -- -c configs/tutorial.yaml --set loader.pin_memory=true
# parallel.blas_threads fixes OpenBLAS's count (at most the threads it started: OPENBLAS_NUM_THREADS)
expect 0 "OpenBLAS, 1 thread per replica, as parallel.blas_threads sets" -- -c configs/tutorial.yaml --set parallel.blas_threads=1
# more threads than OpenBLAS may use here: said, not claimed as set (OPENBLAS_NUM_THREADS caps it)
OPENBLAS_NUM_THREADS=1 expect 0 "OpenBLAS, 1 thread per replica, parallel.blas_threads 2 capped at the threads OpenBLAS may use here" -- \
    -c configs/tutorial.yaml --set parallel.blas_threads=2
OPENBLAS_NUM_THREADS=1 "$BIN" -c configs/tutorial.yaml --set parallel.blas_threads=2 --format json | python3 -c "import json,sys; r=json.load(sys.stdin)['runs'][0]; assert (r['blas_library'], r['blas_threads']) == ('OpenBLAS', 1), r" && ok || bad "parallel.blas_threads above OpenBLAS's threads"

# every shipped config is valid on its own, its sweep switched off (--no-sweep):
# it may stop only for data not generated here, or a GPU this machine (or
# this build) lacks
for c in configs/*.yaml; do
    "$BIN" -c "$c" --no-sweep --set train.epochs=1 --set train.warmup_epochs=0 --quiet \
        >/dev/null 2>"$TMP/cfg.err"
    rc=$?
    if [ $rc -eq 0 ] || grep -q "no such dataset\|no CUDA device\|built without it" "$TMP/cfg.err"; then ok
    else bad "$c --no-sweep: exit $rc: $(head -c 300 "$TMP/cfg.err")"; fi
done

# the tutorial's trace, replica lines in replica order
"$BIN" -c configs/tutorial.yaml --set parallel.replicas=2 --set report.trace=true \
    --set train.epochs=1 --set train.warmup_epochs=0 >"$TMP/trace"
printf '\tIn Model: input size [15, 5] output size [15, 2]\n\tIn Model: input size [15, 5] output size [15, 2]\nOutside: input size [30, 5] output_size [30, 2]\n' >"$TMP/want"
if head -3 "$TMP/trace" | cmp -s - "$TMP/want" && [ "$(grep -c '^Outside' "$TMP/trace")" -eq 4 ] \
    && grep -q "^Outside: input size \[10, 5\] output_size \[10, 2\]" "$TMP/trace"; then ok
else bad "trace lines differ: $(head -4 "$TMP/trace")"; fi

# report.trace prints the first epoch's batches only (here the warmup epoch of
# 1 + 10), then the table: 4 batches x (3 replica lines + 1 Outside line)
"$BIN" -c configs/tutorial.yaml --set parallel.replicas=3 --set report.trace=true >"$TMP/trace3"
if [ "$(grep -c '^Outside' "$TMP/trace3")" -eq 4 ] && [ "$(grep -c 'In Model' "$TMP/trace3")" -eq 12 ] &&
    [ "$(head -16 "$TMP/trace3" | grep -vc 'In Model\|^Outside')" -eq 0 ] &&
    sed -n 17p "$TMP/trace3" | grep -q '^# dpbench' && grep -q '^    10 ' "$TMP/trace3"; then ok
else bad "trace of the first epoch only: $(head -20 "$TMP/trace3")"; fi

# JSON: one document with the documented fields
if "$BIN" -c configs/tutorial.yaml --set parallel.replicas=2 --format json >"$TMP/j.json" &&
    python3 - "$TMP/j.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
r = d["runs"][0]
assert r["splits"] == [[15, 15], [15, 15], [15, 15], [5, 5]], r["splits"]
e = r["epochs"][0]
for k in ("epoch", "seconds", "samples_per_second", "loss", "wait_seconds", "copy_seconds", "compute_seconds"):
    assert k in e, k
assert d["config"]["loader"]["batch_size"] == 30 and d["machine"]["cores"] >= 1
assert len(r["epochs"]) == 10 and d["interrupted"] is False
PY
then ok; else bad "JSON output"; fi

# report.floor: the floor's parts in JSON, its line in the text; the BLAS thread choice
"$BIN" -c configs/tutorial.yaml --set report.floor=true --format json >"$TMP/f.json"
if python3 - "$TMP/f.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["runs"][0]
f = r["floor"]
assert f["gather_seconds"] > 0 and f["compute_seconds"] > 0 and f["copy_seconds"] is None, f
assert abs(f["seconds"] - f["gather_seconds"] - f["compute_seconds"]) < 1e-12, f
assert abs(f["ratio"] - r["summary"]["median_seconds"] / f["seconds"]) < 1e-9, f
assert r["blas_threads"] in [t["threads"] for t in r["blas_tune"]], r["blas_tune"]
PY
then ok; else bad "report.floor JSON"; fi
expect 0 "# floor: " -- -c configs/tutorial.yaml --set report.floor=true
expect 0 "= gather " -- -c configs/tutorial.yaml --set report.floor=true --set loader.num_workers=2
expect 0 "per replica step" -- -c configs/tutorial.yaml --set parallel.replicas=2
"$BIN" -c configs/tutorial.yaml --format json | python3 -c "import json,sys; assert json.load(sys.stdin)['runs'][0]['floor'] is None" && ok || bad "floor not null without report.floor"
# the cores this process may use, not the machine's: on one core (taskset, or
# mpirun binding a rank to one) 2 replicas never step side by side, so the BLAS
# choice times them one at a time (no libxsmm tried for so short a step, where
# OpenBLAS's lock between side-by-side replicas would have it tried)
cpu=$(sed -n 's/^Cpus_allowed_list:[[:space:]]*\([0-9]*\).*/\1/p' /proc/self/status) # one we may use
if command -v taskset >/dev/null && [ -n "$cpu" ]; then
    taskset -c "$cpu" "$BIN" -q -c configs/tutorial.yaml --set parallel.replicas=2 --set train.epochs=2 \
        --format json >"$TMP/one.json" 2>/dev/null
    if python3 -c 'import json,sys; t=json.load(open(sys.argv[1]))["runs"][0]["blas_tune"]; assert [x["library"] for x in t] == ["OpenBLAS"], t' "$TMP/one.json"
    then ok; else bad "2 replicas on one allowed core: $(head -c 600 "$TMP/one.json")"; fi
fi

# CSV: a header and one row per epoch
"$BIN" -c configs/tutorial.yaml --format csv >"$TMP/c.csv"
if head -1 "$TMP/c.csv" | grep -q '^run,point,epoch,seconds' && [ "$(wc -l <"$TMP/c.csv")" -eq 11 ]; then ok
else bad "CSV output: $(head -3 "$TMP/c.csv")"; fi
# host_seconds: null in the JSON on the cpu (nothing issued to a device), so
# an empty field in the CSV, not 0
if python3 -c 'import csv,sys; r=list(csv.DictReader(open(sys.argv[1]))); assert all(x["host_seconds"] == "" and x["copy_seconds"] == "0" for x in r), r[0]' "$TMP/c.csv"; then ok
else bad "CSV host_seconds on the cpu: $(head -2 "$TMP/c.csv")"; fi

# sweeps: one row per point, and one JSON run per point
expect 0 "loader.num_workers=2 parallel.replicas=3" -- -c configs/tutorial.yaml \
    --sweep loader.num_workers=0,2 --sweep parallel.replicas=1,3
"$BIN" -c configs/tutorial.yaml --sweep loader.num_workers=0,2 --sweep parallel.replicas=1,3 --format json >"$TMP/s.json"
if python3 -c "import json,sys; d=json.load(open(sys.argv[1])); r=d['runs']; assert len(r)==4; assert r[3]['overrides']=={'loader.num_workers':'2','parallel.replicas':'3'}; assert r[3]['splits'][3]==[4,4,2]" "$TMP/s.json"; then ok
else bad "sweep JSON"; fi
# a swept auto value shows as swept (the point's label), not as the value it resolved to
"$BIN" -c configs/tutorial.yaml --sweep model.loss=auto,mse --sweep parallel.device=auto,cpu --set bench.max_rounds=9 \
    --set train.epochs=1 --set train.warmup_epochs=0 --format json >"$TMP/auto.json"
if python3 -c "import json,sys; r=json.load(open(sys.argv[1]))['runs']; assert [x['overrides'] for x in r] == [{'model.loss': l, 'parallel.device': d} for l in ('auto', 'mse') for d in ('auto', 'cpu')], [x['overrides'] for x in r]; assert r[0]['loss'] == 'mse'" "$TMP/auto.json"; then ok
else bad "swept auto values in overrides: $(head -c 300 "$TMP/auto.json")"; fi
# integers exactly: seed 2^53 - 1 (cJSON's 15 digits wrote 2^53 - 2), and two seeds 2 apart
# are two workloads (a sweep runs both; compare pairs neither)
"$BIN" -c configs/tutorial.yaml --sweep seed=9007199254740989,9007199254740991 --set bench.max_rounds=9 \
    --set train.epochs=1 --set train.warmup_epochs=0 --format json >"$TMP/seed.json"
"$BIN" -c configs/tutorial.yaml --set seed=9007199254740991 --set train.epochs=1 --format json >"$TMP/seed1.json"
"$BIN" -c configs/tutorial.yaml --set seed=9007199254740989 --set train.epochs=1 --format json >"$TMP/seed2.json"
if python3 -c "import json,sys; r=json.load(open(sys.argv[1]))['runs']; assert [x['config']['seed'] for x in r] == [9007199254740989, 9007199254740991] and 'same_as' not in r[1], r[1].get('same_as')" "$TMP/seed.json" &&
   "$BIN" compare "$TMP/seed1.json" "$TMP/seed2.json" 2>&1 | grep -q "seed: 9007199254740991 vs 9007199254740989"; then ok
else bad "large seeds: $(grep -o '"seed":[^,]*' "$TMP/seed.json" | head -3)"; fi

# result files: written atomically, complete, named NAME-STAMP
expect 0 "results written to" -- -c configs/tutorial.yaml --out "$TMP/res"
if ls "$TMP/res"/tutorial-*-*.json >/dev/null 2>&1 && ls "$TMP/res"/tutorial-*-*.csv >/dev/null 2>&1 &&
    ! ls "$TMP/res"/*.tmp >/dev/null 2>&1 && python3 -c "import json,sys,glob; json.load(open(glob.glob(sys.argv[1]+'/*.json')[0]))" "$TMP/res"; then ok
else bad "result files: $(ls "$TMP/res")"; fi

# --export DIR: per point the config, x/y, initial parameters and every epoch's
# order as .npy v1.0 (checked byte by byte here, without numpy), no training
if "$BIN" -c configs/tutorial.yaml --sweep parallel.replicas=1,3 --set loader.drop_last=true \
    --export "$TMP/ex" >"$TMP/out" 2>"$TMP/err" && [ ! -s "$TMP/out" ] &&
    "$BIN" -c configs/tutorial.yaml --set loader.shuffle=false --set train.warmup_epochs=0 \
        --set train.epochs=2 --export "$TMP/ex-noshuf" 2>/dev/null &&
    "$BIN" -c configs/tutorial.yaml --set train.lr=0 --format json >"$TMP/lr0.json" &&
    python3 - "$TMP/ex" "$TMP/ex-noshuf" "$TMP/lr0.json" <<'PY'
import ast, glob, json, os, struct, sys
ex, noshuf, lr0 = sys.argv[1:4]
def npy(path):
    b = open(path, "rb").read()
    assert b[:8] == b"\x93NUMPY\x01\x00", b[:8]
    hlen = struct.unpack("<H", b[8:10])[0]
    assert (10 + hlen) % 64 == 0 and b[9 + hlen:10 + hlen] == b"\n"
    h = ast.literal_eval(b[10:10 + hlen].decode("latin1"))
    assert h["fortran_order"] is False
    return h["descr"], h["shape"], b[10 + hlen:]
def rows(path):
    descr, shape, data = npy(path)
    assert descr == "<i8" and len(data) == 8 * shape[0] * shape[1]
    n = shape[1]
    return [list(struct.unpack("<%dq" % n, data[8 * n * i:8 * n * (i + 1)])) for i in range(shape[0])]
m = json.load(open(os.path.join(ex, "export.json")))
assert m["format"] == 1 and m["config"]["sweep"] == {"parallel.replicas": ["1", "3"]}
assert [p["point"] for p in m["points"]] == ["parallel.replicas=1", "parallel.replicas=3"]
assert [p["overrides"] for p in m["points"]] == [{"parallel.replicas": "1"}, {"parallel.replicas": "3"}]
for p in m["points"]:
    d = os.path.join(ex, p["dir"])
    cfg = json.load(open(os.path.join(d, "config.json")))
    assert "sweep" not in cfg and cfg["loader"]["drop_last"] is True and p["data"] is True
    want = {"x.npy": ("<f4", (100, 5)), "y.npy": ("<f4", (100, 2)), "w0.npy": ("<f4", (2, 5)),
            "b0.npy": ("<f4", (2,))}
    for name, (descr, shape) in want.items():
        got = npy(os.path.join(d, name))
        assert got[:2] == (descr, shape) and len(got[2]) == 4 * shape[0] * (shape[1:] or (1,))[0], name
    o = rows(os.path.join(d, "orders.npy"))
    assert len(o) == 11 and all(sorted(r) == list(range(100)) for r in o) and o[0] != o[1]
assert not glob.glob(ex + "/**/*.tmp", recursive=True)
assert rows(os.path.join(noshuf, "point-000", "orders.npy")) == [list(range(100))] * 2
# the exported initial parameters are the ones dpbench trains from (lr 0 keeps them)
w0 = struct.unpack("<10f", npy(os.path.join(ex, "point-000", "w0.npy"))[2])
b0 = struct.unpack("<2f", npy(os.path.join(ex, "point-000", "b0.npy"))[2])
fp = json.load(open(lr0))["runs"][0]["final_params"]
assert list(w0) == fp["weight"] and list(b0) == fp["bias"], (w0, fp)
PY
then ok; else bad "--export layout: $(cat "$TMP/err")"; fi
expect 2 "--export $TMP/ex/export.json: not a directory" -- --export "$TMP/ex/export.json"
expect 2 "ex/export.json: not a directory" -- --export "$TMP/ex/export.json/exists.json/deeper"
expect 2 "did you mean loader.num_workers?" -- --export "$TMP/ex2" --set loader.num_wrkers=2
if [ ! -e "$TMP/ex2" ]; then ok; else bad "--export with a bad config created $TMP/ex2"; fi
# result files never lost, mixed or overwritten
for bad_out in /dev/null /dev/full README.md; do
    expect 2 "report.out $bad_out: not a directory" -- -c configs/tutorial.yaml --out $bad_out
done
expect 2 "report.out /proc: cannot create a file there" -- -c configs/tutorial.yaml --out /proc
expect 2 "outf.yaml:2: report.out README.md: not a directory" -- -c "$(yaml outf.yaml 'report:\n  out: README.md\n')"
# what a command prints reaches stdout, or the command fails (a full disk: /dev/full)
for args in --help --version --help-config "-q --set train.epochs=1"; do
    "$BIN" $args >/dev/full 2>"$TMP/err"
    rc=$?
    if [ $rc -eq 1 ] && grep -q "cannot write .*to stdout: No space left on device" "$TMP/err"; then ok
    else bad "dpbench $args >/dev/full: exit $rc: $(cat "$TMP/err")"; fi
done
expect 2 "too long for a result file name" -- --set name="$(printf 'n%.0s' $(seq 250))" --out "$TMP/long/er"
if [ ! -e "$TMP/long" ]; then ok; else bad "a refused --out left the folders it made: $(ls -R "$TMP/long")"; fi
# ... with a trailing slash, and where a later check refuses the run (the memory estimate)
expect 2 "too long for a result file name" -- --set name="$(printf 'n%.0s' $(seq 250))" --out "$TMP/long/er/"
expect 2 "more than the" -- --set dataset.length=1000000 --set dataset.features=1000 --max-memory 1G --out "$TMP/long/er"
if [ ! -e "$TMP/long" ]; then ok; else bad "a refused run left the folders --out made: $(ls -R "$TMP/long")"; fi
# two runs with one name at once, and two more right after: four whole pairs,
# each JSON with its own CSV (3 and 5 epochs tell the runs apart)
mkdir "$TMP/same"
"$BIN" --set train.epochs=3 --out "$TMP/same" >/dev/null 2>&1 & p1=$!
"$BIN" --set train.epochs=5 --out "$TMP/same" >/dev/null 2>&1 & p2=$!
wait $p1; r1=$?; wait $p2; r2=$?
"$BIN" --set train.epochs=3 --out "$TMP/same" >/dev/null 2>&1; r3=$?
"$BIN" --set train.epochs=5 --out "$TMP/same" >/dev/null 2>&1; r4=$?
if [ "$r1$r2$r3$r4" = 0000 ] && python3 - "$TMP/same" <<'PY'
import glob, json, os, sys
d = sys.argv[1]
js = sorted(glob.glob(d + "/tutorial-*.json"))
summaries = glob.glob(d + "/*-summary.csv")
assert len(js) == 4 and len(glob.glob(d + "/*.csv")) == 8 and len(summaries) == 4, os.listdir(d)
for j in js:  # each JSON with its own summary: one row per point, its epochs
    n = len(json.load(open(j))["runs"][0]["epochs"])
    assert open(j[:-5] + "-summary.csv").read().splitlines()[1].split(",")[3] == str(n), j
assert not [f for f in os.listdir(d) if f.startswith(".")], os.listdir(d)
for j in js:
    n = len(json.load(open(j))["runs"][0]["epochs"])
    rows = open(j[:-5] + ".csv").read().splitlines()[1:]
    assert n in (3, 5) and len(rows) == n, (j, n, len(rows))
PY
then ok; else bad "concurrent result files: exits $r1 $r2 $r3 $r4: $(ls -a "$TMP/same")"; fi

# a file system that fills up: results still on stdout, exit 1 naming the
# path, and no half result (a JSON without its CSV) left behind
tiny="$TMP/tiny"
mkdir "$tiny"
if mount -t tmpfs -o size=1m tmpfs "$tiny" 2>/dev/null; then
    trap 'umount "$tiny" 2>/dev/null; rm -rf "$TMP"' EXIT
    fill() { # leaves about $1 bytes free
        rm -f "$tiny/filler"
        local free=$(( $(stat -f -c '%a*%S' "$tiny") ))
        head -c $(( free - $1 )) /dev/zero >"$tiny/filler" 2>/dev/null
        true
    }
    args=(--set train.epochs=300 --format csv)
    "$BIN" "${args[@]}" --out "$TMP/sizes" >/dev/null 2>&1
    jbytes=$(stat -c %s "$TMP"/sizes/*.json) cbytes=$(stat -c %s "$TMP"/sizes/*[0-9].csv)
    for room in 8192 $(( jbytes + cbytes / 2 )); do # the JSON fails; the JSON fits, the CSV not
        fill "$room"
        "$BIN" "${args[@]}" --out "$tiny" >"$TMP/tiny.out" 2>"$TMP/tiny.err"; rc=$?
        left=$(ls -A "$tiny" | grep -v '^filler$')
        if [ $rc -eq 1 ] && [ "$(wc -l <"$TMP/tiny.out")" -eq 301 ] && [ -z "$left" ] &&
            grep -q "result files not written (results are on stdout): $tiny/.*: cannot write: No space left on device" "$TMP/tiny.err"; then ok
        else bad "full file system with $room bytes free: exit $rc, left '$left': $(cat "$TMP/tiny.err")"; fi
    done
    umount "$tiny"
else
    echo "cli: skipped the full-file-system test: mounting a tmpfs is not allowed here" >&2
fi

# ---- no GPU here: cuda refuses with one line, auto falls back to the cpu
if ! "$BIN" --version | grep -q cuda || ! nvidia-smi -L >/dev/null 2>&1; then
    expect 1 "parallel.device cuda: " -- -c configs/tutorial.yaml --set parallel.device=cuda
    expect 1 "parallel.device cuda: " -- -c configs/tutorial.yaml --set parallel.device=cuda --set parallel.devices=[0,0,0]
    expect 0 "parallel.device auto: using cpu" -- -c configs/tutorial.yaml --set parallel.device=auto
    expect 0 "30 -> 8/8/8/6 (x3)" -- --set parallel.device=auto --set parallel.devices=[0,0,0,0]
    "$BIN" --set parallel.device=auto --set parallel.devices=[0,0,0,0] >/dev/null 2>"$TMP/err"
    grep -q "parallel.devices' 4 ids run as 4 replicas on the cpu" "$TMP/err" && ok || bad "auto devices notice: $(cat "$TMP/err")"
    # each sweep point runs on the backend it names: a cuda point fails up front
    expect 1 "parallel.device cuda: " -- --sweep parallel.device=cpu,cuda
    "$BIN" --h2d-bandwidth >/dev/null 2>"$TMP/err"; rc=$?
    if [ $rc -eq 1 ] && [ "$(wc -l <"$TMP/err")" -eq 1 ]; then ok; else bad "--h2d-bandwidth without a GPU: exit $rc: $(cat "$TMP/err")"; fi
fi

# the binary is not linked against the CUDA libraries: it opens them for cuda runs only
if ! ldd "$BIN" | grep -qE 'libcudart|libcublas|libnccl'; then ok
else bad "dpbench is linked against CUDA libraries: $(ldd "$BIN" | grep -E 'cudart|cublas|nccl')"; fi

# ---- usage and config errors: exit 2, one line naming what is wrong
expect 2 "unknown option '--bogus'" -- --bogus
# a sweep's header: what the sweep sets reads "swept", and each way the points split
# their batches is listed under the first point that splits so
"$BIN" -q -c configs/tutorial.yaml --sweep parallel.replicas=1,2,3 --sweep loader.batch_size=30,20 \
    --repeat 1 >"$TMP/sw.txt" 2>"$TMP/err"
if grep -q "^# data: 100 x 5 -> 2, seed 0; batch swept, .* swept batches/epoch" "$TMP/sw.txt" &&
    grep -q "^# parallel: cpu, swept replicas;" "$TMP/sw.txt" &&
    grep -A2 "^#  parallel.replicas=2 loader.batch_size=30:" "$TMP/sw.txt" | grep -q "^#   30 -> 15/15 (x3)" &&
    grep -A2 "^#  parallel.replicas=3 loader.batch_size=20:" "$TMP/sw.txt" | grep -q "^#   20 -> 7/7/6 (x5)"
then ok; else bad "a sweep's header and splits: $(head -c 1500 "$TMP/sw.txt")"; fi
expect 2 "unknown option '-Z'" -- -qZ # in a group: the letter, not the argument before
expect 2 "compare: unknown option '-x'" -- compare -xy a.json b.json
expect 2 "compare: unknown option '-x'" -- compare --format=json -xy a.json b.json
expect 2 "unknown option '--quiet=1'" -- --quiet=1 # a flag given a value: as given
# a flag's number is decimal, as a config value is: no hex, sign or space
expect 2 "--budget: expected seconds, such as 300, 90s or 10m, found '0x10'" -- --budget 0x10
expect 2 "--max-memory: expected bytes, 1 or more (e.g. 512M, 4G), found '0x10M'" -- --max-memory 0x10M
expect 2 "--repeat: expected a whole number from 1 to 1000, found '+3'" -- --repeat +3
expect 2 "--threshold: expected a share such as 3% or 0.03, found ' 3%'" -- --threshold " 3%"
# a near miss names the option meant; a prefix of several names them
expect 2 "unknown option '--formt': did you mean --format?" -- --formt json
expect 2 "unknown option '--s': it could be --set, --sweep" -- --s x
expect 2 "unknown option '--verbose=1': --verbose takes no value" -- --verbose=1
expect 2 "compare: unknown option '--fromat': did you mean --format?" -- compare a.json b.json --fromat json
expect 2 "/nonexistent/a.yaml: cannot open config" -- compare -c/nonexistent/a.yaml -c configs/tutorial.yaml
# one config twice (an A/A check): the sides' points, warnings and notes tell A from B
expect 0 "(A) configs/tutorial.yaml: B's point is (B) configs/tutorial.yaml" -- \
    compare -c configs/tutorial.yaml -c configs/tutorial.yaml --repeat 2 -q
# two long paths are labelled by their ends, where they differ
long="$TMP/$(printf 'd%.0s' {1..250})/$(printf 'e%.0s' {1..250})"
mkdir -p "$long" && cp configs/tutorial.yaml "$long/a.yaml" && cp configs/tutorial.yaml "$long/b.yaml"
expect 0 "eeee/a.yaml: B's point is ...$(printf 'd%.0s' {1..10})" -- compare -c "$long/a.yaml" -c "$long/b.yaml" --repeat 2 -q
grep -q "eeee/b.yaml$" "$TMP/out" || bad "compare -c of two long paths: B's label lacks its end: $(tail -3 "$TMP/out")"
rm -r "${long%/*}"
# a side's config error names its file once: at its line where the file gave the key, else before it
expect 2 "dpbench: $TMP/pf.yaml:2: loader.prefetch_factor: can only" -- \
    compare -c configs/tutorial.yaml -c "$(yaml pf.yaml 'loader:\n  prefetch_factor: 2\n')"
expect 2 "dpbench: configs/tutorial.yaml: loader.prefetch_factor: can only" -- \
    compare -c configs/tutorial.yaml -c configs/tutorial.yaml --set loader.prefetch_factor=2
expect 2 "compare: --format given twice" -- compare a.json b.json --format=json --format=csv
expect 2 "--config needs a value" -- --config
expect 2 "unexpected argument 'extra'" -- extra
expect 2 "cannot open config" -- --config "$TMP/missing.yaml"
expect 2 "not a regular file" -- --config "$TMP"
expect 2 "did you mean loader.num_workers?" -- --set loader.num_wrkers=2
# a number key given no value ('key:' or a YAML null) says so, not "found ''"
expect 2 "null.yaml:2:11: train.epochs: expected an integer (decimal digits: no spaces, point, exponent or hex), found no value" -- \
    --config "$(yaml null.yaml "train:\n  epochs: ~\n")"
# a leaf two sections share names both; a misspelt sweep: names it
expect 2 "unknown key 'budget_s' (did you mean tune.budget_s or bench.budget_s?)" -- --set budget_s=5
expect 2 "unknown key 'sweeps' (did you mean sweep?)" -- --config "$(yaml sweeps.yaml "sweeps:\n  train.lr: [0.1]\n")"
expect 2 "--set loader.batch_size=0: loader.batch_size: expected an integer in [1, 16777216], found 0" -- --set loader.batch_size=0
expect 2 "expected true or false" -- --set loader.shuffle=maybe
expect 2 "expected one of text|json|csv" -- --format xml
expect 2 ":2:15: loader.batch_size: expected an integer" -- --config "$(yaml bad1.yaml 'loader:\n  batch_size: thirty\n')"
expect 2 "duplicate key 'train.lr'" -- --config "$(yaml bad2.yaml 'train:\n  lr: 1\n  lr: 2\n')"
expect 2 "empty config" -- --config "$(yaml empty.yaml '')"
expect 2 "must be a mapping" -- --config "$(yaml list.yaml '- a\n- b\n')"
expect 2 "aliases" -- --config "$(yaml alias.yaml 'loader:\n  batch_size: &b 4\n  num_workers: *b\n')"
expect 2 "malformed YAML" -- --config "$(yaml tab.yaml 'loader:\n\tbatch_size: 4\n')"
# a byte that is no text is placed where it is (libyaml gives only its offset)
expect 2 "ctl.yaml:4:14: malformed YAML: control characters are not allowed (0x01)" -- \
    --config "$(yaml ctl.yaml 'seed: 1\nloader:\n  batch_size: 10\n  shuffle: tr\001ue\n')"
expect 2 "utf8.yaml:2:10: malformed YAML: invalid leading UTF-8 octet (0xff)" -- \
    --config "$(yaml utf8.yaml 'seed: 1\nname: caf\377\n')"
expect 2 "utf8b.yaml:2:10: malformed YAML: invalid leading UTF-8 octet (0xff)" -- \
    --config "$(yaml utf8b.yaml '\357\273\277seed: 1\rname: caf\377\n')" # a BOM, a lone CR
# a key over libyaml's 1024 characters is named as such (libyaml says "mapping values are not allowed")
expect 2 "longkey.yaml:2:1103: malformed YAML: a key longer than 1024 characters" -- \
    --config "$(yaml longkey.yaml "train:\n  $(printf 'x%.0s' {1..1100}): 1\n")"
expect 2 "inline.yaml:1:1108: malformed YAML: mapping values are not allowed in this context" -- \
    --config "$(yaml inline.yaml "train: $(printf 'x%.0s' {1..1100}): 1\n")"
expect 2 "tab.yaml:1:1108: malformed YAML: mapping values are not allowed in this context" -- \
    --config "$(yaml tab.yaml "train:\t$(printf 'x%.0s' {1..1100}): 1\n")" # ':' then a tab: a value
# (characters, not bytes: a key of 600 two-byte characters is within the limit)
expect 2 "wide.yaml:1:604: malformed YAML: mapping values are not allowed in this context" -- \
    --config "$(yaml wide.yaml "$(printf '\303\251%.0s' {1..600}): x: y\n")"
# Latin-1 text: placed at the byte that begins a character, not the one after it
expect 2 "latin1.yaml:2:10: malformed YAML: not UTF-8: the byte 0xe9 begins a character that 0x73 does not continue" -- \
    --config "$(yaml latin1.yaml 'seed: 1\nname: caf\351s\n')"
# ... and any other UTF-8 error in it is named as likely Latin-1 too
expect 2 "umlaut.yaml:2:8: malformed YAML: invalid leading UTF-8 octet (0xfc) (Latin-1 text? save the file as UTF-8)" -- \
    --config "$(yaml umlaut.yaml 'seed: 1\nname: M\374ller\n')"
# a list's items are numbers, each: none empty, none holding a comma (never dropped or split)
expect 2 "items.yaml:2:15: transform.mean: expected a number, found '0.4,0.3'" -- \
    --config "$(yaml items.yaml 'transform:\n  mean: [0.5, \"0.4,0.3\"]\n  std: [1, 1]\n')"
expect 2 "transform.mean: expected a number, found ''" -- \
    --config "$(yaml items2.yaml 'transform:\n  mean: [0.5, \"\", 0.4]\n  std: [1, 1, 1]\n')"
for v in '0.5,,0.4' '[,0.5,]' '0.5,' ','; do
    expect 2 "transform.mean: an empty item in '$v' (each item is a number)" -- --set "transform.mean=$v"
done
expect 2 "parallel.devices: an empty item in ','" -- --set parallel.devices=,
# the rounds' bounds: both given at odds refused; one given, the other yields to it
expect 2 "rounds.yaml:2: bench.min_rounds: 50 is more than bench.max_rounds 10" -- \
    --config "$(yaml rounds.yaml 'bench:\n  min_rounds: 50\n  max_rounds: 10\n')"
if "$BIN" -q --set bench.max_rounds=3 --sweep seed=1,2 --format json 2>/dev/null |
    python3 -c "import json,sys; r=json.load(sys.stdin)['rounds']; sys.exit(r['count'] != 3)"
then ok; else bad "bench.max_rounds=3 alone: not 3 rounds"; fi
# run-wide keys are not swept (a swept bench.max_rounds was ignored, its points labelled by it)
for k in bench.max_rounds=1,2 tune.max_workers=1,2 report.floor=true,false; do
    expect 2 "sweep: key ${k%%=*} cannot be swept: bench.*, tune.* and report.* hold" -- --sweep "$k"
done
expect 2 "overflows" -- --set seed=123456789012345678901234567890
expect 2 "finite" -- --set train.lr=1e999
# one number grammar (every numeric key: tests/test_config.c), here the
# forms that got through: a leading space, hex integers and hex reals
expect 2 "seed: expected an integer (decimal digits" -- --set seed=' 5'
expect 2 "seed: expected an integer (decimal digits" -- --set seed=0x10
expect 2 "train.lr: expected a number (decimal digits" -- --set train.lr=0x1p3
expect 2 "numbers.yaml:2:7: train.lr: expected a number" -- --config "$(yaml numbers.yaml 'train:\n  lr: 0x1p3\n')"
expect 2 "cannot create directory" -- --out /proc/dpbench-nope
# every missing level is created, as mkdir -p does; a dangling symlink is named
expect 0 "results written to $TMP/deep/b/c/d/" -- --set train.epochs=1 --out "$TMP/deep/b/c/d"
expect 0 "wrote an idx dataset to $TMP/deep2/x/y/z" -- --make-dataset idx "$TMP/deep2/x/y/z" --per-class 1 --classes 2
expect 0 "exported 1 point to $TMP/deep3/p/q" -- --export "$TMP/deep3/p/q" --set dataset.length=10
ln -s "$TMP/nowhere" "$TMP/dangling"
expect 2 "$TMP/dangling is a dangling symbolic link (to '$TMP/nowhere'" -- --out "$TMP/dangling"
expect 2 "$TMP/dangling is a dangling symbolic link" -- --out "$TMP/dangling/a/b"
expect 2 "$TMP/dangling is a dangling symbolic link" -- --export "$TMP/dangling"
expect 2 "$TMP/dangling is a dangling symbolic link" -- --make-dataset cifar10 "$TMP/dangling/x" --per-class 1
if [ ! -e "$TMP/nowhere" ]; then ok; else bad "a dangling --out link was followed"; fi
# commands with a run of their own: one at a time, once, without a flag it would drop
expect 2 "--export cannot be combined with --allreduce-bandwidth" -- --export "$TMP/cx" --allreduce-bandwidth
expect 2 "--allreduce-bandwidth cannot be combined with --format" -- --allreduce-bandwidth --format json
expect 2 "--export cannot be combined with --out" -- --export "$TMP/cx" --out "$TMP/cx2"
expect 2 "--export cannot be combined with --format" -- --export "$TMP/cx" --format csv
# ... the same key through --set: a note (scripts pass one --set to every command), nothing written there
expect 0 "note: --export does not use report.out (--export writes its files" -- --export "$TMP/cx-set" \
    --set report.out="$TMP/cx-out"
if [ ! -e "$TMP/cx-out" ] && [ -s "$TMP/cx-set/export.json" ]; then ok; else bad "--export --set report.out wrote there"; fi
expect 0 "note: --tune does not use bench.max_rounds" -- --tune --set bench.max_rounds=5 \
    --set tune.budget_s=1 --set tune.max_workers=1 -q
expect 2 "--export given twice" -- --export "$TMP/cx" --export "$TMP/cx2"
expect 2 "--allreduce-bandwidth cannot be combined with --sweep" -- --allreduce-bandwidth --sweep seed=1,2
expect 2 "--tune given twice" -- --tune --tune
expect 2 "compare -c: --export is a command of its own" -- compare -c configs/tutorial.yaml -c configs/tutorial.yaml --export "$TMP/cx" --format json
expect 2 "--h2d-bandwidth cannot be combined with --repeat" -- --h2d-bandwidth -r 3
if [ ! -e "$TMP/cx" ] && [ ! -e "$TMP/cx2" ]; then ok; else bad "a refused command wrote its folder"; fi
# --allreduce-bandwidth --out: the table on stdout and in NAME-STAMP.allreduce.txt
expect 0 "table written to $TMP/ab/x/bw-" -- --allreduce-bandwidth --set name=bw --out "$TMP/ab/x"
if cmp -s "$TMP/out" "$TMP"/ab/x/bw-*.allreduce.txt && grep -q "^# one rank: busbw is 0" "$TMP/out"; then ok
else bad "--allreduce-bandwidth --out: $(ls -A "$TMP/ab/x")"; fi
# ... a signal ends it before the next size: exit 130, what was measured, the table says why
DPBENCH_TEST_SIGNAL_AT="allreduce sizes" "$BIN" --allreduce-bandwidth >"$TMP/out" 2>"$TMP/err"
rc=$?
if [ $rc = 130 ] && grep -q "^# interrupted: a signal stopped the sweep after 0 sizes" "$TMP/out"; then ok
else bad "--allreduce-bandwidth, SIGINT: exit $rc: $(head -c 300 "$TMP/out")"; fi
expect 2 "--max-memory: expected bytes" -- --max-memory lots
for m in 0 0.5 5i 5iB 1Bi; do # under a byte: no limit (0 turned every check off); "i" only after K, M or G
    expect 2 "--max-memory: expected bytes, 1 or more (e.g. 512M, 4G), found '$m'" -- --max-memory $m
done
expect 2 "more than the" -- --set dataset.length=1000000 --set dataset.features=1000 --max-memory 1G
expect 2 "sweep point loader.batch_size=200" -- --set dataset.length=100 --set loader.drop_last=true --sweep loader.batch_size=10,200
printf 'name: a\0b\n' >"$TMP/nul.yaml"
expect 2 "nul.yaml:1:" -- --config "$TMP/nul.yaml"
printf 'name: caf\xc3\n' >"$TMP/utf8.yaml"
expect 2 "utf8.yaml:1:" -- --config "$TMP/utf8.yaml"

# ---- refused up front (exit 2), one line naming the problem
# a command word after options: it names its command only first
for cmd in --make-dataset compare; do
    expect 2 "$cmd must come first, before any option" -- --export "$TMP/D" $cmd idx "$TMP/D2"
    expect 2 "$cmd must come first, before any option" -- -q --set seed=1 $cmd A B
done
[ ! -e "$TMP/D" ] && [ ! -e "$TMP/D2" ] && ok || bad "a misplaced command wrote something"
expect 2 "more than 4096 points" -- --sweep loader.num_workers=0,1,2,3,4,5,6,7 \
    --sweep loader.batch_size=1,2,3,4,5,6,7,8 --sweep seed=1,2,3,4,5,6,7,8 --sweep train.epochs=1,2,3,4,5,6,7,8,9
# every list's limit is named, whatever its length and wherever it comes from
# (a fixed buffer said "list too long" or "value list too long" before)
many() { seq -s, 0 $(($1 - 1)); } # 0,1,...,N-1
expect 2 "--sweep: seed: at most 64 values" -- --sweep seed="$(many 4096)"
expect 2 "dpbench: --sweep: train.lr: expected a number" -- --sweep train.lr=a,b
expect 2 "sweep: seed: at most 64 values" -- --config "$(yaml sweep4096.yaml "sweep:\n  seed: [$(many 4096)]\n")"
expect 2 "transform.mean: at most 4 values" -- --set transform.mean="$(many 10000)"
expect 2 "mean100k.yaml:2:9: transform.mean: at most 4 values" -- \
    --config "$(yaml mean100k.yaml "transform:\n  mean: [$(many 100000)]\n  std: [1]\n")"
expect 2 "parallel.devices: at most 64 ids" -- --set parallel.devices="[$(many 10000)]"
expect 2 "sweep: train.lr: at most 64 values" -- --sweep train.lr="$(seq -s, 1 4096 | sed 's/,/e-3,/g')e-3"
expect 2 "deep.yaml:1:19: YAML nested deeper than 16 levels (the limit" -- \
    --config "$(yaml deep.yaml "a: $(printf '[%.0s' $(seq 5000))$(printf ']%.0s' $(seq 5000))\n")"
expect 2 "loader.num_workers: empty value" -- --sweep 'loader.num_workers=,'
expect 2 "loader.num_workers: empty value" -- --sweep 'loader.num_workers=1,,2'
expect 2 "value '02' given twice" -- --sweep loader.num_workers=2,02
expect 2 "value '0.10' given twice" -- --sweep train.lr=0.1,0.10
# a --sweep list as --set and YAML write one: spaces around the commas, [a, b]
for v in "train.lr=0.1, 0.2" "train.lr=[0.1, 0.2]"; do
    "$BIN" -q --sweep "$v" --set train.epochs=1 --format json 2>"$TMP/err" >"$TMP/sw.json"
    if python3 -c 'import json,sys; assert [r["point"] for r in json.load(open(sys.argv[1]))["runs"]] == ["train.lr=0.1", "train.lr=0.2"]' "$TMP/sw.json"
    then ok; else bad "--sweep '$v': $(head -c 300 "$TMP/err")"; fi
done
# --repeat fixes the rounds that --budget and --precision adapt: refused, not ignored
expect 2 "--repeat cannot be combined with --budget" -- --repeat 3 --budget 10
expect 2 "--repeat cannot be combined with --precision" -- --precision 1% --repeat 3
# a key --set and --swept: the sweep runs, and a note says the --set does not
expect 0 "note: --sweep train.epochs=1,2 runs its values; --set train.epochs=3 is not run" -- \
    --set train.epochs=3 --sweep train.epochs=1,2
# floats that differ stay two points with two labels, whatever digit they differ in
expect 0 "train.lr=0.01000002" -- --sweep train.lr=0.01000001,0.01000002 --set train.epochs=1
# a key given twice on the command line is refused (the command line still
# replaces a list from the file)
expect 2 "--sweep seed: the key is given twice on the command line" -- --sweep seed=1,2 --sweep seed=3,4
expect 2 "--sweep loader.num_workers: the key is given twice" -- --sweep loader.num_workers=0 --sweep train.lr=0.1,0.2 --sweep loader.num_workers=2
expect 0 "seed=7" -- --config "$(yaml swf.yaml 'sweep:\n  seed: [1, 2]\n')" --sweep seed=7,8 --set train.epochs=1
# --set of a key the file sweeps runs that one value (it was dropped for the sweep's)
"$BIN" --config "$TMP/swf.yaml" --set seed=3 --set train.epochs=1 --format json >"$TMP/pin.json" 2>/dev/null
if python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert len(d['runs']) == 1 and d['config']['seed'] == 3" "$TMP/pin.json"; then ok
else bad "--set of a key the file sweeps: $(head -c 300 "$TMP/pin.json")"; fi
# a section where a key belongs: said so, with its keys
expect 2 "--set loader=5: 'loader' is a section, not a key: name one of its keys (loader.batch_size," -- --set loader=5
expect 2 "'train' is a section, not a key: name one of its keys (train.epochs, train.warmup_epochs, train.lr)" -- --sweep train=1,2
expect 2 "unknown key 'transfrm' (did you mean transform? a section, with the keys transform." -- --set transfrm=1
expect 2 "--set sweep=1: 'sweep' is a section of value lists, not a key: sweep a key with --sweep KEY=v1,v2" -- --set sweep=1
expect 2 "'model' is a section, not a key" -- --config "$(yaml secsweep.yaml 'sweep:\n  model: [1, 2]\n')"
# a YAML syntax error wins over what the half-read value looked like, with its line
expect 2 "flowseq.yaml:2:1: malformed YAML: while parsing a flow sequence (from line 1, column 7): did not find expected ',' or ']'" -- --config "$(yaml flowseq.yaml 'name: [a\n')"
expect 2 "flowmap.yaml:3:6: malformed YAML: while parsing a flow mapping (from line 2, column 16)" -- --config "$(yaml flowmap.yaml 'loader:\n  num_workers: {a: 1\ntrain:\n  epochs: 3\n')"
expect 2 "quote.yaml:3:1: malformed YAML: while scanning a quoted scalar (from line 2, column 11): found unexpected end of stream" -- --config "$(yaml quote.yaml 'train:\n  epochs: "3\n')"
expect 2 "value 'true' given twice" -- --sweep loader.shuffle=on,true
expect 2 "expected at least one value" -- --config "$(yaml nosweep.yaml 'sweep:\n  seed: []\n')"
expect 2 "name: control character U+0001 at byte 2" -- --set name="$(printf 'a\001b')"
expect 2 "name: control character U+000A at byte 2" -- --set name="$(printf 'a\nb')"
expect 2 "name: bidirectional control character U+202E at byte 4 (it reorders" -- --set name="$(printf 'run\342\200\256fdp.exe')"
expect 2 "dataset.path: bidirectional control character U+2067 at byte 1" -- --config "$(yaml bidi.yaml 'dataset:\n  path: \342\201\247x\n')"
expect 2 ": cannot open folder" -- --set dataset.kind=folder --set dataset.path="$(printf '\327\220\342\200\217x')" # a right-to-left mark is taken
expect 2 "name: invalid UTF-8 at byte 4" -- --set name="$(printf 'caf\303')"
expect 2 "--set name=caf?: name: invalid UTF-8" -- --set name="$(printf 'caf\303')"
expect 0 "name: café" -- --set name=café
expect 2 "YAML tags (!!binary) are not supported" -- --config "$(yaml tag1.yaml 'name: !!binary aGVsbG8=\n')"
expect 2 "YAML tags (!!python/object:os.system)" -- --config "$(yaml tag2.yaml 'name: !!python/object:os.system x\n')"
expect 2 "tag3.yaml:1:9: YAML tags (!custom)" -- --config "$(yaml tag3.yaml 'loader: !custom\n  batch_size: 3\n')"
mkfifo "$TMP/fifo"
start=$(date +%s)
expect 2 "fifo: not a regular file" -- --config "$TMP/fifo"
[ $(( $(date +%s) - start )) -lt 5 ] && ok || bad "--config on a FIFO blocked"
expect 2 "loader.persistent_workers: needs loader.num_workers > 0" -- --set loader.persistent_workers=true
expect 2 "loader.prefetch_factor: can only be given with loader.num_workers > 0" -- --set loader.prefetch_factor=2
# a sweep over num_workers that reaches 0: the knob is inert there, and said so
expect 0 "loader.num_workers=0: persistent_workers and prefetch_factor have no effect with num_workers 0" -- \
    --set loader.persistent_workers=true --sweep loader.num_workers=0,2
expect 0 "have no effect with num_workers 0" -- --sweep loader.num_workers=0,1 \
    --sweep loader.prefetch_factor=2,4
# ... but a sweep of the knob itself at num_workers 0 is refused, point by point
expect 2 "sweep point loader.persistent_workers=true: loader.persistent_workers" -- \
    --sweep loader.persistent_workers=false,true
# ... and from a file's sweep:, the point's error names the file and the sweep entry's line
expect 2 "sweep point loader.persistent_workers=true: $TMP/r1.yaml:4: loader.persistent_workers: needs" -- \
    --config "$(yaml r1.yaml "loader:\n  num_workers: 0\nsweep:\n  loader.persistent_workers: [false, true]\n")"
# ... with the whole path, however long (a path of 400 bytes was cut at 255)
long="$TMP/$(printf 'd%.0s' {1..200})/$(printf 'e%.0s' {1..200})"
mkdir -p "$long" && printf 'loader:\n  persistent_workers: true\n' >"$long/c.yaml"
expect 2 "dpbench: $long/c.yaml:2: loader.persistent_workers: needs" -- --config "$long/c.yaml"
rm -r "${long%/*}"
expect 0 "verdict" -- --set loader.prefetch_factor=3 --set loader.num_workers=1
expect 0 "loader.pin_memory=true: pin_memory and async_copy have no effect" -- --sweep loader.pin_memory=false,true
expect 2 "train.lr: '1e-310' is too small: expected 0 or a magnitude of at least 1.17549e-38" -- --set train.lr=1e-310
expect 2 "train.lr: '1e-40' is too small" -- --set train.lr=1e-40
expect 0 "lr 0" -- --set train.lr=0

# the memory estimate counts every buffer: it covers the measured peak RSS
# (less the binary's own, from a tutorial run) across shapes that stress each
# term (weights, replicas, dataset, batch pool, outputs, one huge batch: each
# shape's term of hundreds of MiB, past the estimate's slack of about 100).
# Not for a sanitizer's build (tests/asan_bin_test.sh), whose shadow memory
# and quarantine count in its RSS.
if [ -n "${DPBENCH_TEST_SANITIZER:-}" ]; then ok
elif python3 - "$BIN" <<'PY'
import concurrent.futures, json, subprocess, sys
def run(*sets):
    args = [sys.argv[1], "--format", "json"]
    for s in sets:
        args += ["--set", s]
    return json.loads(subprocess.run(args, check=True, capture_output=True, text=True).stdout)
base = run()["peak_rss_bytes"]
grid = [  # features, out_features, length, batch, replicas, workers
    (8192, 4096, 1, 1, 1, 0), (4096, 1, 12500, 12500, 1, 0), (4096, 2048, 8, 8, 4, 0),
    (256, 16, 200000, 256, 2, 2), (1024, 64, 20000, 4096, 3, 2), (64, 4096, 1000, 1000, 2, 0),
    (5, 2, 100, 30, 8, 0)]
def check(shape):
    F, O, L, B, R, W = shape
    d = run(f"dataset.features={F}", f"model.out_features={O}", f"dataset.length={L}",
            f"loader.batch_size={B}", f"parallel.replicas={R}", f"loader.num_workers={W}")
    used, est = d["peak_rss_bytes"] - base, d["host_memory_estimate_bytes"]
    if est < used:
        return f"{F}x{O} L{L} B{B} R{R} W{W}: estimate {est / 2**20:.0f} MiB < {used / 2**20:.0f} MiB used"
# two at a time, the two slowest first: each process's peak is its own
with concurrent.futures.ThreadPoolExecutor(2) as pool:
    bad = [b for b in pool.map(check, grid) if b]
sys.exit("\n".join(bad) or None)
PY
then ok; else bad "memory estimate below the measured peak"; fi
expect 2 "the run needs about 1.3" -- --set dataset.features=16384 --set model.out_features=4096 \
    --set dataset.length=1 --set loader.batch_size=1 --max-memory 600M
expect 2 "GiB available memory less a" -- --set dataset.length=1000000000 --set dataset.features=100

# ---- a run that went wrong says so
"$BIN" --set train.lr=1e6 --set train.epochs=5 --format json >"$TMP/nan.json" 2>"$TMP/nan.err"; rc=$?
if [ $rc -eq 1 ] && grep -q "the loss became infinite at batch 1 of epoch 2 (train.lr 1e+06 diverged)" "$TMP/nan.err" &&
    python3 -c "import json,sys; r=json.load(open(sys.argv[1]))['runs'][0]; assert len(r['epochs'])==1 and 'infinite' in r['stopped']" "$TMP/nan.json"; then ok
else bad "diverged run: exit $rc: $(cat "$TMP/nan.err")"; fi

# ---- interruption: SIGINT / SIGTERM stop after the current batch, partial results marked
for sig in INT TERM; do
    "$BIN" --set dataset.length=200 --set loader.batch_size=1 --set dataset.sample_cost_us=200 \
        --set train.epochs=1000 --set loader.num_workers=2 --out "$TMP/int$sig" --format json \
        >"$TMP/int.json" 2>"$TMP/int.err" &
    pid=$!
    sleep 1.5
    kill -$sig $pid
    wait $pid
    rc=$?
    want=$([ $sig = INT ] && echo 130 || echo 143)
    if [ $rc -eq "$want" ] && python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['interrupted'] is True; r=d['runs'][0]; assert 0 < len(r['epochs']) < 1000; assert all(r['splits']) and r['summary']['median_seconds'] > 0" "$TMP/int.json" &&
        python3 -c "import json,sys,glob; d=json.load(open(glob.glob(sys.argv[1]+'/*.json')[0])); assert d['interrupted'] is True" "$TMP/int$sig"; then ok
    else bad "SIG$sig: exit $rc (want $want): $(cat "$TMP/int.err")"; fi
done

# the text report says what ran, with no empty splits or nan figures
"$BIN" --set dataset.length=200 --set loader.batch_size=1 --set dataset.sample_cost_us=200 \
    --set train.epochs=1000 >"$TMP/int.txt" 2>"$TMP/int.err" &
pid=$!
sleep 1.5
kill -INT $pid
wait $pid
rc=$?
if [ $rc -eq 130 ] && grep -q "^# interrupted: [0-9]* of 1000 epochs reported" "$TMP/int.txt" &&
    ! grep -qiE "nan|^#   0 ->" "$TMP/int.txt" && grep -q "only what completed is reported" "$TMP/int.err"; then ok
else bad "interrupted text report: exit $rc: $(cat "$TMP/int.txt" "$TMP/int.err")"; fi

# a stop during dataset generation (seconds of work) is not held up until it ends
"$BIN" --set dataset.length=4096 --set dataset.features=4096 --set model.out_features=1024 \
    >"$TMP/gen.out" 2>"$TMP/gen.err" &
pid=$!
sleep 1
start=$(date +%s%N)
kill -TERM $pid
wait $pid
rc=$? ms=$(( ($(date +%s%N) - start) / 1000000 ))
if [ $rc -eq 143 ] && [ $ms -lt 3000 ] && [ ! -s "$TMP/gen.out" ] &&
    grep -q "interrupted by SIGTERM before any epoch completed" "$TMP/gen.err"; then ok
else bad "SIGTERM during generation: exit $rc after $ms ms: $(cat "$TMP/gen.err")"; fi

# a stop during --export: exit 143, nothing of it left (no folder, no staging folder)
"$BIN" --export "$TMP/ex-int" --set dataset.length=4096 --set dataset.features=4096 \
    --set model.out_features=1024 >/dev/null 2>"$TMP/exint.err" &
pid=$!
sleep 1
kill -TERM $pid
wait $pid
rc=$?
if [ $rc -eq 143 ] && [ ! -e "$TMP/ex-int" ] && [ -z "$(find "$TMP" -name '*dpbench-stage*')" ] &&
    grep -q "interrupted by SIGTERM; nothing exported to" "$TMP/exint.err"; then ok
else bad "SIGTERM during --export: exit $rc: $(cat "$TMP/exint.err")"; fi

# slow samples (0.3 s each, 9 s a batch): a second SIGINT ends the run at once
"$BIN" --set dataset.sample_cost_us=300000 --set loader.num_workers=2 >"$TMP/slow.out" 2>"$TMP/slow.err" &
pid=$!
sleep 1
kill -INT $pid
sleep 0.3
start=$(date +%s%N)
kill -INT $pid 2>/dev/null # the first may have ended it already: a lone process drops the partial epoch
wait $pid
rc=$? ms=$(( ($(date +%s%N) - start) / 1000000 ))
if [ $rc -eq 130 ] && [ $ms -lt 5000 ] && grep -q "interrupted by SIGINT" "$TMP/slow.err"; then ok
else bad "second SIGINT with slow samples: exit $rc after $ms ms: $(cat "$TMP/slow.err")"; fi

# a stop in every phase of a run, one stop path: DPBENCH_TEST_SIGNAL_AT=WORDS
# raises SIGINT as the phase whose name holds WORDS begins. Exit 130, the
# last stderr line says what was kept, and stdout holds every epoch that
# completed (want: measured epochs per point in the JSON, - for none); the
# phases after the measuring keep all of it, whole.
"$BIN" --make-dataset folder "$TMP/sigdata" --classes 2 --per-class 4 --size 8x8 >/dev/null
S2="--sweep loader.num_workers=0,1 --set train.warmup_epochs=1 --set train.epochs=5"
FOLDER="--set dataset.kind=folder --set dataset.path=$TMP/sigdata/train --set model.out_features=2"
while IFS='|' read -r phase want msg args; do
    [ -z "$phase" ] && continue
    DPBENCH_TEST_SIGNAL_AT="$phase" "$BIN" -q --format json $args >"$TMP/ph.json" 2>"$TMP/ph.err" </dev/null
    rc=$?
    got=$(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(','.join(str(len(r['epochs'])) for r in d['runs']))" "$TMP/ph.json" 2>/dev/null || echo -)
    if [ $rc -eq 130 ] && [ "$got" = "$want" ] && tail -1 "$TMP/ph.err" | grep -qF "$msg"; then ok
    else bad "SIGINT as '$phase' began: exit $rc, epochs $got (want 130, $want): $(cat "$TMP/ph.err")"; fi
done <<EOF2
generating the dataset|-|before any epoch completed|$S2
loading the dataset|-|before any epoch completed|$S2 $FOLDER
timing the BLAS|-|before any epoch completed|$S2
measuring the floor|-|before any epoch completed|$S2 --set report.floor=true
setting up the run|-|before any epoch completed|$S2
running the warmup epochs|-|before any epoch completed|$S2
running the epochs|-|before any epoch completed|$S2
finishing the run|5|only what completed is reported|$S2
deciding whether the verdicts|45,45|only what completed is reported|$S2
computing the statistics|10,10|after the last epoch; the results are complete|$S2 --repeat 2
writing the results|10,10|after the last epoch; the results are complete|$S2 --repeat 2
writing the dataset|-|interrupted by SIGINT before the run|--set dataset.kind=folder --set dataset.path=$TMP/sigmade/train --set dataset.make=folder
EOF2
rm -f "$TMP/ph.json" # empty where nothing completed: not a result
# a stop before any epoch writes no result: the --out folders the run made go again
DPBENCH_TEST_SIGNAL_AT="running the epochs" "$BIN" -q --out "$TMP/sigout/a/b" >/dev/null 2>&1 </dev/null
rc=$?
mkdir -p "$TMP/sigkeep"
DPBENCH_TEST_SIGNAL_AT="running the epochs" "$BIN" -q --out "$TMP/sigkeep" >/dev/null 2>&1 </dev/null
if [ $rc -eq 130 ] && [ ! -e "$TMP/sigout" ] && [ -d "$TMP/sigkeep" ]; then ok
else bad "a stop before any epoch left --out's folders: exit $rc, $(ls -R "$TMP/sigout" 2>&1 | head -3)"; fi
[ ! -e "$TMP/sigmade" ] && ok || bad "a stop while dataset.make wrote left $TMP/sigmade"
# ---- the emulated device (docs/emulated.md)
expect 0 "[emulated]" -- -c configs/tutorial.yaml --set parallel.device=emulated
expect 0 "emulated model" -- -c configs/tutorial.yaml --set parallel.device=emulated \
    --set 'parallel.devices=[0,0,1]' --set loader.pin_memory=true --set loader.async_copy=true
expect 2 "emulate.profile: $TMP/none.json: cannot open" -- --set parallel.device=emulated \
    --set emulate.profile="$TMP/none.json"
printf '{"dpbench_h2d_profile": 1, "rows": [{"bytes": 1, "pinned_gbps": -1}]}' >"$TMP/badprof.json"
expect 2 "rows[0].pinned_gbps: expected a positive number" -- --set parallel.device=emulated \
    --set emulate.profile="$TMP/badprof.json"
# one JSON document, blanks after it at most (cJSON stopped at its end: "{...} junk {" ran)
good='{"dpbench_h2d_profile": 1, "rows": [{"bytes": 1024, "pinned_gbps": 10, "pageable_gbps": 5}]}'
for tail in ' junk {' '\0xx' ' {}'; do
    printf '%s'"$tail" "$good" >"$TMP/badprof.json"
    expect 2 "badprof.json: not one JSON document" -- --set parallel.device=emulated \
        --set emulate.profile="$TMP/badprof.json"
done
printf '%s\n\n' "$good" >"$TMP/goodprof.json"
expect 0 "emulated model" -- --set parallel.device=emulated --set emulate.profile="$TMP/goodprof.json"
# overrides: each point's own values, whatever they hold (a label's " seed=" split a path)
mkdir -p "$TMP/sp"
cp "$TMP/goodprof.json" "$TMP/sp/p seed=9.json"
"$BIN" --set parallel.device=emulated --sweep "emulate.profile=$TMP/sp/p seed=9.json,$TMP/goodprof.json" \
    --sweep seed=1,2 -r 1 --set train.epochs=1 -f json >"$TMP/ov.json" 2>/dev/null
if python3 -c "import json,sys; r=json.load(open(sys.argv[1]))['runs']; assert r[0]['overrides'] == {'emulate.profile': sys.argv[2], 'seed': '1'}, r[0]['overrides']" "$TMP/ov.json" "$TMP/sp/p seed=9.json"; then ok
else bad "overrides of a value holding ' seed=': $(head -c 300 "$TMP/ov.json")"; fi
# a profile's rates keep to the keys' range (1e-300 GB/s made a copy 1e293 ms; 1e-9 hung)
for r in 1e-300 0.0001 1e6; do
    printf '{"dpbench_h2d_profile": 1, "rows": [{"bytes": 1048576, "pinned_gbps": 20, "pageable_gbps": %s}]}' \
        "$r" >"$TMP/badprof.json"
    expect 2 "rows[0].pageable_gbps: $(printf %g "$r") is outside [0.001, 100000] GB/s (emulate.pageable_gbps's range)" -- \
        --set parallel.device=emulated --set emulate.profile="$TMP/badprof.json"
done
expect 2 "emulate.h2d_gbps: expected a number in" -- --set emulate.h2d_gbps=0
expect 2 "\`dpbench --make-dataset folder $TMP/no-such-data\` writes one" -- \
    -c configs/emulated-sync-vs-async.yaml --set dataset.path="$TMP/no-such-data/train" --set dataset.make=
# every path dpbench reads refuses what is not a regular file at once, never
# waiting in open() (a FIFO without a writer blocked emulate.profile forever)
mkfifo "$TMP/fifo-open" # and $TMP/fifo, made above
"$BIN" --make-dataset idx "$TMP/idx" --classes 2 --per-class 4 >/dev/null
exec 3<>"$TMP/fifo-open" # a FIFO with a writer (and a reader) holding it open
for path in "$TMP/fifo" "$TMP/fifo-open" /dev/zero "$TMP"; do
    for arg in "--config=$path" "--set=emulate.profile=$path" \
        "--set=dataset.kind=idx --set=dataset.path=$path" \
        "--set=dataset.kind=idx --set=dataset.path=$TMP/idx/train-images-idx3-ubyte --set=dataset.eval_path=$path"; do
        start=$(date +%s%N)
        # shellcheck disable=SC2086
        timeout -s KILL 20 "$BIN" --set parallel.device=emulated $arg >"$TMP/out" 2>"$TMP/err" </dev/null
        rc=$? ms=$(( ($(date +%s%N) - start) / 1000000 ))
        if [ $rc -eq 2 ] && [ $ms -lt 5000 ] && grep -qF "$path: not a regular file" "$TMP/err" &&
            [ "$(wc -l <"$TMP/err")" -eq 1 ]; then ok
        else bad "$arg -> exit $rc after $ms ms: $(head -c 300 "$TMP/err")"; fi
    done
done
exec 3<&-
# a signal while every sweep point reads its profile (1 MiB here) stops the
# checks: 128 + the signal, before the run
{ printf '{"dpbench_h2d_profile": 1, "rows": [{"bytes": 1048576, "pinned_gbps": 20, "pageable_gbps": 8}]'
  head -c 1040000 /dev/zero | tr '\0' ' '; printf '}'; } >"$TMP/bigprof.json"
"$BIN" --set parallel.device=emulated --set emulate.profile="$TMP/bigprof.json" \
    --sweep seed="$(seq -s, 1 64)" --sweep train.epochs="$(seq -s, 1 64)" >/dev/null 2>"$TMP/err" &
pid=$!
sleep 1
kill -TERM $pid
start=$(date +%s%N)
ends=$(timeout 20 tail --pid=$pid -f /dev/null && echo yes)
wait $pid
rc=$? ms=$(( ($(date +%s%N) - start) / 1000000 ))
if [ "$ends" = yes ] && [ $rc -eq 143 ] && [ $ms -lt 5000 ] &&
    grep -q "interrupted by SIGTERM before the run" "$TMP/err"; then ok
else bad "SIGTERM while the points read emulate.profile: exit $rc after $ms ms: $(cat "$TMP/err")"; fi
if "$BIN" -c configs/tutorial.yaml --set parallel.device=emulated --set parallel.replicas=2 \
    --set emulate.compute_us=2000 --set train.epochs=2 --format json >"$TMP/emu.json" &&
    python3 - "$TMP/emu.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["runs"][0]
assert r["backend"] == "emulated", r["backend"]
for e in r["epochs"]:
    assert e["device"] == "emulated"
    for k in ("h2d_engine_busy_seconds", "compute_engine_busy_seconds", "p2p_seconds",
              "exposed_copy_seconds", "load_seconds", "au", "predicted_seconds"):
        assert k in e, k
    # 2 devices x 4 batches x (5 us + 15 or 5 rows x 2 ms): the modelled busy time, exactly
    assert abs(e["compute_engine_busy_seconds"] - 2 * (3 * 0.030005 + 0.010005)) < 1e-9, e
em = r["summary"]["emulated"]
assert em["verdict"] in ("input-bound", "copy-bound", "compute-bound"), em
assert em["verdict"] == "compute-bound", em
assert 0.5 < r["summary"]["au"] <= 1.0, r["summary"]["au"]
PY
then ok; else bad "emulated JSON fields"; fi
# every result file this test wrote follows docs/result.schema.json, which
# describes every field they hold
mapfile -d '' written < <(find "$TMP" -name '*.json' -print0) # names with spaces too
if python3 scripts/validate_result.py --described --skip-other "${written[@]}" >"$TMP/schema.out" 2>&1
then ok; else bad "result schema: $(head -20 "$TMP/schema.out")"; fi

echo "cli: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
