#!/usr/bin/env bash
# make test-multinode: DDP across two "hosts" made of Linux network namespaces
# on this machine, each with its own address on a veth pair. mpirun runs in
# host A's namespace and starts host B's rank through a launch agent (Open
# MPI's plm_rsh_agent) that enters B's namespace instead of using ssh; MPI
# traffic is TCP between the namespaces (namespaces share /dev/shm and the
# host name, so shared-memory transports are off). Checks: 2 ranks across the
# hosts learn what one process learns with the global batch; killing the
# remote rank mid-epoch ends the job within seconds, naming the rank. Every
# namespace and link is removed on exit, failures included.
# Needs root, iproute2 and Open MPI; prints "N passed, N failed".
set -u
BIN=$(realpath "${1:-./dpbench}")
cd "$(dirname "$0")/.."
. tests/lib.sh

if [ "$(id -u)" != 0 ] || ! command -v ip >/dev/null || ! command -v mpirun >/dev/null ||
   ! "$BIN" --version | grep -q '^comm:.*mpi'; then
    echo "skipped: needs root, ip (iproute2), mpirun and dpbench built with MPI"
    echo "0 passed, 0 failed"
    exit 0
fi

# unique names (this process id), so parallel runs never collide
ID=$$
NS_A=dpbench-ddp-a-$ID NS_B=dpbench-ddp-b-$ID
VA=ddpa$ID VB=ddpb$ID # interface names: 15 characters at most
NET=10.$((ID % 200 + 20)).$(((ID / 200) % 250)).
IP_A=${NET}1 IP_B=${NET}2
TMP=$(mktemp -d)
cleanup() {
    [ -n "${JOB:-}" ] && kill -9 "$JOB" 2>/dev/null
    for ns in "$NS_A" "$NS_B"; do
        # the namespace's processes first, then the namespace (its veth end goes with it)
        for p in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$p" 2>/dev/null; done
        ip netns del "$ns" 2>/dev/null
    done
    ip link del "$VA" 2>/dev/null
    rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

set -e
ip netns add "$NS_A"
ip netns add "$NS_B"
ip link add "$VA" type veth peer name "$VB"
ip link set "$VA" netns "$NS_A"
ip link set "$VB" netns "$NS_B"
ip -n "$NS_A" addr add "$IP_A/24" dev "$VA"
ip -n "$NS_B" addr add "$IP_B/24" dev "$VB"
for ns in "$NS_A" "$NS_B"; do ip -n "$ns" link set lo up; done
ip -n "$NS_A" link set "$VA" up
ip -n "$NS_B" link set "$VB" up
set +e

# The launch agent: Open MPI calls it as `agent HOST COMMAND...` for each
# remote host; it runs COMMAND in that host's namespace.
cat >"$TMP/agent" <<AGENT
#!/bin/sh
host=\$1; shift
case \$host in
$IP_A) ns=$NS_A ;;
$IP_B) ns=$NS_B ;;
*) echo "agent: unknown host \$host" >&2; exit 1 ;;
esac
exec ip netns exec "\$ns" sh -c "\$*"
AGENT
chmod +x "$TMP/agent"

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
MPIRUN=(ip netns exec "$NS_A" mpirun -H "$IP_A:1,$IP_B:1" -np 2
        --mca plm_rsh_agent "$TMP/agent" --mca btl tcp,self --mca pml ob1
        --mca btl_tcp_if_include "${NET}0/24" --mca oob_tcp_if_include "${NET}0/24"
        -x OMPI_ALLOW_RUN_AS_ROOT -x OMPI_ALLOW_RUN_AS_ROOT_CONFIRM)

# ---- equivalence across the hosts: 2 ranks x 15 == 1 process x 30, up to
# float32 rounding (tests/paramdist.py: tests/testutil.h's order_bound)
C=(--config configs/ddp.yaml --set dataset.length=120 --set train.epochs=5 --format json)
timeout 60 "${MPIRUN[@]}" "$BIN" "${C[@]}" >"$TMP/ddp.json" 2>"$TMP/err"
"$BIN" "${C[@]}" --set parallel.mode=dp --set loader.batch_size=30 >"$TMP/one.json"
if python3 tests/paramdist.py "$TMP/ddp.json" "$TMP/one.json" >"$TMP/dist" 2>&1
then ok; else bad "2 hosts vs 1 process: $(cat "$TMP/dist"): $(tail -c 600 "$TMP/err")"; fi
# the ranks were on two hosts: rank table shows both addresses' namespaces ran
# (the host name is shared, so check that rank 1's process was in B's namespace)

# ---- the remote rank killed mid-epoch: the job ends within seconds, naming it
timeout 60 "${MPIRUN[@]}" "$BIN" --config configs/large.yaml --set parallel.mode=ddp \
    --set train.epochs=1000 >"$TMP/out" 2>"$TMP/err" &
JOB=$!
victim=""
for _ in $(seq 100); do # up to 20 s for rank 1 to start training in B's namespace
    for p in $(ip netns pids "$NS_B"); do
        if tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx 'OMPI_COMM_WORLD_RANK=1' &&
           [ "$(readlink "/proc/$p/exe")" = "$BIN" ]; then victim=$p; fi
    done
    [ -n "$victim" ] && break
    sleep 0.2
done
if [ -z "$victim" ]; then
    bad "rank 1 never started in $NS_B: $(tail -c 600 "$TMP/err")"
else
    sleep 2 # mid-epoch: the large config's epochs take longer than this
    t0=$(date +%s.%N)
    kill -9 "$victim"
    wait "$JOB"
    rc=$?
    JOB=""
    took=$(python3 -c "import sys; print(round($(date +%s.%N) - $t0, 1))")
    if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && python3 -c "import sys; sys.exit(0 if $took < 15 else 1)" &&
       grep -qi "rank 1" "$TMP/err"; then ok; else
        bad "killed rank 1: exit $rc after ${took}s: $(tail -c 800 "$TMP/err")"; fi
fi

[ -n "${VERBOSE:-}" ] && cat "$TMP/err" >&2 # VERBOSE=1: mpirun's last messages
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
