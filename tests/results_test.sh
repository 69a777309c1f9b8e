#!/usr/bin/env bash
# Numbers a user can trust, end to end: statistics on every point, --repeat,
# `dpbench compare` on result files whose answer is known, honest sweeps
# (a point without effect is not run again), --no-sweep, progress lines when
# stderr is not a terminal, the summary CSV, and every result file this test
# writes against docs/result.schema.json. Prints "results: N passed, N failed".
set -u
BIN=$(realpath "${1:-./dpbench}")
cd "$(dirname "$0")/.."
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
. tests/lib.sh
T=configs/tutorial.yaml

# ---- statistics and --repeat
# --repeat 3 of 4 epochs: 12 measured epochs numbered on, statistics over all
if "$BIN" -c $T --set train.epochs=4 --repeat 3 --format json >"$TMP/rep.json" 2>"$TMP/err" &&
    python3 - "$TMP/rep.json" <<'PY'
import json, statistics, sys
d = json.load(open(sys.argv[1]))
r = d["runs"][0]
assert d["repeat"] == 3 and [e["epoch"] for e in r["epochs"]] == list(range(1, 13)), r["epochs"]
st = r["stats"]["epoch_ms"]
assert sorted(st) == sorted(["mean", "stddev", "median", "min", "max", "p90", "p99", "ci95"]), st
t = [1e3 * e["seconds"] for e in r["epochs"]]
assert abs(st["median"] - statistics.median(t)) < 1e-9 and abs(st["mean"] - statistics.mean(t)) < 1e-9
# cJSON prints a double with 15 digits when they read back within its epsilon: 1 ulp off
assert st["ci95"][0] <= st["median"] <= st["ci95"][1] and abs(st["min"] - min(t)) < 1e-9, st
assert isinstance(d["warnings"], list)
PY
then ok; else bad "--repeat 3: $(cat "$TMP/err")"; fi
"$BIN" -c $T --repeat 0 >/dev/null 2>"$TMP/err"
rc=$?
if [ $rc -eq 2 ] && grep -q -- "--repeat: expected a whole number" "$TMP/err"; then ok
else bad "--repeat 0: exit $rc: $(cat "$TMP/err")"; fi
if "$BIN" -c $T >"$TMP/out" 2>&1 && grep -q '^# median epoch [0-9.]* ms ± [0-9.]* (95% CI of the median' "$TMP/out"
then ok; else bad "text summary: median ± half-width: $(grep median "$TMP/out")"; fi

# ---- the markdown format: a table to paste, one row per point; --help names it
expect 0 "| point | median epoch (ms) | 95% CI (ms) |" -- -c $T -q --sweep parallel.replicas=1,2 -f markdown
if [ "$(grep -c '^| ' "$TMP/out")" -eq 3 ]; then ok; else bad "-f markdown: $(cat "$TMP/out")"; fi
expect 0 "json, csv or markdown" -- --help
# the conclusion says how its fastest point was chosen where that is not the first point
# (its median epoch alone could be higher than another's: medians of different rounds)
expect 0 "x the first point's time, paired per round; median epoch" -- -c $T -q \
    --sweep dataset.sample_cost_us=20,0
# a '|' in a cell (a swept file name) is escaped: every row keeps the header's 7 cells
printf '{"dpbench_h2d_profile": 1, "rows": [{"bytes": 1024, "pinned_gbps": 10, "pageable_gbps": 5}]}' >"$TMP/a|b.json"
cp "$TMP/a|b.json" "$TMP/ab.json"
expect 0 'a\|b.json' -- -c $T -q -r 1 -f markdown --set parallel.device=emulated \
    --sweep "emulate.profile=$TMP/a|b.json,$TMP/ab.json"
if [ "$(grep '^| ' "$TMP/out" | sed 's/\\|//g' | awk -F'|' '{print NF}' | sort -u)" = 9 ]; then ok
else bad "-f markdown with '|' in a label: $(cat "$TMP/out")"; fi

