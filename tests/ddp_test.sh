#!/usr/bin/env bash
# DDP over MPI on this machine (mpirun, ranks as processes): W ranks x batch B
# learn what one process learns with batch W*B and what DataParallel learns
# with W replicas; rank 0 alone prints; a rank whose config differs stops the
# job with one message naming it, as does a rank that fails alone; SIGINT to
# mpirun and a diverging loss keep rank 0's complete epochs; labelled data
# learns as one process does; bad ddp input exits 2; dp runs never map libmpi. Prints "N passed, N failed"; skips (0 failed) without mpirun or
# without MPI compiled in.
. "$(dirname "$0")/lib.sh"
test_init "$@"

if ! command -v mpirun >/dev/null || ! "$BIN" --version | grep -q '^comm:.*mpi'; then
    echo "skipped: no mpirun or dpbench built without MPI"
    echo "0 passed, 0 failed"
    exit 0
fi
# Open MPI refuses root unless told; oversubscribe: more ranks than cores here
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
MPIRUN=(mpirun --oversubscribe --mca btl self,vader -np)

# wait_job PID PATTERN: after a signal to the job, up to 30 s for every rank
# (processes matching PATTERN) to end: what dpbench promises; sets ms (how
# long they took), left (ranks still there) and rc (mpirun's status). Then up
# to 10 s for mpirun itself: Debian 12's Open MPI 4.1 may crash (exit 139) or
# hang in its own PMIx finalize after its ranks are gone. That is mpirun's,
# not dpbench's: the test says so and kills it, and checks the ranks, not
# mpirun's exit status or time.
rank_pids() {
    local p
    for p in $(pids_matching "$1"); do [ "$(readlink "/proc/$p/exe")" = "$BIN" ] && echo "$p"; done
    return 0
}
wait_job() {
    local pid=$1 pattern=$2 t0 i
    t0=$(date +%s%N)
    for i in $(seq 300); do
        left=$(rank_pids "$pattern")
        [ -z "$left" ] && break
        sleep 0.1
    done
    ms=$(( ($(date +%s%N) - t0) / 1000000 ))
    if ! timeout 10 tail --pid="$pid" -f /dev/null; then
        echo "note: mpirun still running 10 s after its ranks ended (Open MPI's finalize); killed" >&2
        kill -KILL "$pid" 2>/dev/null
    fi
    { wait "$pid"; } 2>/dev/null
    rc=$?
}

# ---- a rank bound to fewer cores than its threads (mpirun binds each rank to a
# core by default: 1 rank here may use 1 of the 2) is said once, with the way out
bound=$(timeout 60 "${MPIRUN[@]}" 1 sh -c 'sed -n "s/^Cpus_allowed_list:[[:space:]]*//p" /proc/self/status' 2>/dev/null)
if [ "$(nproc --all)" -ge 2 ] && [[ "$bound" =~ ^[0-9]+$ ]]; then # this mpirun binds a rank to one core
    timeout 60 "${MPIRUN[@]}" 1 "$BIN" -q -c configs/ddp.yaml --set loader.num_workers=2 \
        --set train.epochs=2 >/dev/null 2>"$TMP/bound.err"
    timeout 60 mpirun --bind-to none --oversubscribe --mca btl self,vader -np 1 "$BIN" -q \
        -c configs/ddp.yaml --set loader.num_workers=2 --set train.epochs=2 >/dev/null 2>"$TMP/free.err"
    if [ "$(grep -c "rank 0 may use 1 of the $(nproc --all) cores .* mpirun --bind-to none gives them all" "$TMP/bound.err")" = 1 ] &&
        ! grep -q "may use" "$TMP/free.err"; then ok
    else bad "a rank bound to one core: $(cat "$TMP/bound.err") / unbound: $(cat "$TMP/free.err")"; fi
fi

# ---- equivalence: W ranks x B == 1 process x W*B == dp W replicas x W*B, up
# to float32 rounding (tests/paramdist.py: the bound of tests/testutil.h's
# order_bound over the run's steps, batch and features)
for shuffle in true false; do
    for W in 2 3; do
        B=10
        C=(--config configs/tutorial.yaml --set dataset.length=$((W * B * 4)) --set train.epochs=5
           --set loader.shuffle=$shuffle --format json)
        "${MPIRUN[@]}" "$W" "$BIN" "${C[@]}" --set parallel.mode=ddp \
            --set loader.batch_size=$B >"$TMP/ddp.json" 2>"$TMP/err"
        "$BIN" "${C[@]}" --set loader.batch_size=$((W * B)) >"$TMP/one.json"
        "$BIN" "${C[@]}" --set loader.batch_size=$((W * B)) --set parallel.replicas=$W >"$TMP/dp.json"
        if python3 tests/paramdist.py "$TMP/ddp.json" "$TMP/one.json" >"$TMP/d1" 2>&1 &&
           python3 tests/paramdist.py "$TMP/ddp.json" "$TMP/dp.json" >"$TMP/d2" 2>&1; then ok; else
            bad "shuffle=$shuffle W=$W: ddp vs 1 process: $(cat "$TMP/d1"); vs dp: $(cat "$TMP/d2" 2>/dev/null) ($(head -c 300 "$TMP/err"))"; fi
    done
done

