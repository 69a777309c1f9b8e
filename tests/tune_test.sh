#!/usr/bin/env bash
# dpbench --tune end to end on small real pipelines (the tutorial's workload
# with a per-sample loading cost). Asserts what the search must do whatever
# the machine's load, not speeds: on a loaded 2-core machine workers may or
# may not make an epoch faster, so the checks hold for every outcome. Every
# number it prints is one of the result's (the table, the decisions and the
# recommendation quote the same paired per-round figures); a recommended
# change is faster than the config as given beyond the noise threshold; the
# runs hold every trial's epochs; the tuned config loads and runs; a stop
# leaves what was measured and says why there is no recommendation; the
# flags --tune cannot honour are refused. Prints "tune: N passed, N failed".
. "$(dirname "$0")/lib.sh"
test_init "$@"

check() { # check 'python expression over d (the result) and t (d["tune"])' FILE what
    if python3 -c "import json,sys; d=json.load(open(sys.argv[1])); t=d['tune']; sys.exit(0 if ($1) else 1)" "$2"
    then ok; else bad "$3: $(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); t=d['tune']
print({k: t.get(k) for k in ('outcome', 'best_trial', 'best_epoch_ms', 'statement')},
      [(x['rounds'], x['median_ms']) for x in t['trials']],
      [r['summary']['median_seconds'] for r in d['runs']])" "$2" 2>&1 | head -c 1500)"; fi
}

# ---- input-bound: loading (100 us a sample) against the tutorial's tiny step
IN=(-c configs/tutorial.yaml --set dataset.length=600 --set dataset.sample_cost_us=100
    --set tune.max_workers=2 --set tune.budget_s=60 --set train.epochs=8)
if "$BIN" --tune "${IN[@]}" --out "$TMP/in" --format json >"$TMP/in.json" 2>"$TMP/in.err"; then ok
else bad "input-bound --tune exit $?: $(head -c 400 "$TMP/in.err")"; fi
check "t['trials'][0]['settings']['num_workers'] == 0 and t['trials'][0]['rounds'] > 0" \
    "$TMP/in.json" "trial 0 is not the config as given"
check "t['trials'][0]['vs_given'] == {'ratio': 1, 'ci95': [1, 1], 'verdict': 'same', 'rounds': t['trials'][0]['rounds'], 'rounds_needed': None}" \
    "$TMP/in.json" "trial 0 against itself is not 1, as the table has it"
check "len(d['runs']) == len(t['trials']) and all(len(r['epochs']) == tr['stats']['epochs'] > 0 for r, tr in zip(d['runs'], t['trials']))" \
    "$TMP/in.json" "runs do not hold every trial's epochs"
check "all(tr['predicted_ms'] > 0 and tr['rounds'] >= 0 for tr in t['trials']) and len(t['predicted']) == 1 + 2 * 5 * 2" \
    "$TMP/in.json" "a trial without its prediction, or not every setting predicted"
check "all(r['rounds'] and len(r['rounds']) == tr['rounds'] for r, tr in zip(d['runs'], t['trials']) if tr['rounds'])" \
    "$TMP/in.json" "a trial's rounds differ from its run's"
# the decisions quote the table's numbers: each raced trial's ratio is its vs_given
python3 - "$TMP/in.json" <<'EOF' && ok || bad "a decision quotes another number than the table"
import json, re, sys
t = json.load(open(sys.argv[1]))["tune"]
for tr in t["trials"][1:]:
    m = re.search(r"after \d+ rounds: ([0-9.]+)x the config as given's time \[([0-9.]+), ([0-9.]+)\]",
                  tr["decision"])
    if m:
        v = tr["vs_given"]
        assert [float(x) for x in m.groups()] == [round(v["ratio"], 2)] + [round(x, 2) for x in v["ci95"]], tr
EOF
# a change is faster beyond the threshold; keeping the config says why; intervals never negative
check "(t['outcome'] == 'change') == (t['best_trial'] > 0) and (t['outcome'] != 'change' or t['gain'][0] > 1 / 0.97)" \
    "$TMP/in.json" "a change not measured faster than the config as given"