# ---- dpbench compare on crafted result files whose answer is known
# craft OUT BASE SPEC: copies result BASE with each run's epoch times replaced;
# SPEC is a Python list of (overrides of config as {"section.key": value},
# epoch ms list); a "backend"/"version" override makes it PyTorch's
"$BIN" -c $T --set train.epochs=3 --format json >"$TMP/base.json" 2>/dev/null
craft() {
    python3 - "$TMP/base.json" "$TMP/$1" "$2" <<'PY'
import copy, json, sys
base = json.load(open(sys.argv[1]))
doc = copy.deepcopy(base)
run0 = base["runs"][0]
doc["runs"] = []
for over, ms in eval(sys.argv[3]):
    r = copy.deepcopy(run0)
    for k, v in over.items():
        if k == "backend":
            r["backend"] = v
        elif k == "version":
            doc["dpbench"]["version"] = v
        else:
            sec, key = k.split(".")
            r["config"][sec][key] = v
    r["point"] = " ".join("%s=%s" % kv for kv in over.items() if "." in kv[0])
    r["epochs"] = [dict(r["epochs"][0], epoch=i + 1, seconds=t / 1e3) for i, t in enumerate(ms)]
    doc["runs"].append(r)
json.dump(doc, open(sys.argv[2], "w"))
PY
}
# ten epochs each; B's times are A's scaled (0.8: faster, 1.25: slower) or
# A's in another order (same: a spread of 1%, inside the 3% noise threshold):
# the verdict follows from the numbers. One run a side: the unit is the
# epochs, and the text says the verdict covers noise within one run only
A='[10.0, 10.04, 9.97, 10.01, 10.03, 9.99, 10.06, 9.98, 10.02, 10.0]'
craft a.json "[({}, $A)]"
craft fast.json "[({'loader.num_workers': 2}, [0.8 * t for t in $A])]"
craft slow.json "[({}, [1.25 * t for t in $A])]"
craft same.json "[({}, list(reversed($A)))]"
for want in fast:faster slow:slower same:same; do
    f=${want%%:*} v=${want#*:}
    if "$BIN" compare "$TMP/a.json" "$TMP/$f.json" --format json >"$TMP/cmp.json" 2>"$TMP/err" &&
        python3 - "$TMP/cmp.json" "$v" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
p, = d["pairs"]
want = {"faster": 0.8, "slower": 1.25, "same": 1.0}[sys.argv[2]]
assert p["verdict"] == sys.argv[2] and p["unit"] == "epochs of one run", p
assert p["verdict_text"] == sys.argv[2] + " within run noise; not interleaved", p
assert abs(p["ratio"] - want) < 1e-9 and p["ci95"][0] <= p["ratio"] <= p["ci95"][1], p
assert set(p) >= {"a", "b", "ratio", "ci95", "verdict"} and d["unmatched"] == {"a": [], "b": []}
PY
    then ok; else bad "compare $f: want $v: $(cat "$TMP/cmp.json" "$TMP/err")"; fi
done
# one point each: compared whatever their settings, the differing ones listed
if "$BIN" compare "$TMP/a.json" "$TMP/fast.json" >"$TMP/cmp.txt" 2>"$TMP/err" &&
    grep -q '^(base) .* faster within run noise; not interleaved$' "$TMP/cmp.txt" &&
    grep -q 'settings differ: loader.num_workers: 0 vs 2' "$TMP/cmp.txt"; then ok
else bad "compare text: $(cat "$TMP/cmp.txt" "$TMP/err")"; fi
# several points: paired by workload and settings (B in another order), a
# point of another workload listed as unmatched, never compared
craft multi-a.json "[({'loader.num_workers': 0}, $A), ({'loader.num_workers': 2}, $A)]"
craft multi-b.json "[({'loader.num_workers': 2}, [1.25 * t for t in $A]), ({'dataset.length': 200}, $A), ({'loader.num_workers': 0}, [0.8 * t for t in $A])]"
if "$BIN" compare "$TMP/multi-a.json" "$TMP/multi-b.json" --format json >"$TMP/cmp.json" 2>"$TMP/err" &&
    python3 - "$TMP/cmp.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
got = [(p["a"]["run"], p["b"]["run"], p["verdict"]) for p in d["pairs"]]
assert got == [(0, 2, "faster"), (1, 0, "slower")], got
u, = d["unmatched"]["b"]
assert u["run"] == 1 and "different workload (dataset.length: 200 vs 100)" in u["why"], u
PY
then ok; else bad "compare several points: $(cat "$TMP/cmp.json" "$TMP/err")"; fi
# the same B with each config section's keys in reverse order and its whole
# numbers written as floats (30.0, 0 as -0.0): the same workloads and settings, paired alike
python3 - "$TMP/multi-b.json" "$TMP/multi-b2.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for run in d["runs"]:
    c = run["config"]
    for sec, v in list(c.items()):
        if isinstance(v, dict):
            c[sec] = {k: (float(x) or -0.0) if type(x) is int else x for k, x in reversed(list(v.items()))}
    run["config"] = dict(reversed(list(c.items())))
json.dump(d, open(sys.argv[2], "w"))
PY
if "$BIN" compare "$TMP/multi-a.json" "$TMP/multi-b2.json" --format json >"$TMP/cmp2.json" 2>"$TMP/err" &&
    python3 -c 'import json,sys; a, b = (open(f).read().replace("multi-b2", "multi-b") for f in sys.argv[1:]); assert a == b, (a, b)' \
        "$TMP/cmp.json" "$TMP/cmp2.json"
then ok; else bad "compare with keys reordered, numbers as floats: $(cat "$TMP/cmp2.json" "$TMP/err")"; fi
# a label with control bytes (a hand-edited or hostile file): printed without them
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); d["runs"][0]["point"]="x\u001b[31my"; json.dump(d, open(sys.argv[2], "w"))' \
    "$TMP/a.json" "$TMP/esc.json"
if "$BIN" compare "$TMP/a.json" "$TMP/esc.json" >"$TMP/cmp.txt" 2>"$TMP/err" && ! grep -q $'\e' "$TMP/cmp.txt" &&
    grep -qF 'x?[31my' "$TMP/cmp.txt"; then ok
else bad "compare printed a label's control bytes: $(cat -v "$TMP/cmp.txt" "$TMP/err")"; fi
rm "$TMP/esc.json"
# a label with quotes and commas stays one CSV field (quotes doubled)
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); d["runs"][0]["point"]="my \"v2\", x"; json.dump(d, open(sys.argv[2], "w"))' \
    "$TMP/a.json" "$TMP/quote.json"
if "$BIN" compare "$TMP/a.json" "$TMP/quote.json" --format csv >"$TMP/cmp.csv" 2>"$TMP/err" &&
    python3 -c 'import csv,sys; h, r = csv.reader(open(sys.argv[1])); assert len(r) == len(h) == 12 and r[1] == "my \"v2\", x", r' "$TMP/cmp.csv"
then ok; else bad "compare csv of a quoted label: $(cat "$TMP/cmp.csv" "$TMP/err")"; fi
rm "$TMP/quote.json"
# different workloads only: listed, nothing compared, exit 2
craft other.json "[({'dataset.length': 200}, $A)]"
"$BIN" compare "$TMP/a.json" "$TMP/other.json" >"$TMP/cmp.txt" 2>"$TMP/err"
rc=$?
if [ $rc -eq 2 ] && grep -q "unmatched in A: (base): different workload (dataset.length: 100 vs 200)" "$TMP/cmp.txt" &&
    grep -q "nothing compared" "$TMP/err"; then ok
else bad "compare different workloads: exit $rc: $(cat "$TMP/cmp.txt" "$TMP/err")"; fi
# a PyTorch reference result (torch_reference.py's schema): the backend
# torch-cpu is the cpu, so no setting differs
craft torch.json "[({'backend': 'torch-cpu', 'version': 'torch-1.13.1'}, [1.25 * t for t in $A])]"
if "$BIN" compare "$TMP/a.json" "$TMP/torch.json" >"$TMP/cmp.txt" 2>"$TMP/err" &&
    grep -q '^# B: torch-1.13.1' "$TMP/cmp.txt" && grep -q 'slower within run noise; not interleaved$' "$TMP/cmp.txt" &&
    ! grep -q 'settings differ' "$TMP/cmp.txt"; then ok
else bad "compare with a PyTorch result: $(cat "$TMP/cmp.txt" "$TMP/err")"; fi
# unusable input: exit 2 and one line that says why (a /proc file, whose size reads 0, is read to its end)
echo '{"runs": []}' >"$TMP/empty.json"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); del d["runs"][0]["epochs"][1]["seconds"]; json.dump(d, open(sys.argv[2], "w"))' \
    "$TMP/a.json" "$TMP/noseconds.json"
cat "$TMP/a.json" "$TMP/a.json" >"$TMP/twice.json" # two results appended: not read as the first
{ cat "$TMP/a.json"; printf '\0\0'; } >"$TMP/nul.json"
: >"$TMP/zero.json"
head -c 300 "$TMP/a.json" >"$TMP/cut.json"
# a key twice in one object: cJSON keeps the first, Python's json the last
sed '0,/"median_seconds":/s//"median_seconds": 1e9, "median_seconds":/' "$TMP/a.json" >"$TMP/dup.json"
for c in "configs/tutorial.yaml:not valid JSON" "$TMP/empty.json:not a dpbench result" \
         "$TMP/twice.json:more after the JSON document" "$TMP/zero.json:an empty file" \
         "$TMP/nul.json:more after the JSON document" \
         "/proc/self/status:1: not valid JSON" \
         "$TMP/cut.json:$(wc -l <"$TMP/cut.json" | awk '{print $1 + 1}'): not valid JSON" \
         "$TMP/nowhere.json:cannot read" "$TMP/noseconds.json:epoch 2: not a time dpbench measured" \
         "$TMP/dup.json:the key runs[0].summary.median_seconds is given twice in one object"; do
    "$BIN" compare "$TMP/a.json" "${c%%:*}" >/dev/null 2>"$TMP/err"
    rc=$?
    if [ $rc -eq 2 ] && grep -qF -- "${c#*:}" "$TMP/err" && [ "$(wc -l <"$TMP/err")" -eq 1 ]; then ok
    else bad "compare with ${c%%:*}: exit $rc: $(cat "$TMP/err")"; fi
