# Shared by the shell tests (sourced as `. "$(dirname "$0")/lib.sh"`): the
# preamble of a test of the binary, the pass/fail counters, `expect`, and
# Debian's python3 rather than the first on PATH. Each test prints
# "N passed, N failed" at its end, the line CI reads.

# test_init "$@": the binary under test in $BIN (the first argument, default
# ./dpbench, resolved before the cd), the repository root as the working
# directory, and a scratch directory $TMP removed on exit.
test_init() {
    set -u
    BIN=$(realpath "${1:-./dpbench}")
    cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 2
    TMP=$(mktemp -d)
    trap 'rm -rf "$TMP"' EXIT
}
python3() { "${PYTHON:-/usr/bin/python3}" "$@"; }
# hup_default "$0" "$@": for a test that sends SIGHUP, called first (before
# any cd). Under nohup (any parent that ignores SIGHUP) every child inherits
# the ignore and dpbench rightly keeps it; bash cannot undo an ignore it
# started with, so the script starts again through python, SIGHUP at default.
hup_default() {
    [ -n "${DPBENCH_HUP_RESET:-}" ] && return 0
    [ $(( 0x$(awk '/^SigIgn:/ {print $2}' /proc/self/status) & 1 )) -eq 0 ] && return 0
    DPBENCH_HUP_RESET=1 exec "${PYTHON:-/usr/bin/python3}" -c 'import os, signal, sys
signal.signal(signal.SIGHUP, signal.SIG_DFL)
os.execvp(sys.argv[1], sys.argv[1:])' bash "$@"
}
# stops_as_cpu RC "WHERE": a run that exited RC stopped on a diverging loss as
# the cpu's run did: exit 1, the cpu's message in $TMP/cpu.err names WHERE ("at
# batch 4 of epoch 1", "on rank 3 at batch 28 of epoch 8"), $TMP/err the same
stops_as_cpu() {
    [ "$1" -eq 1 ] && grep -q "the loss became infinite $2" "$TMP/cpu.err" &&
        [ "$(grep 'became' "$TMP/err")" = "$(grep 'became' "$TMP/cpu.err")" ]
}
pass=0 fail=0
ok()  { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }
# expect STATUS "FRAGMENT" -- ARGS...: `$BIN ARGS` exits STATUS with FRAGMENT
# in its stdout or stderr, and an error (STATUS > 0) is exactly one line on
# stderr. Its output stays in $TMP/out and $TMP/err.
expect() {
    local want=$1 frag=$2; shift 3
    "$BIN" "$@" >"$TMP/out" 2>"$TMP/err" </dev/null
    local rc=$?
    if [ "$rc" -ne "$want" ]; then bad "dpbench $* -> exit $rc, want $want ($(head -c 400 "$TMP/err"))"; return; fi
    if ! grep -qF -- "$frag" "$TMP/err" "$TMP/out"; then bad "dpbench $* -> output lacks '$frag': $(head -c 400 "$TMP/err")"; return; fi
    if [ "$want" -ne 0 ] && [ "$(wc -l <"$TMP/err")" -ne 1 ]; then bad "dpbench $* -> want one error line, got: $(cat "$TMP/err")"; return; fi
    ok
}
# pids whose command line holds $1: pgrep -f without procps (a clean Debian
# root has none); bash alone reads /proc, so no helper process matches itself
pids_matching() {
    local p s a
    for p in /proc/[0-9]*; do
        mapfile -d '' a 2>/dev/null <"$p/cmdline" || continue
        s="${a[*]}"
        [[ $s == *"$1"* ]] && echo "${p#/proc/}"
    done
    return 0
}
# cpu seconds x100 (user + system clock ticks) process $1 has used; 0 if gone
cpu_ticks() {
    local f
    read -r -a f 2>/dev/null <"/proc/$1/stat" || { echo 0; return; }
    echo $((f[13] + f[14]))
}
# wait_busy PATTERN N TICKS: up to 60 s for N processes matching PATTERN to
# have used TICKS clock ticks each (past start-up: MPI, data, tuning); 1 if not
wait_busy() {
    local i p n
    for i in $(seq 600); do
        n=0
        for p in $(pids_matching "$1"); do
            [ "$(cpu_ticks "$p")" -ge "$3" ] && n=$((n + 1))
        done
        [ "$n" -ge "$2" ] && return 0
        sleep 0.1
    done
    return 1
}