# ---- rank 0 alone prints: one header on stdout for 3 ranks
"${MPIRUN[@]}" 3 "$BIN" --config configs/tutorial.yaml --set parallel.mode=ddp >"$TMP/out" 2>"$TMP/err"
n=$(grep -c '^# dpbench' "$TMP/out")
if [ "$n" = 1 ]; then ok; else bad "3 ranks printed $n headers: $(head -c 300 "$TMP/err")"; fi

# ---- reports: JSON per rank, splits per rank, busbw; rank table; trace per rank
"${MPIRUN[@]}" 2 "$BIN" --config configs/ddp.yaml --format json >"$TMP/j" 2>"$TMP/err"
if python3 - "$TMP/j" <<'PY'; then ok; else bad "ddp JSON: $(head -c 300 "$TMP/err")"; fi
import json, sys
r = json.load(open(sys.argv[1]))["runs"][0]
assert r["world_size"] == 2, r["world_size"]
assert [x["rank"] for x in r["ranks"]] == [0, 1]
assert all(len(x["epochs"]) == 10 and "allreduce_seconds" in x["epochs"][0] for x in r["ranks"])
assert r["splits"] == [[15, 15], [15, 15], [15, 15], [5, 5]], r["splits"]
assert r["summary"]["busbw_gbps"] > 0
# the wait for the last rank: within the allreduce, and what is left of it
# (the sum over the calls of the fastest rank's time) is the same on every rank
for k in range(10):
    eps = [x["epochs"][k] for x in r["ranks"]]
    assert all(0 <= e["allreduce_wait_seconds"] <= e["allreduce_seconds"] for e in eps), eps
    engine = [e["allreduce_seconds"] - e["allreduce_wait_seconds"] for e in eps]
    assert max(engine) - min(engine) < 1e-9, engine
assert all(e["samples"] == 100 for e in r["epochs"])  # the job's samples
PY
"${MPIRUN[@]}" 2 "$BIN" --config configs/ddp.yaml --set report.trace=true --set train.epochs=1 \
    --set train.warmup_epochs=0 >"$TMP/out" 2>"$TMP/err"
printf '[rank 0]\tIn Model: input size [15, 5] output size [15, 2]\n[rank 0] Outside: input size [15, 5] output_size [15, 2]\n[rank 1]\tIn Model: input size [15, 5] output size [15, 2]\n' >"$TMP/want"
if grep -A2 -m1 '^\[rank 0\]' "$TMP/out" | cmp -s - "$TMP/want" && grep -q '^# straggler: ' "$TMP/out" &&
   grep -q '^#     1 ' "$TMP/out"; then ok; else bad "ddp trace / rank table: $(head -c 400 "$TMP/out")"; fi

# ---- --allreduce-bandwidth: a table, nothing wrong
"${MPIRUN[@]}" 2 "$BIN" --allreduce-bandwidth >"$TMP/out" 2>"$TMP/err"
if [ "$(grep -c '^ ' "$TMP/out")" -ge 10 ] && awk '/^ / && $NF != 0 {exit 1}' "$TMP/out"; then ok; else
    bad "--allreduce-bandwidth: $(head -c 400 "$TMP/out") $(head -c 200 "$TMP/err")"; fi

# ... a signal to rank 1 alone: every rank stops before the next size (it ran
# every size to the end), rank 0 says so, the job exits 130
"${MPIRUN[@]}" 1 "$BIN" --allreduce-bandwidth : -np 1 -x DPBENCH_TEST_SIGNAL_AT="allreduce sizes" \
    "$BIN" --allreduce-bandwidth >"$TMP/out" 2>"$TMP/err"
rc=$?
if [ $rc = 130 ] && grep -q '^# interrupted: a signal stopped the sweep after 0 sizes' "$TMP/out" &&
   [ "$(grep -c '^ ' "$TMP/out")" = 0 ]; then ok; else
    bad "--allreduce-bandwidth, SIGINT to rank 1: exit $rc: $(head -c 400 "$TMP/out")"; fi

# ---- a rank with another config stops every rank, one message naming it
"${MPIRUN[@]}" 1 "$BIN" --set parallel.mode=ddp : -np 1 "$BIN" --set parallel.mode=ddp \
    --set loader.batch_size=15 >"$TMP/out" 2>"$TMP/err"
rc=$?
if [ "$rc" -ne 0 ] && [ "$(grep -c '^dpbench: ' "$TMP/err")" = 1 ] &&
   grep -q "rank 1 (.*): its config differs from rank 0's at loader.batch_size" "$TMP/err" &&
   ! grep -q '^# dpbench' "$TMP/out"; then ok; else bad "config mismatch -> exit $rc: $(cat "$TMP/err")"; fi
# ... and the --out folders the refused job made are gone again
"${MPIRUN[@]}" 1 "$BIN" --set parallel.mode=ddp --out "$TMP/mm/x" : -np 1 "$BIN" --set parallel.mode=ddp \
    --set loader.batch_size=15 --out "$TMP/mm/x" >/dev/null 2>&1
if [ ! -e "$TMP/mm" ]; then ok; else bad "a refused ddp job left $(find "$TMP/mm")"; fi