done
# ... but two keys that differ only in control bytes (printed as '?') are two keys
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); d["runs"][0].update({"x\x01": 1, "x\x02": 2}); json.dump(d, open(sys.argv[2], "w"))' \
    "$TMP/a.json" "$TMP/ctl.json"
if "$BIN" compare "$TMP/a.json" "$TMP/ctl.json" >/dev/null 2>"$TMP/err"; then ok
else bad "compare with keys x\\u0001 and x\\u0002: $(cat "$TMP/err")"; fi
# ... and in a config, where they read as one key once printed: the first is the
# point's, both ways round (pairing agrees with the listed differences)
for v in 1 5; do
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); d["runs"][0]["config"]["dataset"].update({"k\x01": 1, "k\x02": int(sys.argv[3])}); json.dump(d, open(sys.argv[2], "w"))' \
        "$TMP/a.json" "$TMP/ctl$v.json" $v
done
if "$BIN" compare "$TMP/ctl1.json" "$TMP/ctl5.json" >"$TMP/cmp.txt" 2>"$TMP/err" &&
    "$BIN" compare "$TMP/ctl5.json" "$TMP/ctl1.json" >>"$TMP/cmp.txt" 2>>"$TMP/err" && ! grep -q "unmatched" "$TMP/cmp.txt"
then ok; else bad "compare with config keys k\\u0001 and k\\u0002: $(cat "$TMP/cmp.txt" "$TMP/err")"; fi
# ... and deeper, in an object a config value holds (no file of dpbench's has one):
# the same answer both ways round (not paired one way and not the other), the
# difference named, never "the same result"
for v in 1 5; do
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); d["runs"][0]["config"]["dataset"]["extra"] = {"k\x01": 1, "k\x02": int(sys.argv[3])}; json.dump(d, open(sys.argv[2], "w"))' \
        "$TMP/a.json" "$TMP/deep$v.json" $v
done
"$BIN" compare "$TMP/deep1.json" "$TMP/deep5.json" >"$TMP/cmp.txt" 2>"$TMP/err"
r1=$?
"$BIN" compare "$TMP/deep5.json" "$TMP/deep1.json" >"$TMP/cmp2.txt" 2>"$TMP/err2"
r2=$?
if [ $r1 -eq 2 ] && [ $r2 -eq 2 ] && grep -q "A's first point: different workload (dataset.extra.k?: 1 vs 5)" "$TMP/err" &&
    grep -q "A's first point: different workload (dataset.extra.k?: 5 vs 1)" "$TMP/err2" &&
    ! grep -q "the same result" "$TMP/cmp.txt" "$TMP/cmp2.txt"; then ok
else bad "compare with nested keys k\\u0001 and k\\u0002: exits $r1 $r2: $(cat "$TMP/cmp.txt" "$TMP/err" "$TMP/cmp2.txt" "$TMP/err2")"; fi
rm -f "$TMP/ctl1.json" "$TMP/ctl5.json" "$TMP/deep1.json" "$TMP/deep5.json"
rm "$TMP/ctl.json" "$TMP/noseconds.json" "$TMP/twice.json" "$TMP/zero.json" "$TMP/cut.json" "$TMP/nul.json" "$TMP/dup.json" # not results: kept out of the schema check below
# every class of malformed compare input: exit 2, one line naming the file and
# what is wrong, before anything is compared (and never a verdict on it)
mkfifo "$TMP/fifo"
bad_doc() { # NAME PYTHON-EDIT-OF-d
    python3 -c "import json,sys; d=json.load(open(sys.argv[1])); $2; json.dump(d, open(sys.argv[2], 'w'))" \
        "$TMP/a.json" "$TMP/$1"
}
bad_doc noschema.json 'del d["schema_version"]'
bad_doc strschema.json 'd["schema_version"] = "1"'
bad_doc newschema.json 'd["schema_version"] = 3'
bad_doc huge.json 'd["runs"][0]["epochs"][0]["seconds"] = 1e308'
bad_doc tiny.json 'd["runs"][0]["epochs"][0]["seconds"] = 5e-324'
bad_doc nanround.json 'd["runs"][0]["rounds"] = [{"round": 0, "median_ms": -1}]'
bad_doc noruns.json 'd["runs"] = []'
bad_doc manyruns.json 'd["runs"] = d["runs"][:1] * 4097'
# a field of another type than dpbench writes is refused, never read as absent
# (rounds "x" made compare fall back to one run's epochs: another verdict)
bad_doc t-rounds.json 'd["runs"][0]["rounds"] = "x"'
bad_doc t-round.json 'd["runs"][0]["rounds"] = [{"round": "x", "median_ms": 1}]'
bad_doc t-interrupted.json 'd["interrupted"] = "yes"'
bad_doc t-warnings.json 'd["warnings"] = "str"'
bad_doc t-machine.json 'd["machine"] = "x"'
bad_doc t-load.json 'd["runs"][0]["load"] = {"others_cpu": 5.0}'
bad_doc t-same.json 'd["runs"] = [d["runs"][0], dict(d["runs"][0], same_as=0.5)]'
bad_doc t-chain.json 'd["runs"] = [d["runs"][0], dict(d["runs"][0], same_as=0), dict(d["runs"][0], same_as=1)]'
bad_doc t-span.json 'd["runs"][0]["rounds"] = [{"round": 0, "median_ms": 1, "load": {"seconds": "40"}}]'
bad_doc t-point.json 'd["runs"][0]["point"] = 7'
for c in "$TMP/noschema.json:no \"schema_version\"" "$TMP/strschema.json:is a string" \
         "$TMP/newschema.json:schema_version 3: this dpbench reads versions 1 and 2" \
         "$TMP/huge.json:epoch 1: not a time dpbench measured" \
         "$TMP/tiny.json:epoch 1: not a time dpbench measured" \
         "$TMP/nanround.json:round 1: not a time dpbench measured" \
         "$TMP/noruns.json:no \"runs\" with at least one run" \
         "$TMP/manyruns.json:4097 runs, more than a dpbench result holds (4096)" \
         "$TMP/t-rounds.json:runs[0].rounds: expected an array" \
         "$TMP/t-round.json:runs[0].rounds[0].round: expected a number" \
         "$TMP/t-interrupted.json:interrupted: expected true or false" \
         "$TMP/t-warnings.json:warnings: expected an array" "$TMP/t-machine.json:machine: expected an object" \
         "$TMP/t-load.json:runs[0].load.others_cpu: expected a share from 0 to 1" \
         "$TMP/t-same.json:runs[1].same_as 0.5 is not an earlier run" \
         "$TMP/t-chain.json:runs[2].same_as 1 is not an earlier run that was measured itself" \
         "$TMP/t-span.json:runs[0].rounds[0].load.seconds: expected a number" \
         "$TMP/t-point.json:runs[0].point: expected a string" \
         "$TMP/fifo:not a regular file" "/dev/urandom:not a regular file" "$TMP:not a regular file"; do
    timeout 10 "$BIN" compare "$TMP/a.json" "${c%%:*}" >"$TMP/cmp.out" 2>"$TMP/err"
    rc=$?
    if [ $rc -eq 2 ] && grep -qF -- "${c#*:}" "$TMP/err" && grep -qF -- "${c%%:*}" "$TMP/err" &&
        [ ! -s "$TMP/cmp.out" ] && [ "$(wc -l <"$TMP/err")" -eq 1 ]; then ok
    else bad "compare with ${c%%:*}: exit $rc: $(cat "$TMP/err")"; fi