check "t['outcome'] == 'change' or (t['outcome'].startswith('keep') and t['statement'])" \
    "$TMP/in.json" "keeping the config as given without saying why"
check "0 < t['rerun_ms'][0] < t['best_epoch_ms'] < t['rerun_ms'][1] and t['best_epoch_ci95'][0] > 0" \
    "$TMP/in.json" "the rerun range or the interval is not around the epoch, or negative"
# (one number: the JSON's ms and 1e3 x its seconds differ in the last bit at most)
check "t['best_epoch_ms'] == t['trials'][t['best_trial']]['median_ms'] and abs(t['best_epoch_ms'] / (1e3 * d['runs'][t['best_trial']]['summary']['median_seconds']) - 1) < 1e-14" \
    "$TMP/in.json" "the recommendation's epoch is not the table's"
check "not any(tr['settings']['pin_memory'] or tr['settings']['async_copy'] for tr in t['trials'] + t['predicted'])" \
    "$TMP/in.json" "pin_memory/async_copy tried on the cpu, where they do nothing"
if python3 scripts/validate_result.py --described "$TMP/in.json" "$TMP"/in/*.json >"$TMP/v.out" 2>&1; then ok
else bad "schema: $(head -5 "$TMP/v.out")"; fi

# the tuned config: loads as is, carries the choice and the workload
Y=$TMP/in/tutorial-tuned.yaml
if [ -f "$Y" ] && "$BIN" -q -c "$Y" --format json >"$TMP/re.json" 2>"$TMP/re.err"; then ok
else bad "tuned yaml does not run: $(head -c 400 "$TMP/re.err" 2>/dev/null)"; fi
python3 - "$TMP/in.json" "$TMP/re.json" <<'EOF' && ok || bad "tuned yaml differs from the choice or the workload"
import json, sys
t = json.load(open(sys.argv[1]))["tune"]
c = json.load(open(sys.argv[2]))["config"]
assert all(c["loader"][k] == v for k, v in t["best"].items() if t["best"]["num_workers"] or k in
           ("num_workers", "pin_memory", "async_copy", "copy_depth")), (c["loader"], t["best"])
assert c["dataset"]["length"] == 600 and c["dataset"]["sample_cost_us"] == 100
assert c["loader"]["batch_size"] == 30 and c["train"]["lr"] == 0.01
# only the keys given and the loader's: model.loss auto, as the run resolved it, is not one
assert "loss" not in open(sys.argv[1].replace(".json", "/tutorial-tuned.yaml")).read()
# the BLAS choice the trial ran with, not one the rerun measured afresh
run, re = json.load(open(sys.argv[1]))["runs"][t["best_trial"]], json.load(open(sys.argv[2]))["runs"][0]
assert (re["blas_library"], re["blas_threads"]) == (run["blas_library"], run["blas_threads"]), (run, re)
EOF

# the text: the same result through the text renderer
"$BIN" --tune "${IN[@]}" --set tune.max_workers=1 >"$TMP/in.txt" 2>"$TMP/in2.err"
if grep -q "^trial  settings" "$TMP/in.txt" && grep -qE "^# (recommendation|no recommendation)" "$TMP/in.txt" &&
   grep -q "PyTorch: DataLoader(" "$TMP/in.txt" && ! grep -q -- "-[0-9.]* ms" "$TMP/in.txt"; then ok
else bad "text: $(cat "$TMP/in.txt")"; fi
if grep -qE "^progress: tune trial [0-9]+ \(num_workers=[0-9]+" "$TMP/in2.err" && ! grep -qi "nan" "$TMP/in2.err"; then ok
else bad "tune progress lines: $(grep progress "$TMP/in2.err" | head -3)"; fi

# ---- too short to measure: the tutorial's 100 rows; the config's sweep block
# is not run (a --sweep flag is refused, below)
{ cat configs/tutorial.yaml; printf 'sweep:\n  loader.batch_size: [10, 30]\n'; } >"$TMP/swept.yaml"
"$BIN" --tune -c "$TMP/swept.yaml" --format json \
    >"$TMP/short.json" 2>"$TMP/short.err" && ok || bad "too short: exit $?"
check "t['outcome'] == 'too_short' and t['best'] is None and len(t['trials']) == 1 and 'too short to measure' in t['statement']" \
    "$TMP/short.json" "too short: no statement"
if grep -q "sweep is not run" "$TMP/short.err"; then ok; else bad "--tune with a sweep: no note"; fi
"$BIN" --tune -c configs/tutorial.yaml >"$TMP/short.txt" 2>/dev/null
if grep -q "^# no recommendation: too short to measure" "$TMP/short.txt"; then ok; else bad "too short: text"; fi

# ---- a target no setting reaches: input-bound, one worker at most
"$BIN" --tune -c configs/tutorial.yaml --set dataset.length=600 --set dataset.sample_cost_us=300 \
    --set tune.target_au=0.95 --set tune.max_workers=1 --set tune.budget_s=60 --format json \
    >"$TMP/au.json" 2>/dev/null && ok || bad "target_au: exit $?"
check "t['goal'] == 'target_au' and t['outcome'] == 'no_target' and t['best'] is None and 'no setting tried reaches AU 0.95' in t['statement'] and '-bound' in t['statement']" \
    "$TMP/au.json" "target_au: no statement of what bounds it"
check "set(tr['settings']['num_workers'] for tr in t['trials']) == {0, 1}" "$TMP/au.json" \
    "target_au: workers 0 and 1 not both tried"

# ---- a stop in the race: what was measured, no 0-epoch row, why no recommendation
# (epochs of about a second on one thread: the search outlasts the wait, however loaded; the
# stop lands in the profile's second run or in the race, and either has no recommendation)
mkdir -p "$TMP/stopout" && echo "# an earlier run's" >"$TMP/stopout/tutorial-tuned.yaml"
"$BIN" --tune -c configs/tutorial.yaml --set dataset.length=600 --set dataset.sample_cost_us=2000 \
    --set tune.max_workers=2 --format json --out "$TMP/stopout" >"$TMP/stop.json" 2>"$TMP/stop.err" &
pid=$!
for _ in $(seq 1200); do grep -q "tune trial [1-9]" "$TMP/stop.err" && break; sleep 0.1; done
sleep 2
kill -INT "$pid"; kill -INT "$pid" # one request sent twice, as timeout(1) sends it
wait "$pid"
rc=$?
if [ "$rc" -eq 130 ]; then ok; else bad "interrupted --tune: exit $rc: $(tail -3 "$TMP/stop.err")"; fi
check "t['outcome'] == 'stopped' and t['best'] is None and 'interrupted' in t['statement'] and all(len(r['epochs']) > 0 for r in d['runs']) and d['interrupted']" \
    "$TMP/stop.json" "interrupted --tune"
# a stopped search recommends nothing, and takes back nothing: an earlier NAME-tuned.yaml stays
[ -e "$TMP/stopout/tutorial-tuned.yaml" ] && ok || bad "interrupted --tune removed the earlier NAME-tuned.yaml"

# the rounds a decision quotes are the ones paired with the config as given's (its vs_given)
check "all(tr['decision'].startswith('profiled') or tr['decision'].startswith('left') or 'after %d round' % tr['vs_given']['rounds'] in tr['decision'] for tr in t['trials'][1:])" \
    "$TMP/stop.json" "interrupted --tune: a decision quotes other rounds than its pair"

# ---- no recommendation: an earlier run's NAME-tuned.yaml is removed (a script
# running DIR/NAME-tuned.yaml would run that earlier choice as this run's), and said
mkdir -p "$TMP/stale" && echo "# an earlier run's" >"$TMP/stale/tutorial-tuned.yaml"
"$BIN" --tune -c configs/tutorial.yaml --out "$TMP/stale" >"$TMP/stale.out" 2>"$TMP/stale.err"
rc=$?
if [ $rc -eq 0 ] && grep -q "no recommendation" "$TMP/stale.out" && [ ! -e "$TMP/stale/tutorial-tuned.yaml" ] &&
   grep -q "tutorial-tuned.yaml, an earlier run's, removed" "$TMP/stale.err"
then ok; else bad "no recommendation over an earlier NAME-tuned.yaml: exit $rc: $(ls "$TMP/stale"; cat "$TMP/stale.err")"; fi
# ... and where there was none, no line says one was written (or removed)
mkdir -p "$TMP/fresh"
"$BIN" --tune -c configs/tutorial.yaml --out "$TMP/fresh" >/dev/null 2>"$TMP/fresh.err"
if [ $? -eq 0 ] && ! grep -q "tuned.yaml" "$TMP/fresh.err" && [ ! -e "$TMP/fresh/tutorial-tuned.yaml" ]; then ok
else bad "no recommendation, no earlier NAME-tuned.yaml: $(cat "$TMP/fresh.err")"; fi

# a stop as a trial's run finishes (each trial's phases are named, as a run's are)
DPBENCH_TEST_SIGNAL_AT="finishing the run" "$BIN" --tune -c configs/tutorial.yaml \
    --set dataset.length=600 --set dataset.sample_cost_us=100 --set tune.budget_s=10 \
    --format json >"$TMP/fin.json" 2>"$TMP/fin.err"
rc=$?
if [ $rc -eq 130 ]; then ok; else bad "--tune stopped as a trial finishes: exit $rc: $(tail -3 "$TMP/fin.err")"; fi
check "t['outcome'] == 'stopped' and d['interrupted'] and all(len(r['epochs']) > 0 for r in d['runs'])" \
    "$TMP/fin.json" "--tune stopped as a trial finishes"

# a stop while the dataset is generated: said, 130, like a run without --tune
DPBENCH_TEST_SIGNAL_AT="generating the dataset" "$BIN" --tune -c configs/tutorial.yaml \
    --set dataset.length=600 >/dev/null 2>"$TMP/gen.err"
rc=$?
if [ $rc -eq 130 ] && grep -q "interrupted by SIGINT" "$TMP/gen.err"; then ok
else bad "--tune stopped while generating: exit $rc: $(cat "$TMP/gen.err")"; fi

# ---- a short race (the budget ends it after a round or two): numbers or "-", never nan;
# the tuned config keeps to --out whatever the name (as the result files: / as _) and
# replaces an earlier one (or a link); a folder in its place is refused before the
# search (exit 2, nothing written); one made there during the search: the result
# files go too (exit 1, nothing left)
SHORT=(--tune -c configs/tutorial.yaml --set dataset.length=600 --set dataset.sample_cost_us=100
       --set train.epochs=2 --set tune.max_workers=0 --set tune.budget_s=2 --set name=../esc)
mkdir -p "$TMP/o/out" "$TMP/o/dir/.._esc-tuned.yaml"
echo "stale: an earlier run's" >"$TMP/o/out/.._esc-tuned.yaml"
"$BIN" "${SHORT[@]}" --out "$TMP/o/out" >"$TMP/short2.txt" 2>"$TMP/short2.err"
rc=$?
if [ $rc -eq 0 ] && ! grep -qiw nan "$TMP/short2.txt" && grep -q "^# \(no \)\?recommendation" "$TMP/short2.txt"; then ok
else bad "a short race: exit $rc, nan or no recommendation line: $(cat "$TMP/short2.txt" "$TMP/short2.err")"; fi
if grep -q "dpbench --tune chose" "$TMP/o/out/.._esc-tuned.yaml" && [ "$(ls "$TMP/o" | tr '\n' ' ')" = "dir out " ] &&
   grep -q "tuned config written to $TMP/o/out/.._esc-tuned.yaml" "$TMP/short2.err"; then ok
else bad "tuned config outside --out or not replaced: $(ls -R "$TMP/o"; cat "$TMP/short2.err")"; fi
"$BIN" "${SHORT[@]}" --out "$TMP/o/dir" >/dev/null 2>"$TMP/short3.err"
rc=$?
if [ $rc -eq 2 ] && grep -q "esc-tuned.yaml is a folder" "$TMP/short3.err" &&
   [ "$(ls -A "$TMP/o/dir")" = ".._esc-tuned.yaml" ]; then ok
else bad "tuned config not replaceable: exit $rc, left $(ls -A "$TMP/o/dir"): $(cat "$TMP/short3.err")"; fi
# another user's file in a sticky folder (/tmp's mode), which rename cannot
# replace: refused before the search, not found after it (the results lost)
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
    mkdir -p "$TMP/o/sticky" && echo "x: 1" >"$TMP/o/sticky/.._esc-tuned.yaml" && chmod 1777 "$TMP/o/sticky"
    chmod o+x "$TMP" "$TMP/o" 2>/dev/null
    setpriv --reuid=65534 --regid=65534 --clear-groups "$BIN" "${SHORT[@]}" --out "$TMP/o/sticky" \
        >/dev/null 2>"$TMP/short5.err"
    rc=$?
    if [ $rc -eq 2 ] && grep -q "belongs to another user in a sticky folder" "$TMP/short5.err" &&
        [ "$(cat "$TMP/o/sticky/.._esc-tuned.yaml")" = "x: 1" ]; then ok
    else bad "another user's tuned config in a sticky folder: exit $rc: $(cat "$TMP/short5.err")"; fi
fi
# a link there, even to a folder, is replaced as rename replaces it
mkdir -p "$TMP/o/link" && ln -s ../dir "$TMP/o/link/.._esc-tuned.yaml"
"$BIN" "${SHORT[@]}" --out "$TMP/o/link" >/dev/null 2>"$TMP/short4.err"
rc=$?
if [ $rc -eq 0 ] && [ -f "$TMP/o/link/.._esc-tuned.yaml" ] && [ ! -L "$TMP/o/link/.._esc-tuned.yaml" ]; then ok
else bad "a link in the tuned config's place: exit $rc: $(cat "$TMP/short4.err")"; fi
# the folder made once the first progress line is out (1 s in; the first two epochs
# take 2.4 s of loading at 2 ms a sample, and the budget ends the search there)
rm -rf "$TMP/o/late" && mkdir -p "$TMP/o/late"
"$BIN" "${SHORT[@]}" --set dataset.sample_cost_us=2000 --out "$TMP/o/late" >/dev/null 2>"$TMP/late.err" &
pid=$!
for _ in $(seq 600); do grep -q "^progress:" "$TMP/late.err" && break; sleep 0.05; done
mkdir "$TMP/o/late/.._esc-tuned.yaml"
wait $pid
rc=$?
if [ $rc -eq 1 ] && grep -q "result files not written" "$TMP/late.err" &&
   [ "$(ls -A "$TMP/o/late")" = ".._esc-tuned.yaml" ]; then ok
else bad "tuned config not writable at the end: exit $rc, left $(ls -A "$TMP/o/late"): $(cat "$TMP/late.err")"; fi

# a budget the config as given's first epochs spend: the profile ends there, the config
# as given is kept, saying so, and its epoch is quoted as the profile's; in text and in
# Markdown (the text's trial table, the same recommendation as a list under it)
for fmt in text:'#   ' markdown:'- '; do
    "$BIN" --tune -q -c configs/tutorial.yaml --set dataset.length=600 --set dataset.sample_cost_us=1000 \
        --set train.epochs=2 --set tune.budget_s=1 --format "${fmt%%:*}" >"$TMP/spent.txt" 2>&1
    rc=$?
    if [ $rc -eq 0 ] && grep -q "recommendation: keep the config as given (tune.budget_s (1 s) ran out in the profile" "$TMP/spent.txt" &&
       grep -q "^${fmt#*:}epoch .* over 2 epochs of the profile" "$TMP/spent.txt" &&
       grep -qF -e "${fmt#*:}PyTorch: DataLoader(..., num_workers=0, pin_memory=False)" "$TMP/spent.txt" &&
       ! grep -q "num_workers=1" "$TMP/spent.txt" &&
       { [ "${fmt%%:*}" = text ] || grep -q "^| 0 | num_workers=0 | 0 | .* | the config as given |$" "$TMP/spent.txt"; }
    then ok; else bad "a budget spent in the profile (${fmt%%:*}): exit $rc: $(cat "$TMP/spent.txt")"; fi
done

# ---- a trial held open never trains longer than its config: past the config's
# epochs (warm-up included) it starts them over (the initial parameters, epoch
# 0's order), so its losses are the config's own run's, epoch for epoch; a
# learning rate that diverges only after the config's epochs (1.8 here, at
# about epoch 14) fails --tune no more than it fails the run. One that diverges
# within them (2: epoch 2) fails the trial: exit 1, the trial named, the epochs
# before kept and printed. Without warm-up epochs --tune still warms up one
# (the config's first epoch), measuring the config's later ones. One that
# diverges in the warm-up (1000) keeps trial 0's row, failed, as a plain run
# prints its report with no epoch (both exit 1).
DV=(-c configs/tutorial.yaml --set dataset.length=3000 --set dataset.sample_cost_us=5 --set tune.budget_s=5)
for v in "1.8" "2" "1 --set train.warmup_epochs=0 --set train.epochs=3" \
         "1 --set train.warmup_epochs=0 --set train.epochs=1" "1000"; do
    "$BIN" -q "${DV[@]}" --set train.lr=$v --format json >"$TMP/dv-plain.json" 2>/dev/null
    rp=$?
    "$BIN" -q --tune "${DV[@]}" --set train.lr=$v --format json >"$TMP/dv.json" 2>"$TMP/dv.err"
    rt=$?
    if [ $rt -eq $rp ] && python3 - "$TMP/dv-plain.json" "$TMP/dv.json" "$TMP/dv.err" $rt <<'PY'
import json, math, sys
plain, tune = (json.load(open(f)) for f in sys.argv[1:3])
err, rc = open(sys.argv[3]).read(), int(sys.argv[4])
want = [e["loss"] for e in plain["runs"][0]["epochs"]]
got = [e["loss"] for e in tune["runs"][0]["epochs"]]  # trial 0, the config as given
W0, E0 = plain["config"]["train"]["warmup_epochs"], plain["config"]["train"]["epochs"]
close = lambda a, b: abs(a - b) <= 1e-4 * max(abs(a), abs(b), 1e-6)  # BLAS choices may differ
assert got or not want, (got, want)  # lr 1000: both fail in the warm-up, before any epoch
for j, x in enumerate(got):  # its j-th measured epoch: the config's epoch (max(1, W0) + j) % cycle
    at = (max(1, W0) + j) % (W0 + E0)
    assert at < W0 or close(x, want[at - W0]), (j, got, want)
if rc == 0:
    assert len(got) > W0 + E0 and all(math.isfinite(x) for x in got), got
else:
    assert tune["tune"]["outcome"] == "stopped" and "--tune trial 0 (num_workers=0): the loss became" in err, err
    # the failed trial's run says so, as a plain run's does, and so does its decision
    run0, tr0 = tune["runs"][0], tune["tune"]["trials"][0]
    assert run0["failed"] and "the loss became" in run0["stopped"], run0.get("stopped")
    assert tr0["decision"].startswith("failed: the loss became"), tr0["decision"]
    assert got or (tr0["bound"] is None and tr0["median_ms"] is None), tr0  # its row stays
    assert tune["rounds"]["end"] in ("failed", "time budget", "decided", "undecidable", "round cap"), tune["rounds"]
PY
    then ok; else bad "--tune with train.lr $v: exit $rt (the run's: $rp): $(cat "$TMP/dv.err")"; fi
done

# compare pairs a --tune result with a plain run of its config as given: the trial's
# config is the one given (its epochs, not a round's), and tune.* is no setting
"$BIN" -q "${IN[@]}" --format json >"$TMP/plain.json" 2>/dev/null
if "$BIN" compare "$TMP/plain.json" "$TMP/in.json" --format json >"$TMP/cmpt.json" 2>"$TMP/cmpt.err" &&
   python3 -c "import json,sys; p=json.load(open(sys.argv[1]))['pairs']; sys.exit(0 if [x['b']['run'] for x in p] == [0] else 1)" "$TMP/cmpt.json"
then ok; else bad "compare a --tune result with its config as given: $(head -c 600 "$TMP/cmpt.json"; cat "$TMP/cmpt.err")"; fi

# ---- what --tune cannot honour is refused, naming the flag or the key
C=(-c configs/tutorial.yaml)
while IFS='|' read -r args frag; do
    read -r -a a <<<"$args"
    expect 2 "$frag" -- --tune "${C[@]}" "${a[@]}"
done <<'EOF'
--repeat 3|--tune cannot be combined with --repeat
--precision 2%|--tune cannot be combined with --precision
--budget 60|--tune cannot be combined with --budget
--h2d-bandwidth|--tune cannot be combined with --h2d-bandwidth
--export TMPDIR/x|--tune cannot be combined with --export
--allreduce-bandwidth|--tune cannot be combined with --allreduce-bandwidth
--sweep loader.num_workers=0,1|--tune cannot be combined with --sweep
--set parallel.mode=ddp|--tune: parallel.mode ddp is not tuned
--set tune.knobs=num_workers,,|tune.knobs: an empty name in 'num_workers,,'
--set tune.knobs=workers|tune.knobs: unknown knob 'workers'
--set tune.target_au=1.5|tune.target_au
EOF
[ -e "TMPDIR/x" ] && bad "--tune --export wrote its folder"
# tune.knobs is a key like any other: a bad name in a file is refused with its
# line, with or without --tune
printf 'name: knobs\ntune:\n  knobs: "num_workers, foo"\n' >"$TMP/knobs.yaml"
for t in --tune ""; do
    expect 2 "knobs.yaml:3: tune.knobs: unknown knob 'foo'" -- $t -c "$TMP/knobs.yaml"
done
# the config as given against itself is 1 in the JSON as in the table, with no round
# raced too (the tutorial's epoch is too short to tune: the profile only)
"$BIN" --tune -c configs/tutorial.yaml --format json >"$TMP/short.json" 2>/dev/null
check "t['outcome'] == 'too_short' and t['trials'][0]['rounds'] == 0 and t['trials'][0]['vs_given']['ratio'] == 1" \
    "$TMP/short.json" "trial 0 against itself is not 1 where nothing was raced"
# a knob named that acts at no setting in reach says so (the search runs on)
expect 0 "tune.knobs names pin_memory, which has no effect at any setting the search reaches: this backend copies no batch" -- \
    --tune -c configs/tutorial.yaml --set tune.knobs=pin_memory -q
expect 0 "tune.knobs names prefetch_factor, which has no effect at any setting the search reaches: there are no workers" -- \
    --tune -c configs/tutorial.yaml --set tune.knobs=prefetch_factor -q
expect 0 "# --tune" -- --tune -c configs/tutorial.yaml --set tune.knobs=num_workers,prefetch_factor -q
grep -q "no effect at any setting" "$TMP/err" && bad "a note for prefetch_factor with num_workers searched: $(cat "$TMP/err")"
expect 0 "# --tune" -- --tune -c configs/tutorial.yaml --set tune.knobs= -q # "": all knobs, no note
grep -q "no effect at any setting" "$TMP/err" && bad "a note for tune.knobs given empty (all): $(cat "$TMP/err")"

echo "tune: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