# ---- every per-rank config key: a job whose rank 1 differs from rank 0 in
# it ends at once with a line naming the key (the cross-rank check, or the
# rank's own refusal of a value it cannot run), never a run or a hang; and
# parallel.mode both ways: a dp rank never opens the communicator the ddp
# rank waits in (it ran a whole dp benchmark, then the job hung). Rows are
# KEY|BOTH RANKS|RANK 0|RANK 1; every key --help-config lists has one.
I=$TMP/idx-pr
"$BIN" --make-dataset idx "$I/a" --classes 2 --per-class 4 --eval-per-class 1 >/dev/null &&
    cp -r "$I/a" "$I/b" || bad "--make-dataset idx for the per-rank keys"
IDX="--set dataset.kind=idx --set dataset.path=$I/a/train-images-idx3-ubyte"
printf '{"dpbench_h2d_profile": 1, "rows": [{"bytes": 65536, "pinned_gbps": 9, "pageable_gbps": 3}]}' >"$TMP/prof.json"
cat >"$TMP/per-rank" <<ROWS
name|||--set name=other
seed|||--set seed=1
dataset.kind|||$IDX
dataset.length|||--set dataset.length=200
dataset.features|||--set dataset.features=6
dataset.noise|||--set dataset.noise=0.5
dataset.sample_cost_us|||--set dataset.sample_cost_us=1
dataset.path|$IDX||--set dataset.path=$I/b/train-images-idx3-ubyte
dataset.eval_path|$IDX||--set dataset.eval_path=$I/b/t10k-images-idx3-ubyte
dataset.make|$IDX||--set dataset.make=idx
dataset.drop_cache|||--set dataset.drop_cache=true
transform.resize|$IDX||--set transform.resize=20
transform.crop|$IDX||--set transform.crop=20
transform.pad|$IDX --set transform.crop=20||--set transform.pad=2
transform.hflip|$IDX||--set transform.hflip=true
transform.mean|$IDX||--set transform.mean=[0.5] --set transform.std=[0.5]
transform.std|$IDX --set transform.mean=[0.5] --set transform.std=[0.5]||--set transform.std=[0.25]
model.out_features|||--set model.out_features=3
model.loss|||--set model.loss=mse
loader.batch_size|||--set loader.batch_size=15
loader.shuffle|||--set loader.shuffle=false
loader.drop_last|||--set loader.drop_last=true
loader.num_workers|||--set loader.num_workers=1
loader.prefetch_factor|--set loader.num_workers=1||--set loader.prefetch_factor=3
loader.pin_memory|||--set loader.pin_memory=true
loader.persistent_workers|--set loader.num_workers=1||--set loader.persistent_workers=true
loader.async_copy|||--set loader.async_copy=true
loader.copy_depth|||--set loader.copy_depth=3
train.epochs|||--set train.epochs=2
train.warmup_epochs|||--set train.warmup_epochs=1
train.lr|||--set train.lr=0.02
parallel.device|||--set parallel.device=emulated
parallel.mode|||--set parallel.mode=dp
parallel.mode||--set parallel.mode=dp|
parallel.comm|||--set parallel.comm=mpi
parallel.blas|||--set parallel.blas=openblas
parallel.blas_threads|||--set parallel.blas_threads=1
parallel.replicas|||--set parallel.replicas=2
parallel.devices|--set parallel.device=emulated||--set parallel.devices=[0]
emulate.h2d_gbps|||--set emulate.h2d_gbps=10
emulate.pageable_gbps|||--set emulate.pageable_gbps=5
emulate.launch_us|||--set emulate.launch_us=1
emulate.compute_us|||--set emulate.compute_us=1
emulate.p2p_gbps|||--set emulate.p2p_gbps=1
emulate.profile|||--set emulate.profile=$TMP/prof.json
report.trace|||--set report.trace=true
report.format|||--set report.format=json
report.out|||--set report.out=$TMP/per-rank-out
report.floor|||--set report.floor=true
report.verbose|||--set report.verbose=true
tune.knobs|||--set tune.knobs=num_workers
tune.max_workers|||--set tune.max_workers=2
tune.target_au|||--set tune.target_au=0.5
tune.budget_s|||--set tune.budget_s=10
bench.threshold|||--set bench.threshold=0.05
bench.precision|||--set bench.precision=0.02
bench.budget_s|||--set bench.budget_s=60
bench.min_rounds|||--set bench.min_rounds=3
bench.max_rounds|||--set bench.max_rounds=50
sweep|||--sweep seed=1,2
ROWS
keys=$("$BIN" --help-config | awk '!/^#/ {print $1}' | sort -u)
if [ "$keys" = "$(cut -d'|' -f1 "$TMP/per-rank" | sort -u)" ]; then ok
else bad "the per-rank table and --help-config's keys differ: $(diff <(echo "$keys") <(cut -d'|' -f1 "$TMP/per-rank" | sort -u) | tr '\n' ' ')"; fi
# one job: its exit status, its stderr and its time in $TMP/pr-N.*; eight at once (mostly waiting on mpirun)
per_rank_job() {
    local n=$1 both=$2 r0=$3 r1=$4 t0
    t0=$(date +%s%N)
    # a session folder each: mpiruns started at once race to create a shared one
    mkdir -p "$TMP/ompi-$n"
    # shellcheck disable=SC2086
    TMPDIR=$TMP/ompi-$n timeout -s KILL 90 "${MPIRUN[@]}" 1 "$BIN" --set parallel.mode=ddp --set name=per-rank-$$ $both $r0 : \
        -np 1 "$BIN" --set parallel.mode=ddp --set name=per-rank-$$ $both $r1 >/dev/null 2>"$TMP/pr-$n.err" </dev/null
    echo $? >"$TMP/pr-$n.rc"
    echo $(( ($(date +%s%N) - t0) / 1000000 )) >"$TMP/pr-$n.ms"
}
n=0
while IFS='|' read -r key both r0 r1; do
    n=$((n + 1))
    per_rank_job $n "$both" "$r0" "$r1" &
    [ $((n % 8)) -eq 0 ] && wait