done
rm -f "$TMP/fifo" "$TMP"/noschema.json "$TMP"/strschema.json "$TMP"/newschema.json \
    "$TMP"/huge.json "$TMP"/nanround.json "$TMP"/noruns.json "$TMP"/manyruns.json "$TMP"/t-*.json
# a gzip'd result (bench_results keeps large ones so) is read as the result;
# a cut one is refused, named so; a one-line file's error names the column
gzip -c "$TMP/a.json" >"$TMP/a.json.gz"
head -c 300 "$TMP/a.json.gz" >"$TMP/cut.json.gz"
printf '{"schema_version": 2, "runs": [}' >"$TMP/line.json"
"$BIN" compare "$TMP/a.json" "$TMP/a.json.gz" >"$TMP/cmp.txt" 2>&1
r1=$?
"$BIN" compare "$TMP/a.json" "$TMP/cut.json.gz" >/dev/null 2>"$TMP/err"
r2=$?
"$BIN" compare "$TMP/a.json" "$TMP/line.json" >/dev/null 2>"$TMP/err2"
r3=$?
if [ $r1 -eq 0 ] && grep -q "^# warning: A and B are the same result" "$TMP/cmp.txt" &&
    [ $r2 -eq 2 ] && grep -q "cut.json.gz: truncated gzip data" "$TMP/err" &&
    [ $r3 -eq 2 ] && grep -q "line.json:1: not valid JSON at column 32" "$TMP/err2"; then ok
else bad "compare of gzip'd and one-line files: exits $r1 $r2 $r3: $(cat "$TMP/cmp.txt" "$TMP/err" "$TMP/err2")"; fi
rm -f "$TMP/a.json.gz" "$TMP/cut.json.gz" "$TMP/line.json"
# a point with no measured epoch is not compared, and says why
bad_doc noepochs.json 'd["runs"][0]["epochs"] = []; d["runs"][0]["failed"] = True'
"$BIN" compare "$TMP/a.json" "$TMP/noepochs.json" >"$TMP/cmp.txt" 2>"$TMP/err"
rc=$?
if [ $rc -eq 2 ] && grep -q "unmatched in B: (base): no measured epoch (the run failed" "$TMP/cmp.txt"; then ok
else bad "compare with no epochs: exit $rc: $(cat "$TMP/cmp.txt" "$TMP/err")"; fi
rm -f "$TMP/noepochs.json"
# ... as a run that failed writes it (its round measured nothing: median_ms null), and in
# compare -c where B fails: exit 1, never a report under A's config with B's run
"$BIN" -q --set train.lr=1000000 --set dataset.noise=1000000 --format json >"$TMP/failed.json" 2>/dev/null
"$BIN" compare "$TMP/a.json" "$TMP/failed.json" >"$TMP/cmp.txt" 2>"$TMP/err"
rc=$?
if [ $rc -eq 2 ] && grep -q "unmatched in B: (base): no measured epoch (the run failed" "$TMP/cmp.txt"; then ok
else bad "compare with a failed run's file: exit $rc: $(cat "$TMP/cmp.txt" "$TMP/err")"; fi
printf 'train: {lr: 1000000}\ndataset: {noise: 1000000}\n' >"$TMP/diverge.yaml"
"$BIN" compare -c configs/tutorial.yaml -c "$TMP/diverge.yaml" -q --repeat 3 >"$TMP/cmp.txt" 2>"$TMP/err"
rc=$?
if [ $rc -eq 1 ] && { grep -q "unmatched in B: .*no measured epoch (the run failed" "$TMP/cmp.txt" ||
     { grep -q "compare -c: only .*diverge.yaml ran" "$TMP/err" && grep -q "config: .*diverge.yaml.*" "$TMP/cmp.txt" &&
       grep -q "lr 1e+06" "$TMP/cmp.txt"; }; }; then ok
else bad "compare -c, B fails: exit $rc: $(cat "$TMP/cmp.txt" "$TMP/err")"; fi
rm -f "$TMP/failed.json" "$TMP/diverge.yaml"
# files with rounds: the unit is each file's rounds; a verdict under clearly
# different load is held back; another machine is named
# (each round measured for 5 s: 40 s a run, long enough to hold the drift between runs)
bad_doc rounds-a.json 'd["runs"][0]["rounds"] = [{"round": k, "median_ms": 10 + 0.01 * k, "load": {"seconds": 5}} for k in range(8)]; d["runs"][0]["load"] = dict(d["runs"][0]["load"] or {}, others_cpu=0.05)'
bad_doc rounds-b.json 'd["runs"][0]["rounds"] = [{"round": k, "median_ms": 12.5 + 0.01 * k, "load": {"seconds": 5}} for k in range(8)]; d["runs"][0]["load"] = dict(d["runs"][0]["load"] or {}, others_cpu=0.08)'
bad_doc rounds-busy.json 'd["runs"][0]["rounds"] = [{"round": k, "median_ms": 12.5 + 0.01 * k, "load": {"seconds": 5}} for k in range(8)]; d["runs"][0]["load"] = dict(d["runs"][0]["load"] or {}, others_cpu=0.60); d["machine"]["cpu"] = "Other CPU"'
if "$BIN" compare "$TMP/rounds-a.json" "$TMP/rounds-b.json" --format json >"$TMP/cmp.json" 2>"$TMP/err" &&
    python3 -c 'import json,sys; p, = json.load(open(sys.argv[1]))["pairs"]; assert p["unit"] == "rounds of separate runs" and p["verdict"] == "slower" and p["units"] == 8, p' "$TMP/cmp.json" &&
    "$BIN" compare "$TMP/rounds-a.json" "$TMP/rounds-busy.json" >"$TMP/cmp.txt" 2>"$TMP/err" &&
    grep -q "undecided: slower 1.25x, but they ran under clearly different load (other processes took 5% of the CPUs during A, 60% during B)" "$TMP/cmp.txt" &&
    grep -q "^# warning: A and B ran on different machines: " "$TMP/cmp.txt"; then ok
