#!/usr/bin/env bash
# dpbench --tune end to end on small real pipelines (the tutorial's workload
# with a per-sample loading cost, or a wide Linear that makes the step
# dominate). Asserts what the search must do from what it measured, not
# speeds: on a loaded 2-core machine a worker may or may not make an epoch
# faster, but an input-bound start must try one, a compute-bound start must
# not, a kept move must have measured faster, and the tuned config must load,
# carry the chosen settings and run near the reported time (wide margin).
# Prints "N passed, N failed".
set -u
BIN=$(realpath "${1:-./dpbench}")
cd "$(dirname "$0")/.."
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
. tests/lib.sh

json() { # json 'python expression over d' FILE
    python3 -c "import json,sys; d=json.load(open(sys.argv[1])); t=d.get('tune'); sys.exit(0 if ($1) else 1)" "$2"
}
check() { # check 'python expression' FILE what
    if json "$1" "$2"; then ok; else bad "$3"; fi
}
# A machine too noisy to tell trials apart (both cores busy, as in make
# test-fresh's two suites side by side) must get that statement, not a guess
# (docs/tune.md); the checks of a search that did not happen are then skipped.
skipped=0
noisy() { # noisy FILE CHECKS: 0 (and CHECKS counted skipped) when tune said so
    json "'too noisy to decide' in (t.get('statement') or '') and t['best'] is None" "$1" || return 1
    skipped=$((skipped + $2))
    echo "note: $1: too noisy to decide here; $2 checks of the search skipped" >&2
}

# ---- input-bound: loading (100 us a sample) against the tutorial's tiny step
IN=(-c configs/tutorial.yaml --set dataset.length=600 --set dataset.sample_cost_us=100
    --set tune.max_workers=2 --set tune.budget_s=60 --set train.epochs=24)
if "$BIN" --tune "${IN[@]}" --out "$TMP/in" --format json >"$TMP/in.json" 2>"$TMP/in.err"; then ok
else bad "input-bound --tune exit $?: $(head -c 400 "$TMP/in.err")"; fi
check "t['trials'][0]['bound'] == 'input'" "$TMP/in.json" "input-bound start not classified input"
if ! noisy "$TMP/in.json" 9; then
check "t['trials'][1]['settings']['num_workers'] == 1" "$TMP/in.json" "input-bound start: first move is not one worker"
# a kept move measured faster, a dropped one did not; the best is the last kept
python3 - "$TMP/in.json" <<'EOF' && ok || bad "a decision contradicts its own ratio"
import json, re, sys
for tr in json.load(open(sys.argv[1]))["tune"]["trials"][1:]:
    m = re.search(r"; ([0-9.]+)x trial [0-9]+'s time \[([0-9.]+), ([0-9.]+)\]", tr["decision"])
    ratio, hi = float(m.group(1)), float(m.group(3))
    # the decision prints ratios to 2 decimals: 0.996 reads "1.00", so <= 1 and >= 1
    if tr["decision"].startswith("kept"):
        assert ratio <= 1 and hi <= 1, tr  # faster: the interval of the ratio excludes 1
    elif tr["decision"].startswith("explored"):
        assert ratio <= 1 and "same within noise" in tr["decision"], tr
    elif "slower" in tr["decision"]:
        assert ratio >= 1, tr
EOF
# the best is the config as given, or a trial the test calls faster than it
check "t['best'] == t['trials'][t['best_trial']]['settings'] and (t['best_trial'] == 0 or t['gain'][0] > 1)" \
    "$TMP/in.json" "best is neither the start nor confirmed faster than it"
check "t['best_trial'] == 0 or t['trials'][t['best_trial']]['stats']['epoch_ms']['median'] < t['trials'][0]['stats']['epoch_ms']['median']" \
    "$TMP/in.json" "best's median is not under the start's"
check "not any(tr['settings']['pin_memory'] or tr['settings']['async_copy'] for tr in t['trials'])" \
    "$TMP/in.json" "pin_memory/async_copy tried on the cpu, where they do nothing"
check "len(d['runs']) == len(t['trials']) and all(len(r['epochs']) == tr['stats']['epochs'] for r, tr in zip(d['runs'], t['trials']))" \
    "$TMP/in.json" "runs do not hold every trial's epochs"
check "t['gain'][0] <= t['gain_ratio'] <= t['gain'][1] and t['seconds'] > 0" "$TMP/in.json" "gain interval"

# the tuned config: loads as is, carries the choice and the workload, runs near the time
Y=$(ls "$TMP"/in/tutorial-tuned.yaml 2>/dev/null)
if [ -n "$Y" ] && "$BIN" -c "$Y" --format json >"$TMP/re.json" 2>"$TMP/re.err"; then ok
else bad "tuned yaml does not run: $(head -c 400 "$TMP/re.err" 2>/dev/null)"; fi
python3 - "$TMP/in.json" "$TMP/re.json" <<'EOF' && ok || bad "tuned yaml differs from the choice or the workload, or runs far from its time"
import json, sys
t = json.load(open(sys.argv[1]))["tune"]
re = json.load(open(sys.argv[2]))
c = re["config"]
assert all(c["loader"][k] == v for k, v in t["best"].items() if t["best"]["num_workers"] or k in
           ("num_workers", "pin_memory", "async_copy", "copy_depth")), (c["loader"], t["best"])