done <"$TMP/per-rank"
wait
n=0
while IFS='|' read -r key both r0 r1; do
    n=$((n + 1))
    rc=$(cat "$TMP/pr-$n.rc") ms=$(cat "$TMP/pr-$n.ms")
    # prompt: mpirun's own start and abort take about 2 s on a quiet machine, and
    # up to 37 s with eight jobs at once while two other make test runs load
    # both cores; a hang runs into the 90 s kill (137), and anything past 60 s
    # is one too
    if [ "$rc" -ne 0 ] && [ "$rc" -ne 137 ] && [ "$ms" -lt 60000 ] &&
        grep '^dpbench: ' "$TMP/pr-$n.err" | grep -qF -- "$key"; then ok
    else bad "rank 1 with '$r1', rank 0 with '$r0': exit $rc after $ms ms, no line naming $key: $(head -c 600 "$TMP/pr-$n.err")"; fi
done <"$TMP/per-rank"
left=$(rank_pids "name=per-rank-$$")
[ -z "$left" ] && ok || { bad "ranks left: $left"; kill $left 2>/dev/null; }

# ---- SIGINT to mpirun: it sends SIGTERM to every rank and SIGKILL a second
# later; every rank stops after the same step and rank 0 writes its result
# files first (mpirun stops forwarding output): they parse, are marked
# interrupted and hold only complete epochs; every rank ends (wait_job)
mark=ddp-sigint-$$
"${MPIRUN[@]}" 2 "$BIN" --config configs/ddp.yaml --set name=$mark --set dataset.length=2000 \
    --set dataset.sample_cost_us=50 --set train.epochs=100000 --out "$TMP/int" --format json \
    >"$TMP/out" 2>"$TMP/err" &
pid=$!
wait_busy "name=$mark" 2 100 # both ranks training (a second of cpu each); start-up may be slow under load
kill -INT $pid
wait_job $pid "name=$mark"
if [ -z "$left" ] && python3 - "$TMP/int" <<'PY'; then ok; else
import csv, glob, json, sys
j, = glob.glob(sys.argv[1] + "/*.json")
c, = glob.glob(sys.argv[1] + "/*[0-9].csv")
d = json.load(open(j))
assert d["interrupted"] is True, d["interrupted"]
r = d["runs"][0]
n = len(r["epochs"])
assert 0 < n < 100000, n
assert all(e["samples"] == 2000 for e in r["epochs"])  # complete epochs of the job
assert all(len(x["epochs"]) == n for x in r["ranks"])
rows = list(csv.DictReader(open(c)))
assert [int(x["epoch"]) for x in rows] == list(range(1, n + 1)), rows[-1:]
PY
    bad "SIGINT to mpirun: ranks left after $ms ms: '$left' (mpirun exit $rc): $(head -c 400 "$TMP/err")"
    [ -n "$left" ] && kill $left 2>/dev/null
fi

# ---- a rank killed mid-run: mpirun ends the job within seconds, naming the
# rank and its host; no rank is left behind. Rank 0, waiting in a collective
# for the dead rank when mpirun's SIGTERM comes, still writes its complete
# epochs (its own figures, noted as such) to stdout and --out, no temp file
"${MPIRUN[@]}" 2 "$BIN" --config configs/ddp.yaml --set name=ddp-kill-$$ --set dataset.length=2000 \
    --set dataset.sample_cost_us=50 --set train.epochs=100000 --out "$TMP/kill" --format json \
    >"$TMP/out" 2>"$TMP/err" &
pid=$!
victim=""
wait_busy "name=ddp-kill-$$" 2 100 # both ranks training
for p in $(pids_matching "name=ddp-kill-$$"); do
    tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx 'OMPI_COMM_WORLD_RANK=1' && victim=$p
done
[ -n "$victim" ] && kill -9 "$victim"
wait_job $pid "name=ddp-kill-$$"
if [ -n "$victim" ] && [ -z "$left" ] && grep -q "rank 1 .*on node $(hostname)" "$TMP/err" &&
   [ -z "$(find "$TMP/kill" -name '*.tmp')" ] && python3 - "$TMP/kill" "$TMP/out" <<'PY'; then ok; else
import glob, json, sys
j, = glob.glob(sys.argv[1] + "/*.json")
for d in (json.load(open(j)), json.load(open(sys.argv[2]))):
    assert d["interrupted"] is True, d["interrupted"]
    r = d["runs"][0]
    assert 0 < len(r["epochs"]) < 100000, len(r["epochs"])
    assert "did not respond" in r["notes"], r["notes"]
    assert all(e["samples"] == 1000 for e in r["epochs"])  # rank 0's shard
PY
    bad "killed rank 1 (pid '$victim'): ranks left after $ms ms: '$left' (mpirun exit $rc): $(head -c 400 "$TMP/err")"
    [ -n "$left" ] && kill $left 2>/dev/null