else bad "compare by rounds: $(cat "$TMP/cmp.json" "$TMP/cmp.txt" "$TMP/err")"; fi
# a result set against itself (the same file, or a copy) says it shows no noise; two runs do not
cp "$TMP/rounds-a.json" "$TMP/copy-a.json"
bad_doc warned.json 'd["warnings"] = ["warning %d" % k for k in range(12)]' # more than the notes hold
"$BIN" compare "$TMP/warned.json" "$TMP/warned.json" >"$TMP/cmp.txt" 2>&1
if grep -q "^# warning: A and B are the same result: " "$TMP/cmp.txt" &&
    [ "$(grep -c "^# warning: A and B warn: warning" "$TMP/cmp.txt")" -ge 10 ]; then ok
else bad "compare of a result with many warnings with itself: $(cat "$TMP/cmp.txt")"; fi
# more warnings than the notes hold: the notes about both files first, then
# how many were left out (never dropped without a word)
bad_doc warned-b.json 'd["warnings"] = ["b %d" % k for k in range(4)]; d["machine"]["cpu"] = "Other CPU"'
"$BIN" compare "$TMP/warned.json" "$TMP/warned-b.json" >"$TMP/cmp.txt" 2>&1
if grep -m1 "^# warning: " "$TMP/cmp.txt" | grep -q "^# warning: A and B ran on different machines: " &&
    grep -q "^# warning: 2 more warnings left out here" "$TMP/cmp.txt" &&
    [ "$(grep -c "^# warning: " "$TMP/cmp.txt")" = 16 ]; then ok
else bad "compare with more warnings than it keeps: $(cat "$TMP/cmp.txt")"; fi
rm -f "$TMP/warned.json" "$TMP/warned-b.json"
if "$BIN" compare "$TMP/rounds-a.json" "$TMP/rounds-a.json" >"$TMP/cmp.txt" 2>&1 &&
    grep -q "^# warning: A and B are the same result: " "$TMP/cmp.txt" &&
    "$BIN" compare "$TMP/rounds-a.json" "$TMP/copy-a.json" >"$TMP/cmp.txt" 2>&1 &&
    grep -q "^# warning: A and B are the same result: " "$TMP/cmp.txt" &&
    "$BIN" compare "$TMP/rounds-a.json" "$TMP/rounds-b.json" >"$TMP/cmp.txt" 2>&1 &&
    ! grep -q "same result" "$TMP/cmp.txt"; then ok
else bad "compare of a result with itself: $(cat "$TMP/cmp.txt")"; fi
rm -f "$TMP/copy-a.json"
# a verdict that cannot reach stdout fails compare (a CI gate reading it must not pass)
for fmt in text json; do
    "$BIN" compare "$TMP/rounds-a.json" "$TMP/rounds-b.json" --format $fmt >/dev/full 2>"$TMP/err"
    rc=$?
    if [ $rc -eq 1 ] && grep -q "cannot write to stdout: No space left on device" "$TMP/err"; then ok
    else bad "compare --format $fmt >/dev/full: exit $rc: $(cat "$TMP/err")"; fi
done
# runs too short to hold the drift between them: held back, compare -c advised
bad_doc short-a.json 'd["runs"][0]["rounds"] = [{"round": k, "median_ms": 10, "load": {"seconds": 0.5}} for k in range(8)]'
bad_doc short-b.json 'd["runs"][0]["rounds"] = [{"round": k, "median_ms": 12.5, "load": {"seconds": 0.5}} for k in range(8)]'
"$BIN" compare "$TMP/short-a.json" "$TMP/short-b.json" >"$TMP/cmp.txt" 2>&1
if grep -q "undecided: slower 1.25x, but the runs measured for 4 s and 4 s, too short" "$TMP/cmp.txt" &&
    grep -q "dpbench compare -c A.yaml -c B.yaml" "$TMP/cmp.txt"; then ok
else bad "compare of short runs: $(cat "$TMP/cmp.txt")"; fi
# ... and so do Markdown (the text's lines under the table) and CSV (held_back)
"$BIN" compare "$TMP/short-a.json" "$TMP/short-b.json" --format markdown >"$TMP/cmp.md" 2>&1
"$BIN" compare "$TMP/short-a.json" "$TMP/short-b.json" --format csv >"$TMP/cmp.csv" 2>&1
if grep -q "^- (base): undecided: slower 1.25x, but the runs measured for 4 s" "$TMP/cmp.md" &&
    python3 -c 'import csv,sys; r=list(csv.DictReader(open(sys.argv[1]))); assert len(r) == 1 and r[0]["verdict"] == "undecided" and r[0]["held_back"].startswith("slower 1.25x, but the runs measured"), r' "$TMP/cmp.csv"
then ok; else bad "held back in Markdown and CSV: $(cat "$TMP/cmp.md" "$TMP/cmp.csv")"; fi
rm -f "$TMP"/short-*.json
# --fail-on: its own exit status when B is slower beyond the margin
"$BIN" compare "$TMP/rounds-a.json" "$TMP/rounds-b.json" --fail-on slower=5% >/dev/null 2>"$TMP/err"
r1=$?
"$BIN" compare "$TMP/rounds-a.json" "$TMP/rounds-b.json" --fail-on slower=30% >/dev/null 2>&1
r2=$?
"$BIN" compare "$TMP/rounds-a.json" "$TMP/rounds-b.json" --fail-on faster >/dev/null 2>&1
r3=$?
"$BIN" compare "$TMP/rounds-a.json" "$TMP/rounds-b.json" --fail-on slower=0.05 >/dev/null 2>&1
r4=$?
if [ $r1 -eq 3 ] && grep -q "slower than A beyond --fail-on slower=5%" "$TMP/err" && [ $r2 -eq 0 ] &&
    [ $r3 -eq 2 ] && [ $r4 -eq 3 ]; then ok
else bad "compare --fail-on: exits $r1 $r2 $r3 $r4: $(cat "$TMP/err")"; fi
# ... but not on a pair decided on one run's epochs, which identical runs often
# are (two plain runs: one round each): exit 0, stderr says why; compare -c says
# when it holds, and takes --fail-on once
bad_doc epochs-b.json '[x.update(seconds=1.5 * x["seconds"]) for x in d["runs"][0]["epochs"]]'
"$BIN" compare "$TMP/a.json" "$TMP/epochs-b.json" --fail-on slower >"$TMP/cmp.txt" 2>"$TMP/err"
r1=$?
"$BIN" compare -c configs/tutorial.yaml -c configs/tutorial.yaml --fail-on slower --fail-on slower=9% \
    >/dev/null 2>"$TMP/err2"
r2=$?
if [ $r1 -eq 0 ] && grep -q "slower within run noise" "$TMP/cmp.txt" &&
    grep -q "does not gate 1 of 1 pair, decided on one run's epochs alone" "$TMP/err" &&
    [ $r2 -eq 2 ] && grep -q "compare: --fail-on given twice" "$TMP/err2"; then ok
else bad "compare --fail-on on one run's epochs: exits $r1 $r2: $(cat "$TMP/cmp.txt" "$TMP/err" "$TMP/err2")"; fi
rm -f "$TMP/epochs-b.json"
# compare -c: a gate that holds says so; a B that failed before any epoch is A's
# reason for being unmatched (not the workloads, which compare -c never matches on)
sed 's/^\(  *noise:.*\)/\1\n  sample_cost_us: 300/' configs/tutorial.yaml >"$TMP/slow.yaml"
sed 's/^\(  *lr:\).*/\1 1000000/' configs/tutorial.yaml >"$TMP/boom.yaml"
"$BIN" compare -c configs/tutorial.yaml -c "$TMP/slow.yaml" --repeat 8 --fail-on slower >/dev/null 2>"$TMP/err"
r1=$?
"$BIN" compare -c configs/tutorial.yaml -c "$TMP/boom.yaml" --repeat 3 >"$TMP/cmp.txt" 2>/dev/null
if [ $r1 -eq 3 ] && grep -q "B is slower than A beyond --fail-on slower" "$TMP/err" &&
    grep -q "unmatched in A: configs/tutorial.yaml: its partner there has no measured epoch" "$TMP/cmp.txt"
then ok; else bad "compare -c --fail-on and a failed B: exit $r1: $(cat "$TMP/err" "$TMP/cmp.txt")"; fi
rm -f "$TMP/slow.yaml" "$TMP/boom.yaml"
# a bare 5 is not 500% (a gate that never fires): a share is 0 to 50%, as --threshold
for m in slower=5 slower=0.6 slower=-1% slower=; do
    "$BIN" compare "$TMP/rounds-a.json" "$TMP/rounds-b.json" --fail-on $m >/dev/null 2>"$TMP/err"
    rc=$?
    if [ $rc -eq 2 ] && grep -q "share from 0 to 50%.*found '$m'" "$TMP/err"; then ok
    else bad "compare --fail-on $m: exit $rc: $(cat "$TMP/err")"; fi
done
rm -f "$TMP"/rounds-*.json
# two configs run interleaved in one command, differing in two knobs
printf 'dataset:\n  sample_cost_us: 200\ntrain:\n  epochs: 4\n' >"$TMP/A.yaml"
printf 'dataset:\n  sample_cost_us: 200\nloader:\n  num_workers: 2\n  prefetch_factor: 4\ntrain:\n  epochs: 4\n' >"$TMP/B.yaml"
if "$BIN" compare -c "$TMP/A.yaml" -c "$TMP/B.yaml" -q --repeat 6 --format json --out "$TMP/cc" >"$TMP/cmp.json" 2>"$TMP/err" &&
    python3 - "$TMP/cmp.json" "$TMP/cc" <<'PY'
import glob, json, sys
d = json.load(open(sys.argv[1]))
p, = d["pairs"]
assert d["interleaved"] and p["unit"] == "interleaved rounds" and p["units"] == 6, p
assert sorted(p["settings_differ"]) == ["loader.num_workers: 0 vs 2", "loader.prefetch_factor: 2 vs 4"], p
r, = glob.glob(sys.argv[2] + "/*.json")  # the run itself, both points, in --out
runs = json.load(open(r))["runs"]
assert [len(x["rounds"]) for x in runs] == [6, 6] and len(json.load(open(r))["rounds"]["order"]) == 6
PY
then ok; else bad "compare -c: $(cat "$TMP/cmp.json" "$TMP/err")"; fi
# a stop during compare -c: exit 130, and the verdicts say they stand on fewer rounds
"$BIN" compare -c "$TMP/A.yaml" -c "$TMP/B.yaml" -q --repeat 100 --format json >"$TMP/cmp.json" 2>"$TMP/err" &
pid=$!
wait_busy "$TMP/B.yaml" 1 100 # a second of cpu: rounds have run, however loaded
kill -INT $pid
wait $pid
rc=$?
if [ $rc -eq 130 ] && python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert any("the run was cut short" in w for w in d["warnings"]), d["warnings"]' "$TMP/cmp.json"
then ok; else bad "compare -c stopped: exit $rc: $(head -c 600 "$TMP/cmp.json"; cat "$TMP/err")"; fi
# its text names the method the paired verdict uses
"$BIN" compare -c $T -c $T -q --repeat 6 >"$TMP/cmp.txt" 2>"$TMP/err"
if grep -q "^# unit: interleaved rounds: .* the Hodges-Lehmann estimate of the per-round ratios, the Wilcoxon signed-rank interval$" "$TMP/cmp.txt"
then ok; else bad "compare -c text: the unit's method: $(cat "$TMP/cmp.txt" "$TMP/err")"; fi
for c in "-c $TMP/A.yaml:takes two configs" "-c $TMP/A.yaml -c $TMP/B.yaml -c $TMP/A.yaml:a third" \
         "-c $TMP/A.yaml -c $TMP/B.yaml --tune:a command of its own" \
         "-c $TMP/A.yaml -c configs/sync-vs-async.yaml:has a sweep" \
         "-c $TMP/A.yaml -c $TMP/B.yaml --no-sweep --sweep seed=1,2:with these flags has a sweep; compare -c compares two single configs (drop --sweep" \
         "-c $TMP/A.yaml -c $TMP/B.yaml --set loader.num_workers=-1:loader.num_workers"; do
    "$BIN" compare ${c%%:*} >/dev/null 2>"$TMP/err"
    rc=$?
    if [ $rc -eq 2 ] && grep -qF -- "${c#*:}" "$TMP/err"; then ok
    else bad "compare ${c%%:*}: exit $rc: $(cat "$TMP/err")"; fi
done
"$BIN" compare "$TMP/a.json" >/dev/null 2>"$TMP/err"
rc=$?
if [ $rc -eq 2 ] && grep -q "expected two result files" "$TMP/err"; then ok
else bad "compare with one file: exit $rc: $(cat "$TMP/err")"; fi

# ---- honest sweeps: a point whose effective settings are an earlier one's is not run again
if "$BIN" -c $T --sweep loader.num_workers=0,1 --sweep loader.prefetch_factor=2,4 \
    --sweep loader.pin_memory=false,true --format json >"$TMP/same.json" 2>"$TMP/err" &&
    python3 - "$TMP/same.json" <<'PY'
import json, sys
runs = json.load(open(sys.argv[1]))["runs"]
# points: workers x prefetch x pin (innermost); at 0 workers prefetch acts not,
# on the cpu pin_memory acts not
same = [r.get("same_as") for r in runs]
assert same == [None, 0, 0, 0, None, 4, None, 6], same
for r in runs:
    if "same_as" in r:
        assert not {"epochs", "stats", "summary"} & set(r), list(r)
        assert r["config"]["loader"]["num_workers"] in (0, 1)
    else:
        assert len(r["epochs"]) == 10 * len(r["rounds"]) and "stats" in r
PY
then ok; else bad "same_as in a sweep: $(cat "$TMP/err")"; fi
# a point not run again says what its run resolved from the data (the loss
# "auto" picks), so the base config needs no config_differs, and compare
# pairs it (run 2: 0 workers, prefetch 4, no pinning) with the same point
# measured in another file
"$BIN" -c $T --sweep loader.num_workers=0 --sweep loader.prefetch_factor=4 --format json \
    >"$TMP/pf4.json" 2>"$TMP/err"
if python3 - "$TMP/same.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert "config_differs" not in d and d["config"]["model"]["loss"] == "mse", d.get("config_differs")
for r in d["runs"]:
    m = d["runs"][r.get("same_as", d["runs"].index(r))]
    assert r["config"]["model"] == m["config"]["model"], (r["point"], r["config"]["model"])
PY
then ok; else bad "same_as points' resolved config: $(cat "$TMP/err")"; fi
if "$BIN" compare "$TMP/same.json" "$TMP/pf4.json" --format json >"$TMP/cmp-same.json" 2>"$TMP/err" &&
    python3 -c 'import json,sys; p, = json.load(open(sys.argv[1]))["pairs"]; assert p["a"]["run"] == 2 and p["b"]["run"] == 0, p' "$TMP/cmp-same.json"
then ok; else bad "compare pairs a same_as point: $(cat "$TMP/err")"; fi
"$BIN" -c $T --sweep loader.num_workers=0,1 --sweep loader.prefetch_factor=2,4 >"$TMP/same.txt" 2>"$TMP/err"
if grep -q "^loader.num_workers=0 loader.prefetch_factor=4  *= point 0 " "$TMP/same.txt" &&
    [ "$(grep -c "= point" "$TMP/same.txt")" -eq 1 ]; then ok
else bad "= point K in the table: $(cat "$TMP/same.txt" "$TMP/err")"; fi
# a compare through a same_as point reads its measurement: the same epochs, verdict same
python3 - "$TMP/same.json" "$TMP/same-b.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["runs"] = [d["runs"][1]]  # same_as 0: refers to a run not in the file
json.dump(d, open(sys.argv[2], "w"))
PY
"$BIN" compare "$TMP/same.json" "$TMP/same-b.json" >/dev/null 2>"$TMP/err"
rc=$?
if [ $rc -eq 2 ] && grep -q "same_as 0 is not an earlier run" "$TMP/err"; then ok
else bad "compare with a dangling same_as: exit $rc: $(cat "$TMP/err")"; fi

# ---- --no-sweep: the config's sweep is ignored; --sweep flags still apply
printf 'sweep:\n  parallel.replicas: [1, 2, 3]\ntrain:\n  epochs: 3\n' >"$TMP/sweep.yaml"
n1=$("$BIN" -c "$TMP/sweep.yaml" --no-sweep --format json 2>/dev/null | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["runs"]))')
n2=$("$BIN" -c "$TMP/sweep.yaml" --no-sweep --sweep loader.shuffle=true,false --format json 2>/dev/null | python3 -c 'import json,sys; d=json.load(sys.stdin); print(len(d["runs"]), d["config"].get("sweep"))')
n3=$("$BIN" -c "$TMP/sweep.yaml" --format json 2>/dev/null | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["runs"]))')
if [ "$n1" = 1 ] && [ "$n2" = "2 {'loader.shuffle': ['true', 'false']}" ] && [ "$n3" = 3 ]; then ok
else bad "--no-sweep: runs $n1, $n2, without it $n3"; fi