assert c["dataset"]["length"] == 600 and c["dataset"]["sample_cost_us"] == 100
assert c["loader"]["batch_size"] == 30 and c["train"]["lr"] == 0.01
# reproduces: a factor 2.5 either way covers a loaded machine's drift between the runs
med = 1e3 * re["runs"][0]["summary"]["median_seconds"]
assert t["best_epoch_ms"] / 2.5 < med < 2.5 * t["best_epoch_ms"], (med, t["best_epoch_ms"])
EOF
fi

# ---- compute-bound: the step dominates; no worker is ever tried
CB=(-c configs/tutorial.yaml --set dataset.length=1000 --set dataset.features=512
    --set model.out_features=512 --set tune.budget_s=60)
if "$BIN" --tune "${CB[@]}" >"$TMP/cb.txt" 2>"$TMP/cb.err"; then ok; else bad "compute-bound --tune exit $?"; fi
if grep -q "compute-bound" "$TMP/cb.txt" || grep -q "too noisy to decide" "$TMP/cb.txt"; then ok
else bad "compute-bound: no compute-bound line: $(cat "$TMP/cb.txt")"; fi
if ! grep -qE "^ +[0-9]+  num_workers=[1-9]" "$TMP/cb.txt"; then ok
else bad "compute-bound: a worker was tried: $(cat "$TMP/cb.txt")"; fi

# ---- too short to measure: the tutorial's 100 rows; the sweep is not run
"$BIN" --tune -c configs/tutorial.yaml --sweep loader.batch_size=10,30 --format json \
    >"$TMP/short.json" 2>"$TMP/short.err" && ok || bad "too short: exit $?"
check "t['best'] is None and 'too short to measure' in t['statement']" "$TMP/short.json" "too short: no statement"
if grep -q "sweep is not run" "$TMP/short.err"; then ok; else bad "--tune with a sweep: no note"; fi
"$BIN" --tune -c configs/tutorial.yaml >"$TMP/short.txt" 2>/dev/null
if grep -q "^# no recommendation: too short to measure" "$TMP/short.txt"; then ok; else bad "too short: text"; fi

# ---- a target no setting reaches: input-bound, one worker at most
"$BIN" --tune -c configs/tutorial.yaml --set dataset.length=600 --set dataset.sample_cost_us=300 \
    --set tune.target_au=0.95 --set tune.max_workers=1 --set tune.budget_s=60 --set train.epochs=24 --format json \
    >"$TMP/au.json" 2>"$TMP/au.err" && ok || bad "target_au: exit $?"
if ! noisy "$TMP/au.json" 2; then
check "t['goal'] == 'target_au' and t['best'] is None and 'no setting tried reaches AU 0.95' in t['statement'] and '-bound' in t['statement']" \
    "$TMP/au.json" "target_au: no statement of what bounds it"
check "sorted(tr['settings']['num_workers'] for tr in t['trials']) == [0, 1]" "$TMP/au.json" "target_au: workers 0 and 1 not both tried"
fi
# progress in a log (stderr not a terminal): trial lines, numbered as the table, no nan
if grep -q "^progress: tune trial 0 (num_workers=0)" "$TMP/au.err" && ! grep -qi "nan" "$TMP/au.err"; then ok
else bad "tune progress lines: $(grep progress "$TMP/au.err" | head -3)"; fi

# ---- tune.knobs narrows: prefetch alone acts only with workers, so nothing to try
"$BIN" --tune -c configs/tutorial.yaml --set dataset.length=600 --set dataset.sample_cost_us=100 \
    --set tune.knobs=prefetch_factor --set tune.budget_s=60 --set train.epochs=24 --format json >"$TMP/k.json" 2>/dev/null
check "len(t['trials']) == 1 and (t.get('best_trial') == 0 or 'too noisy' in t['statement'])" "$TMP/k.json" "tune.knobs=prefetch_factor at 0 workers tried something"

# ---- bad input: exit 2, one line naming the key
"$BIN" --tune -c configs/tutorial.yaml --set tune.knobs=workers >/dev/null 2>"$TMP/bad.err"
rc=$?
if [ $rc -eq 2 ] && grep -q "tune.knobs: unknown knob 'workers'" "$TMP/bad.err" && [ "$(wc -l <"$TMP/bad.err")" -eq 1 ]; then ok
else bad "bad tune.knobs: exit $rc, $(cat "$TMP/bad.err")"; fi
"$BIN" --tune -c configs/tutorial.yaml --set tune.target_au=1.5 >/dev/null 2>"$TMP/bad.err"
if [ $? -eq 2 ] && grep -q "tune.target_au" "$TMP/bad.err"; then ok; else bad "tune.target_au 1.5 accepted"; fi

echo "tune: $pass passed, $fail failed, $skipped skipped"
[ "$fail" -eq 0 ]