fi

# ---- a signal to one rank alone, mid-run: it reaches every rank with the next
# step; rank 0's files are marked interrupted and say so, though rank 0 saw no
# signal (they said interrupted: false)
rank_of() { # PATTERN RANK: that rank's pid
    local p
    for p in $(rank_pids "$1"); do
        tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$2" && echo "$p"
    done
    return 0
}
for r in 1 0; do # (rank 0 alone: rank 1 rendered its own runs, never gathered, and crashed)
    mark=ddp-one$r-$$
    "${MPIRUN[@]}" 2 "$BIN" --config configs/ddp.yaml --set name=$mark --set dataset.length=2000 \
        --set dataset.sample_cost_us=50 --set train.epochs=100000 --out "$TMP/one$r" --format json \
        >"$TMP/out" 2>"$TMP/err" &
    pid=$!
    wait_busy "name=$mark" 2 100
    victim=$(rank_of "name=$mark" $r)
    [ -n "$victim" ] && kill -TERM "$victim"
    wait_job $pid "name=$mark"
    if [ -n "$victim" ] && [ -z "$left" ] && ! grep -q "Segmentation" "$TMP/err" &&
       { [ $r = 0 ] || grep -q "another rank was stopped by a signal" "$TMP/err"; } &&
       python3 - "$TMP/one$r" <<'PY'; then ok; else
import glob, json, sys
d = json.load(open(glob.glob(sys.argv[1] + "/*.json")[0]))
assert d["interrupted"] is True and 0 < len(d["runs"][0]["epochs"]) < 100000, d["interrupted"]
PY
        bad "SIGTERM to rank $r alone mid-run: ranks left '$left' (mpirun exit $rc): $(head -c 400 "$TMP/err")"
        [ -n "$left" ] && kill $left 2>/dev/null
    fi
done

# ---- a signal to one rank alone while its data is made, before any step could
# carry it: that rank waits for the others at the end (30 s; 3 s here,
# DPBENCH_TEST_TOGETHER_S), then ends the job, saying so (it waited in
# MPI_Finalize and the other in its first step's allreduce, for ever)
for r in 0 1; do
    mark=ddp-gen$r-$$
    "${MPIRUN[@]}" 2 -x DPBENCH_TEST_TOGETHER_S=3 "$BIN" --config configs/ddp.yaml --set name=$mark --set dataset.length=2000000 \
        --set dataset.features=64 --set train.epochs=1 --set train.warmup_epochs=0 -q \
        >/dev/null 2>"$TMP/err" &
    pid=$!
    wait_busy "name=$mark" 2 50 # making the data (seconds)
    victim=$(rank_of "name=$mark" $r)
    [ -n "$victim" ] && kill -INT "$victim"
    for i in $(seq 600); do [ -z "$(rank_pids "name=$mark")" ] && break; sleep 0.1; done
    wait_job $pid "name=$mark"
    if [ -n "$victim" ] && [ -z "$left" ] &&
       grep -q "rank $r: interrupted by SIGINT before the other ranks learned of it; they did not stop within 3 s: ending the job" "$TMP/err"; then ok
    else bad "SIGINT to rank $r alone while the data is made: ranks left after 60 s: '$left' (mpirun exit $rc): $(tail -c 400 "$TMP/err")"
        [ -n "$left" ] && kill -KILL $left 2>/dev/null
    fi
done

# ---- a signal one rank alone sees after its last step (rank 0 while it writes
# the results; rank 1 between two sweep points, before the next one's data)
# ends the job at once: every rank meets at the end (they waited 30 s, then
# the job was ended, as a stop seen while the data is made still is)
for c in "0|writing the results|" "1|finishing the run|--sweep seed=1,2"; do
    IFS='|' read -r who phase sweep <<<"$c"
    A=(-np 1) B=(-np 1)
    if [ "$who" = 0 ]; then A+=(-x "DPBENCH_TEST_SIGNAL_AT=$phase"); else B+=(-x "DPBENCH_TEST_SIGNAL_AT=$phase"); fi
    rm -rf "$TMP/late"
    t0=$(date +%s%N)
    timeout 60 mpirun --oversubscribe --mca btl self,vader "${A[@]}" "$BIN" --config configs/ddp.yaml $sweep -q \
        --out "$TMP/late" : "${B[@]}" "$BIN" --config configs/ddp.yaml $sweep -q --out "$TMP/late" >/dev/null 2>"$TMP/err"
    rc=$? ms=$(( ($(date +%s%N) - t0) / 1000000 ))
    if [ $rc -eq 130 ] && [ $ms -lt 20000 ] && ! grep -q "ending the job" "$TMP/err"; then ok
    else bad "SIGINT to rank $who alone at '$phase': exit $rc after $ms ms: $(head -c 400 "$TMP/err")"; fi
done