# ---- progress lines when stderr is not a terminal (here a file): round,
# point, epoch, elapsed, remaining; at most one a second; --quiet silences them
SLOW=(-c $T --set dataset.sample_cost_us=1500 --sweep parallel.replicas=1,2 --repeat 2)  # ~0.15 s an epoch, 44 epochs
"$BIN" "${SLOW[@]}" >"$TMP/slow.out" 2>"$TMP/slow.err"
if python3 - "$TMP/slow.err" <<'PY'
import re, sys
lines = open(sys.argv[1]).read().splitlines()
prog = [l for l in lines if l.startswith("progress:")]
pat = re.compile(r"progress: round ([12])/2, point ([12])/2, epoch (\d+)/11, batch \d+/4, "
                 r"elapsed ([\d.]+) s, remaining (?:~([\d.]+) s|unknown)$")
got = [pat.match(l) for l in prog]
assert len(prog) >= 2 and all(got), prog
assert all(m.group(5) for m in got[1:]), prog  # unknown only before a batch has run
t = [float(m.group(4)) for m in got]
# one line a second at most: the printed elapsed times (0.1 s steps) are >= 0.9 s apart
assert all(b - a >= 0.9 for a, b in zip(t, t[1:])), t
assert {m.group(1) for m in got} == {"1", "2"} and {m.group(2) for m in got} == {"1", "2"}, prog
PY
then ok; else bad "progress lines: $(cat "$TMP/slow.err")"; fi
# ... the pace is measured from the first batch, not from the start: the
# setup (data made, BLAS timed: seconds here) counted as the first batch's
# time once estimated 61 hours for a 30 s run. 80 epochs: seconds of training
# after the setup even on a fast machine (20 took 1 s on a quiet one here, and
# a log's second line, the first with an estimate, comes a second after the first)
t0=$(date +%s%N)
"$BIN" -c configs/large.yaml --set train.epochs=80 --format json >/dev/null 2>"$TMP/pace.err"
if python3 - "$TMP/pace.err" "$((($(date +%s%N) - t0) / 1000000))" <<'PY'
import re, sys
lines = [l for l in open(sys.argv[1]).read().splitlines() if l.startswith("progress:")]
total = float(sys.argv[2]) / 1e3  # seconds
est = [(float(a), float(b)) for a, b in
       (re.search(r"elapsed ([\d.]+) s, remaining ~([\d.]+) s", l).groups() for l in lines
        if "remaining ~" in l)]