# ---- a signal one rank alone sees after the last step of the job (no step
# carries it), or while it waits for the others at the end: the exit status is
# the signal's, and a line says whose and what was kept (rank 1's exited 130
# with no line; one while waiting exited 0). The last case: rank 1's signal
# stopped both ranks (carried by the next point's agreement), then rank 0 got
# one at the end: what completed is reported, not "complete"; and a rank
# other than 0 does not say what rank 0's results kept (it cannot know).
R="at the end of the job, after its last step"
for c in "|finishing the run||rank 1 was interrupted by SIGINT after its last step; the results are complete" \
         "|meeting the other ranks||rank 1: interrupted by SIGINT $R; rank 0 reports the results" \
         "meeting the other ranks|||rank 0: interrupted by SIGINT $R; the results are complete" \
         "meeting the other ranks|finishing the run|--sweep seed=1,2|rank 0: interrupted by SIGINT $R; only what completed is reported" \
         "finishing the run|meeting the other ranks||rank 1: interrupted by SIGINT $R; rank 0 reports the results"; do
    IFS='|' read -r phase0 phase1 sweep says <<<"$c"
    A=(-np 1) B=(-np 1)
    [ -n "$phase0" ] && A+=(-x "DPBENCH_TEST_SIGNAL_AT=$phase0")
    [ -n "$phase1" ] && B+=(-x "DPBENCH_TEST_SIGNAL_AT=$phase1")
    rm -rf "$TMP/late"
    # shellcheck disable=SC2086
    timeout 60 mpirun --oversubscribe --mca btl self,vader "${A[@]}" "$BIN" --config configs/ddp.yaml -q \
        $sweep --out "$TMP/late" : "${B[@]}" "$BIN" --config configs/ddp.yaml -q $sweep \
        --out "$TMP/late" >/dev/null 2>"$TMP/err"
    rc=$?
    if [ $rc -eq 130 ] && grep -qF "$says" "$TMP/err" && ls "$TMP"/late/*.json >/dev/null 2>&1 &&
       ! grep -q "ending the job" "$TMP/err" &&
       [ "$(grep -c "results are complete" "$TMP/err")" -eq "$(grep -c "results are complete" <<<"$says")" ]; then ok
    else bad "SIGINT at rank 0: '$phase0', rank 1: '$phase1': exit $rc: $(head -c 600 "$TMP/err")"; fi
done

# ... and rank 0's text says the job was interrupted, not failed (it read its own
# signal state: none)
timeout 60 mpirun --oversubscribe --mca btl self,vader -np 1 "$BIN" --config configs/ddp.yaml --sweep seed=1,2,3 \
    : -np 1 -x "DPBENCH_TEST_SIGNAL_AT=deciding whether" "$BIN" --config configs/ddp.yaml --sweep seed=1,2,3 \
    >"$TMP/late.txt" 2>"$TMP/err"
if grep -q "^# interrupted: [0-9]* of 3 points reported" "$TMP/late.txt"; then ok
else bad "rank 1 signalled: rank 0's text says $(grep -E '^# (failed|interrupted)' "$TMP/late.txt")"; fi

# ---- each rank's share of the data holds a sample and, with drop_last, a
# batch (the share cut as DistributedSampler cuts it: 50 over 3 ranks, 16):
# for every sweep point, not only the base config (0 batches an epoch ran,
# exit 0, nan losses)
"${MPIRUN[@]}" 3 "$BIN" -c configs/ddp.yaml --set loader.batch_size=17 --set dataset.length=50 \
    --set loader.drop_last=true -q >/dev/null 2>"$TMP/err"
rc=$?
if [ $rc -eq 2 ] && grep -q "larger than each rank's 16 samples (dataset.length 50 over 3 ranks, drop_last: true)" "$TMP/err"; then ok
else bad "3 ranks, 50 samples, batch 17, drop_last: exit $rc: $(head -c 300 "$TMP/err")"; fi
"${MPIRUN[@]}" 4 "$BIN" -c configs/ddp.yaml --repeat 1 --sweep dataset.length=100,1 -q >/dev/null 2>"$TMP/err"
rc=$?
if [ $rc -eq 2 ] && grep -q "sweep point dataset.length=1: .*4 ranks for dataset.length 1" "$TMP/err"; then ok
else bad "a sweep point with fewer samples than ranks: exit $rc: $(head -c 300 "$TMP/err")"; fi

# ---- a loss that becomes nan on a rank: every rank stops after that step,
# rank 0 reports the job as diverged naming the rank, keeps the epochs before
"${MPIRUN[@]}" 2 "$BIN" --config configs/ddp.yaml --set train.lr=1e6 --set train.warmup_epochs=0 \
    --set train.epochs=20 --out "$TMP/nan" --format json >"$TMP/out" 2>"$TMP/err"
rc=$?
if [ "$rc" -eq 1 ] && [ "$(grep -c 'the loss became' "$TMP/err")" = 1 ] &&
   grep -q "the loss became infinite on rank 0 at batch 1 of epoch 2 (train.lr 1e+06 diverged)" "$TMP/err" &&
   python3 - "$TMP/out" "$TMP/nan" <<'PY'; then ok; else bad "ddp divergence -> exit $rc: $(head -c 400 "$TMP/err")"; fi
import glob, json, sys
for d in (json.load(open(sys.argv[1])), json.load(open(glob.glob(sys.argv[2] + "/*.json")[0]))):
    r = d["runs"][0]
    assert d["interrupted"] is True and "on rank 0 at batch 1 of epoch 2" in r["stopped"], r["stopped"]
    assert len(r["epochs"]) == 1 and r["epochs"][0]["samples"] == 100, r["epochs"]
    assert all(len(x["epochs"]) == 1 for x in r["ranks"])
PY

# ---- a rank that fails alone (its dataset file missing on its host: here a
# relative path in another working directory) ends the job at once with a
# message naming the rank and its host; no rank is left behind
"$BIN" --make-dataset idx "$TMP/idx" --classes 4 --per-class 15 --eval-per-class 5 >/dev/null ||
    bad "--make-dataset idx"
mkdir -p "$TMP/empty"
S=(--set parallel.mode=ddp --set dataset.kind=idx --set dataset.path=train-images-idx3-ubyte
   --set loader.batch_size=8 --set name=ddp-lost-$$)
t0=$(date +%s%N)
timeout 30 "${MPIRUN[@]}" 1 -wdir "$TMP/idx" "$BIN" "${S[@]}" : -np 1 -wdir "$TMP/empty" "$BIN" "${S[@]}" \
    >"$TMP/out" 2>"$TMP/err"
rc=$? ms=$(( ($(date +%s%N) - t0) / 1000000 ))
left=$(pids_matching "name=ddp-lost-$$")
if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && [ -z "$left" ] &&
   grep -q "^dpbench: rank 1 ($(hostname)): train-images-idx3-ubyte: " "$TMP/err"; then ok; else
    bad "a rank without its data -> exit $rc after $ms ms, left '$left': $(head -c 400 "$TMP/err")"; fi

# ---- the eval split, evaluated on every rank: a corrupt image in one rank's copy
# alone (a relative path in another working directory) fails the job on every
# rank in step, as one process fails: rank 0's files keep the epochs, marked
# failed, and name the rank (rank 1 failed alone before: mpirun exited 1 while
# rank 0's files said the run had not failed; in rank 0's copy the job aborted
# with no result written)
"$BIN" --make-dataset folder "$TMP/ev0" --classes 2 --per-class 6 --eval-per-class 3 --size 36x28 >/dev/null ||
    bad "--make-dataset folder"
cp -r "$TMP/ev0" "$TMP/ev1"
EV=(--set parallel.mode=ddp --set dataset.kind=folder --set dataset.path=train --set dataset.eval_path=val
    --set loader.batch_size=3 --set train.epochs=2 --format json)
for bad_rank in 1 0; do
    f=$(ls "$TMP/ev$bad_rank"/val/class_01/* | head -1) # not the first image: its shape is read up front
    truncate -s $(( $(stat -c %s "$f") * 2 / 3 )) "$f"
    timeout 60 "${MPIRUN[@]}" 1 -wdir "$TMP/ev0" "$BIN" "${EV[@]}" : -np 1 -wdir "$TMP/ev1" "$BIN" "${EV[@]}" \
        >"$TMP/ev.json" 2>"$TMP/err"
    rc=$?
    if [ $bad_rank = 1 ] && [ $rc -eq 1 ] && grep -qF "rank 1 ($(hostname)): evaluation: val/" "$TMP/err" &&
       python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["runs"][0]; assert r["failed"] and len(r["epochs"]) == 2 and not r["eval"] and r["stopped"].startswith("rank 1 could not evaluate the eval split"), r["stopped"]' "$TMP/ev.json"; then ok
    elif [ $bad_rank = 0 ] && [ $rc -eq 1 ] && grep -qF "evaluation: val/" "$TMP/err" &&
       python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["runs"][0]; assert r["failed"] and len(r["epochs"]) == 2 and not r["eval"]' "$TMP/ev.json"; then ok
    else bad "a corrupt eval image in rank $bad_rank's copy alone: exit $rc: $(head -c 400 "$TMP/err")"; fi
done
# ... in a sweep, where the failed point is not the last run: the same (all ranks
# aborted, no result, when only the last run's failure counted as in step);
# seed 1's first round runs val, then valbad
"$BIN" --make-dataset folder "$TMP/ev2" --classes 2 --per-class 6 --eval-per-class 3 --size 36x28 >/dev/null &&
    cp -r "$TMP/ev2/val" "$TMP/ev2/valbad" || bad "--make-dataset folder"
f=$(ls "$TMP/ev2"/valbad/class_01/* | head -1)
truncate -s $(( $(stat -c %s "$f") * 2 / 3 )) "$f"
timeout 60 "${MPIRUN[@]}" 2 -wdir "$TMP/ev2" "$BIN" "${EV[@]}" --sweep dataset.eval_path=valbad,val --set seed=1 \
    >"$TMP/ev.json" 2>"$TMP/err"
rc=$?
if [ $rc -eq 1 ] && ! grep -q MPI_ABORT "$TMP/err" &&
   python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["runs"]; assert [(x["failed"], bool(x["eval"]), len(x["epochs"])) for x in r] == [(True, False, 2), (False, True, 2)], r' "$TMP/ev.json"; then ok
else bad "a sweep whose first point's eval split is corrupt, 2 ranks: exit $rc: $(head -c 400 "$TMP/err")"; fi
# dataset.length is the random data's: a folder's 12 samples serve 2 ranks whatever it says
if "${MPIRUN[@]}" 2 -wdir "$TMP/ev0" "$BIN" "${EV[@]}" --set dataset.eval_path= --set dataset.length=1 \
    >"$TMP/ev.json" 2>"$TMP/err"; then ok
else bad "a folder dataset under 2 ranks with dataset.length 1: $(head -c 400 "$TMP/err")"; fi

# ---- labelled data (cross-entropy): W ranks x B == 1 process x W*B; the
# job's accuracy (every rank's samples) and eval; CSV's ddp columns
IDX=(--set dataset.kind=idx --set dataset.path="$TMP/idx/train-images-idx3-ubyte" --set model.loss=cross_entropy
     --set train.epochs=3 --format json)
"${MPIRUN[@]}" 2 "$BIN" "${IDX[@]}" --set parallel.mode=ddp --set loader.batch_size=8 \
    --out "$TMP/ce" >"$TMP/ce-ddp.json" 2>"$TMP/err"
"$BIN" "${IDX[@]}" --set loader.batch_size=16 >"$TMP/ce-one.json" 2>>"$TMP/err"
# parameters, losses, accuracies: tests/paramdist.py
if python3 tests/paramdist.py "$TMP/ce-ddp.json" "$TMP/ce-one.json" >"$TMP/d1" 2>&1; then ok; else
    bad "ddp cross_entropy: $(cat "$TMP/d1") $(head -c 300 "$TMP/err")"; fi
if python3 - "$TMP/ce-ddp.json" "$TMP/ce-one.json" "$TMP/ce" <<'PY'; then ok; else bad "ddp cross_entropy: $(head -c 300 "$TMP/err")"; fi
import csv, glob, json, sys
a, b = (json.load(open(p))["runs"][0] for p in sys.argv[1:3])
flat = lambda r: r["final_params"]["weight"] + r["final_params"]["bias"]
assert len(flat(a)) == len(flat(b)) == 4 * 784 + 4
assert a["loss"] == "cross_entropy" and a["world_size"] == 2
assert all(ea["samples"] == eb["samples"] == 60 for ea, eb in zip(a["epochs"], b["epochs"]))
# eval: 20 samples of the same parameters; one may flip class under rounding
assert a["eval"]["samples"] == 20 and abs(a["eval"]["accuracy"] - b["eval"]["accuracy"]) * 20 <= 1 + 1e-9
# CSV: the ddp columns after the usual ones, the JSON's figures per epoch
rows = list(csv.DictReader(open(glob.glob(sys.argv[3] + "/*[0-9].csv")[0])))
assert len(rows) == 3
for k, row in enumerate(rows):
    ar = [x["epochs"][k] for x in a["ranks"]]
    assert row["world_size"] == "2"
    assert abs(float(row["allreduce_seconds"]) - sum(e["allreduce_seconds"] for e in ar) / 2) < 1e-6
    assert abs(float(row["allreduce_wait_seconds"]) - sum(e["allreduce_wait_seconds"] for e in ar) / 2) < 1e-6
    assert float(row["busbw_gbps"]) > 0
PY

# ---- bad ddp input: exit 2, one line
expect2() {
    local frag=$1; shift
    "$@" >"$TMP/out" 2>"$TMP/err"
    local rc=$?
    # dpbench's own line (mpirun prints its banner around it)
    if [ "$rc" -eq 2 ] && grep '^dpbench: ' "$TMP/err" | grep -qF -- "$frag"; then ok; else
        bad "$* -> exit $rc, want 2 and '$frag': $(head -c 300 "$TMP/err")"; fi
}
expect2 "ddp runs one replica per rank" "$BIN" --set parallel.mode=ddp --set parallel.replicas=2
expect2 "nccl needs parallel.device: cuda" "$BIN" --set parallel.mode=ddp --set parallel.comm=nccl
expect2 "3 ranks for dataset.length 2" "${MPIRUN[@]}" 3 "$BIN" --set parallel.mode=ddp \
    --set dataset.length=2 --set loader.batch_size=1

# ---- libmpi is mapped by ddp runs under mpirun only: never by dp runs, nor by
# a ddp run started alone (a world of one)
for args in "" "--set parallel.mode=ddp"; do
    if LD_DEBUG=files "$BIN" --config configs/tutorial.yaml $args 2>&1 >/dev/null | grep -q libmpi; then
        bad "dpbench $args mapped libmpi"; else ok; fi
done
"${MPIRUN[@]}" 1 env LD_DEBUG=files "$BIN" --set parallel.mode=ddp >/dev/null 2>"$TMP/err"
if grep -q libmpi "$TMP/err"; then ok; else bad "a ddp rank did not open libmpi"; fi

# ---- ranks each owning one emulated device learn what cpu ranks learn
for dev in cpu emulated; do
    "${MPIRUN[@]}" 2 "$BIN" --config configs/tutorial.yaml --set parallel.mode=ddp \
        --set parallel.device=$dev --set parallel.blas=openblas --set train.epochs=3 \
        --format json >"$TMP/ddp-$dev.json" 2>"$TMP/err" || bad "ddp on $dev: $(head -c 300 "$TMP/err")"
done
if python3 - "$TMP/ddp-cpu.json" "$TMP/ddp-emulated.json" <<'PY'; then ok; else bad "ddp emulated vs cpu"; fi
import json, sys
c, m = (json.load(open(f))["runs"][0] for f in sys.argv[1:3])
assert m["backend"] == "emulated" and m["world_size"] == 2, m["backend"]
assert m["final_params"] == c["final_params"], (m["final_params"], c["final_params"])
assert "emulated" in m["summary"], m["summary"].keys()
PY

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