# an estimate may be off by the pace's noise, not by orders of magnitude
assert est and all(e + r < 5 * total + 5 for e, r in est), (total, lines)
PY
then ok; else bad "progress pace: $(cat "$TMP/pace.err")"; fi
# ---- interleaved rounds: each round runs every point once, in an order
# shuffled per round from the seed; each run says where it stood in each
"$BIN" -c $T --set dataset.sample_cost_us=50 --sweep parallel.replicas=1,2,3 --repeat 8 --format json >"$TMP/rounds.json" 2>"$TMP/err"
if python3 - "$TMP/rounds.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
order = d["rounds"]["order"]
assert d["repeat"] == 8 and d["rounds"]["count"] == 8 and d["rounds"]["end"] == "fixed", d["rounds"]
assert len(order) == 8 and all(sorted(row) == [0, 1, 2] for row in order), order
assert len({tuple(row) for row in order}) > 1, order  # shuffled, not one fixed order
# the first block (6 rounds: a Williams design for 3 points): every point twice in each
# position, and right after each other point twice
assert all(sorted(row[k] for row in order[:6]) == [0, 0, 1, 1, 2, 2] for k in range(3)), order
after = [(row[k - 1], row[k]) for row in order[:6] for k in (1, 2)]
assert all(after.count((p, q)) == 2 for p in range(3) for q in range(3) if p != q), order
for i, run in enumerate(d["runs"]):
    assert [(x["round"], x["position"]) for x in run["rounds"]] == \
        [(k, row.index(i)) for k, row in enumerate(order)], (i, run["rounds"])
    assert sum(x["epochs"] for x in run["rounds"]) == len(run["epochs"]) == 80
    assert run["load"]["seconds"] > 0.1 and 0 <= run["load"]["steal"] <= 1, run["load"]
    assert 0 <= run["load"]["others_cpu"] <= 1, run["load"]
assert d["command_line"].endswith("--repeat 8 --format json"), d["command_line"]
PY
then ok; else bad "interleaved rounds: $(cat "$TMP/err")"; fi
"$BIN" "${SLOW[@]}" --quiet >/dev/null 2>"$TMP/quiet.err"
if [ ! -s "$TMP/quiet.err" ]; then ok; else bad "--quiet: $(cat "$TMP/quiet.err")"; fi

# ---- --out: NAME-STAMP.json, .csv and -summary.csv; the summary has one row
# per point, a column per swept key and per statistic, the JSON's numbers
"$BIN" -c $T --sweep loader.num_workers=0,1 --sweep loader.prefetch_factor=2,4 --out "$TMP/res" \
    >/dev/null 2>"$TMP/err"
if python3 - "$TMP/res" <<'PY'
import csv, glob, json, sys
j, = glob.glob(sys.argv[1] + "/tutorial-*[0-9].json")
s, = glob.glob(sys.argv[1] + "/tutorial-*-summary.csv")
assert s == j[:-5] + "-summary.csv" and len(glob.glob(sys.argv[1] + "/*")) == 3
d = json.load(open(j))
rows = list(csv.reader(open(s)))
assert rows[0] == ["run", "point", "same_as", "loader.num_workers", "loader.prefetch_factor",
                   "epochs", "mean_ms", "stddev_ms", "median_ms", "min_ms", "max_ms", "p90_ms",
                   "p99_ms", "ci95_low_ms", "ci95_high_ms", "samples_per_second",
                   "final_loss"], rows[0]
assert [r[2:5] for r in rows[1:]] == [["", "0", "2"], ["0", "0", "4"], ["", "1", "2"], ["", "1", "4"]], rows
for r, run in zip(rows[1:], d["runs"]):
    st = d["runs"][run.get("same_as", int(r[0]))]["stats"]["epoch_ms"]
    got = dict(zip(rows[0], r))
    for k in ("mean", "stddev", "median", "min", "max", "p90", "p99"):
        assert abs(float(got[k + "_ms"]) - st[k]) <= 1e-8 * st[k], (k, got, st)
    assert abs(float(got["ci95_high_ms"]) - st["ci95"][1]) <= 1e-8 * st["ci95"][1]
PY
then ok; else bad "summary CSV: $(cat "$TMP/err"; ls "$TMP/res")"; fi

# ---- a missing dataset names the command that writes it, and that command works
"$BIN" -c $T --set dataset.kind=cifar10 --set dataset.path="$TMP/cifar" >/dev/null 2>"$TMP/err"
rc=$?
cmd=$(grep -o '`dpbench --make-dataset [^`]*`' "$TMP/err" | tr -d '`')
if [ $rc -eq 2 ] && [ "$cmd" = "dpbench --make-dataset cifar10 $TMP/cifar" ] &&
    "$BIN" ${cmd#dpbench } --per-class 2 >/dev/null 2>&1 &&
    "$BIN" -c $T --set dataset.kind=cifar10 --set dataset.path="$TMP/cifar" --set train.epochs=1 >/dev/null 2>&1
then ok; else bad "missing dataset: exit $rc, '$cmd': $(cat "$TMP/err")"; fi
"$BIN" -c $T --set dataset.kind=idx --set dataset.path="$TMP/mn/train-images-idx3-ubyte.gz" >/dev/null 2>"$TMP/err"
if grep -qF "\`dpbench --make-dataset idx $TMP/mn --gzip\` writes one" "$TMP/err"; then ok
else bad "missing idx dataset: $(cat "$TMP/err")"; fi

# ---- every result file this test wrote follows docs/result.schema.json, which
# describes every field they hold
if python3 scripts/validate_result.py --described --skip-other $(find "$TMP" -name '*.json') >"$TMP/v.out" 2>"$TMP/err" &&
    grep -q "[1-9][0-9]* result files checked, 0 invalid" "$TMP/err"; then ok
else bad "schema: $(cat "$TMP/v.out" "$TMP/err")"; fi
# ... and the check can fail: a stats block with a key too many, a run without epochs
python3 - "$TMP/rep.json" "$TMP/bad1.json" "$TMP/bad2.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["runs"][0]["stats"]["epoch_ms"]["iqr"] = 1.0
json.dump(d, open(sys.argv[2], "w"))
d = json.load(open(sys.argv[1]))
del d["runs"][0]["epochs"]
json.dump(d, open(sys.argv[3], "w"))
PY
for f in bad1 bad2; do
    if ! python3 scripts/validate_result.py "$TMP/$f.json" >/dev/null 2>&1; then ok
    else bad "the schema accepts $f"; fi
done
# ... and a field the schema does not describe fails --described (valid without it)
python3 - "$TMP/rep.json" "$TMP/bad3.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["runs"][0]["summary"]["iqr_ms"] = 1.0
json.dump(d, open(sys.argv[2], "w"))
PY
if python3 scripts/validate_result.py "$TMP/bad3.json" >/dev/null 2>&1 &&
    ! python3 scripts/validate_result.py --described "$TMP/bad3.json" >"$TMP/v.out" 2>&1 &&
    grep -q "/runs/0/summary/iqr_ms: not in the schema" "$TMP/v.out"; then ok
else bad "--described accepts an undescribed field: $(cat "$TMP/v.out")"; fi

echo "results: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
