#!/usr/bin/env bash
# make test-fresh: the README's two commands on a clean Debian 12 root.
#
# Builds a minimal bookworm root with debootstrap under build/test-fresh/
# (on a tmpfs), holding only what the README asks of a new user: make, a C
# compiler (gcc with libc6-dev) and git. Clones this repository's HEAD into it
# and runs there `make run`, then `make test`, as root, twice:
#   pass 1  no CUDA toolkit; Debian's reference BLAS (libblas-dev, which has a
#           cblas.h) installed first, OpenBLAS absent; after `make test`,
#           libopenblas-dev is purged (pkg-config loses `openblas`) and `make` must
#           install it again
#           (the dependency check may not trust an old build/deps.mk);
#   pass 2  the host's CUDA toolkit (the real path behind CUDA_HOME, default
#           /usr/local/cuda) bind-mounted read-only at the same path; skipped,
#           and said so, when the host has none.
# Each pass runs on its own overlay of the same debootstrap root and starts
# from nothing but that root. Pass 2, the longer, starts first; pass 1 starts
# beside it once pass 2's `make run` has downloaded the .deb files, and
# installs from a copy of them (they stay in build/test-fresh-cache/, like the
# debootstrap tarball, for the next run). Inside the root
# FUZZ_SECONDS=$FRESH_FUZZ_SECONDS (default 5) shortens the fuzz run.
#
# Mounts per pass: proc, a tmpfs /dev holding null, zero, full, random,
# urandom and tty, /dev/shm, apt's .deb cache, and the toolkit in pass 2, all
# in a mount namespace of its own. Every mount and the
# root are removed on exit, whether it succeeded, failed or was interrupted.
# Prints how long each phase took; logs stay in build/test-fresh-logs/.
# The debootstrap tarball and the root it unpacks to (as a tar) are kept a
# week in build/test-fresh-cache/. `scripts/test-fresh.sh --fetch` only
# prepares those two (.ci/run does it while `make test` runs, which leaves a
# core and the network idle).
# Needs root (debootstrap, chroot, mount) and the Debian mirror
# (DEBIAN_MIRROR, default http://deb.debian.org/debian): when the mirror
# cannot be reached it says so and fails.
#
# `scripts/test-fresh.sh --arch arm64` (make test-arm64) makes the same root
# for arm64 instead and runs it under emulation: qemu-user-static (installed
# if missing) registered with binfmt_misc (mounted and registered from the
# package's /usr/lib/binfmt.d entry when they are not; the entry stays, as
# the package leaves it on a systemd host), so every arm64 program in the
# chroot runs through qemu-aarch64. One pass, CPU only (no aarch64 CUDA
# toolkit is used; it says whether the host has one): `make run`, then
# `make test` over the stages in ARM64_STAGES below with the tests that hold
# a time skipped by name (DPBENCH_TEST_SKIP; docs/testing.md lists each and
# why). Its root, logs and .deb cache are build/test-fresh-arm64/,
# build/test-fresh-logs-arm64/ and the arm64 files in build/test-fresh-cache/.
# Without binfmt_misc it says so and fails (no other way is tried).
set -euo pipefail
SELF=$(realpath "$0")
cd "$(dirname "$SELF")/.."
REPO=$PWD
FETCH_ONLY=0
FOREIGN=""   # --arch: the Debian architecture to emulate
ARGS=("$@")
while [ $# -gt 0 ]; do
    case $1 in
    --fetch) FETCH_ONLY=1 ;;
    --arch) FOREIGN=${2:-}; [ $# -ge 2 ] && shift ;;
    *) echo "test-fresh.sh: unknown argument '$1' (expected --fetch, --arch arm64 or nothing)" >&2; exit 2 ;;
    esac
    shift
done
case $FOREIGN in
""|arm64) ;;
*) echo "test-fresh.sh: --arch '$FOREIGN': only arm64 can be emulated" >&2; exit 2 ;;
esac
SUITE=bookworm
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
FUZZ=${FRESH_FUZZ_SECONDS:-5}
SFX=${FOREIGN:+-$FOREIGN}            # the emulated architecture's files apart
WORK=$REPO/build/test-fresh$SFX          # tmpfs: the roots, removed on exit
CACHE=$REPO/build/test-fresh-cache       # kept: debootstrap tarball, .deb files
LOGS=$REPO/build/test-fresh-logs$SFX     # kept: one log per phase
ARCHIVES=$CACHE/archives$SFX             # apt's .deb files
PROG=test-fresh$SFX

say() { printf '%s: %s\n' "$PROG" "$*"; }
die() { printf '%s: %s\n' "$PROG" "$*" >&2; exit 1; }

[ "$(id -u)" -eq 0 ] || die "needs root (debootstrap, chroot and mounts): run it as root or with sudo"
# In a mount namespace of its own: no mount is seen outside, and all of them
# vanish with the namespace even if this script is killed outright.
if [ -z "${DPBENCH_FRESH_NS:-}" ]; then
    DPBENCH_FRESH_NS=1 exec unshare --mount --propagation private "$SELF" "${ARGS[@]}"
fi
HEAD=$(git rev-parse --short HEAD) || die "not a git checkout"
[ $FETCH_ONLY -eq 1 ] || [ -z "$(git status --porcelain --untracked-files=no)" ] ||
    say "note: testing the commit $HEAD; uncommitted changes are not in it"

# ---- clean-up: every mount, every process in the roots, the tmpfs ---------
MOUNTS=()   # in mount order; unmounted in reverse
PIDS=()     # background passes
cleanup() {
    local rc=$? i p
    trap '' INT TERM
    if [ $FETCH_ONLY -eq 1 ]; then   # started no root; one tmpfs at most
        for ((i = ${#MOUNTS[@]} - 1; i >= 0; i--)); do umount "${MOUNTS[i]}" || umount -l "${MOUNTS[i]}" || true; done
        mountpoint -q "$CACHE/prepare" || rm -rf "$CACHE/prepare"
        exit $rc
    fi
    for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
    # whatever still runs inside a root (a test's child, a stuck make)
    for i in 1 2 3 4 5 6 7 8 9 10; do
        local left=0
        for p in /proc/[0-9]*; do
            case $(readlink "$p/root" 2>/dev/null) in
            "$WORK"/*) kill -KILL "${p#/proc/}" 2>/dev/null || true; left=1 ;;
            esac
        done
        [ $left -eq 1 ] || break
        sleep 0.2
    done
    for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
    for ((i = ${#MOUNTS[@]} - 1; i >= 0; i--)); do
        umount "${MOUNTS[i]}" 2>/dev/null || umount -l "${MOUNTS[i]}" 2>/dev/null || true
    done
    if grep -q " $WORK[ /]" /proc/mounts; then
        echo "$PROG: could not remove every mount under $WORK; left it in place" >&2
        rc=1
    else
        rm -rf "$WORK" "$CACHE/archives-copy$SFX"
    fi
    [ -z "${T0:-}" ] || [ $FETCH_ONLY -eq 1 ] || say "total $(($(date +%s) - T0)) s, exit $rc"
    exit $rc
}
trap cleanup EXIT
trap 'echo "$PROG: interrupted" >&2; exit 130' INT
trap 'echo "$PROG: terminated" >&2; exit 143' TERM

mnt() { # mount ARGS... TARGET: records TARGET for the clean-up
    mount "$@"
    MOUNTS+=("${!#}")
}

# phase NAME LOG CMD...: runs CMD with its output in LOG, prints the duration
phase() {
    local name=$1 log=$2 s=$(date +%s) rc=0
    shift 2
    ("$@") >"$log" 2>&1 || rc=$?   # a subshell: an interrupt's messages stay out of $log
    if [ $rc -eq 0 ]; then
        say "$name: ok, $(($(date +%s) - s)) s"
        grep -E '^[a-z0-9-]*:? ?[0-9]+ passed, [0-9]+ failed|^skipped|^[a-z-]+: skipped' "$log" | sed "s/^/    /" || true
    else
        say "$name: FAILED (exit $rc) after $(($(date +%s) - s)) s; the end of $log:"
        tail -40 "$log" | sed "s/^/    /"
    fi
    return $rc
}

T0=$(date +%s)
mkdir -p "$ARCHIVES/partial" "$LOGS"
APT_WAIT=(-o DPkg::Lock::Timeout=600)   # others may be running apt-get too

# ---- prerequisites on the host ---------------------------------------------
mirror_ok() {
    local url=$MIRROR/dists/$SUITE/Release
    if command -v curl >/dev/null; then
        curl -fsS --max-time 30 -o /dev/null "$url"
    elif command -v wget >/dev/null; then
        wget -q -T 30 -O /dev/null "$url"
    else
        local hp=${MIRROR#http://} host port
        host=${hp%%/*}; port=80
        [[ $host == *:* ]] && { port=${host#*:}; host=${host%%:*}; }
        timeout 30 bash -c "exec 3<>/dev/tcp/$host/$port"
    fi
}
mirror_ok 2>"$LOGS/mirror.log" ||
    die "the package mirror $MIRROR cannot be reached ($(head -1 "$LOGS/mirror.log")): cannot build the root; failing"
if ! command -v debootstrap >/dev/null; then
    say "installing debootstrap with apt-get"
    DEBIAN_FRONTEND=noninteractive apt-get "${APT_WAIT[@]}" install -y -qq debootstrap \
        >"$LOGS/debootstrap-install.log" 2>&1 ||
        die "apt-get install debootstrap failed: see $LOGS/debootstrap-install.log"
fi
HOST_ARCH=$(dpkg --print-architecture)
DEB_ARCH=${FOREIGN:-$HOST_ARCH}
[ "$DEB_ARCH" = "$HOST_ARCH" ] || [ -n "$FOREIGN" ] || die "internal: no architecture"
if [ -n "$FOREIGN" ] && [ "$FOREIGN" = "$HOST_ARCH" ]; then
    die "--arch $FOREIGN is this host's own architecture: run make test-fresh"
fi

# ---- emulation (--arch): qemu-user-static through binfmt_misc --------------
QEMU=qemu-aarch64   # the emulator for arm64
emulation_ready() {
    local bm=/proc/sys/fs/binfmt_misc conf=/usr/lib/binfmt.d/$QEMU.conf
    if [ ! -e "$conf" ]; then
        say "installing qemu-user-static with apt-get"
        DEBIAN_FRONTEND=noninteractive apt-get "${APT_WAIT[@]}" install -y -qq qemu-user-static \
            >"$LOGS/qemu-install.log" 2>&1 ||
            die "apt-get install qemu-user-static failed: see $LOGS/qemu-install.log"
    fi
    [ -e "$bm/status" ] || mnt -t binfmt_misc binfmt_misc "$bm" 2>"$LOGS/binfmt.log" ||
        die "binfmt_misc cannot be mounted ($(head -1 "$LOGS/binfmt.log")): arm64 programs cannot run in a chroot here; failing"
    if [ ! -e "$bm/$QEMU" ]; then
        cat "$conf" >"$bm/register" 2>"$LOGS/binfmt.log" ||
            die "cannot register $QEMU with binfmt_misc ($(head -1 "$LOGS/binfmt.log")); failing"
        say "registered $QEMU with binfmt_misc (from $conf; it stays registered)"
    fi
    grep -qx enabled "$bm/status" && grep -qx enabled "$bm/$QEMU" ||
        die "binfmt_misc or its $QEMU entry is disabled; failing"
    # F: the kernel opens the emulator when it is registered, so a chroot needs no copy of it
    grep -q '^flags:.*F' "$bm/$QEMU" ||
        die "$QEMU is registered without the F flag (its emulator must be inside each root): re-register it from $conf"
    say "emulation: binfmt_misc + qemu-user-static ($($QEMU-static --version | head -1)) in a chroot"
}
[ -z "$FOREIGN" ] || emulation_ready

# ---- the base root: debootstrap's tarball downloaded, and the root it
# unpacks to saved as a tar, both kept for a week --------------------------
TARBALL=$CACHE/$SUITE$SFX-minbase.tgz
BASE_TAR=$CACHE/$SUITE$SFX-minbase-root.tar
INCLUDE=make,gcc,libc6-dev,git
TAR_OPTS=(--numeric-owner --xattrs --xattrs-include='*')
fetch_tarball() {
    local s
    s=$(date +%s)
    if [ -s "$TARBALL" ] && [ "$(cat "$TARBALL.include" 2>/dev/null)" = "$INCLUDE $MIRROR" ] &&
        [ -n "$(find "$TARBALL" -mtime -7)" ]; then
        return 0
    fi
    rm -rf "$TARBALL" "$TARBALL.include" "$BASE_TAR" "$CACHE/scratch"
    debootstrap --arch="$DEB_ARCH" --variant=minbase --include=$INCLUDE --make-tarball="$TARBALL.tmp" \
        "$SUITE" "$CACHE/scratch" "$MIRROR" >"$LOGS/debootstrap-fetch.log" 2>&1 ||
        { tail -20 "$LOGS/debootstrap-fetch.log" >&2; die "debootstrap could not download $SUITE from $MIRROR"; }
    rm -rf "$CACHE/scratch"
    mv "$TARBALL.tmp" "$TARBALL"
    echo "$INCLUDE $MIRROR" >"$TARBALL.include"
    say "debootstrap download ($SUITE $DEB_ARCH minbase + $INCLUDE): ok, $(($(date +%s) - s)) s"
}
# base_root DIR: the root in DIR (on a tmpfs): the saved one when it is newer
# than the tarball, else unpacked by debootstrap and saved
base_root() {
    local dir=$1 s
    s=$(date +%s)
    if [ -s "$BASE_TAR" ] && [ "$BASE_TAR" -nt "$TARBALL" ]; then
        mkdir -p "$dir"
        if tar -C "$dir" "${TAR_OPTS[@]}" -xpf "$BASE_TAR" 2>"$LOGS/base-untar.log"; then
            cp /etc/resolv.conf "$dir/etc/resolv.conf"
            say "debootstrap root ($SUITE $DEB_ARCH minbase + $INCLUDE, saved by an earlier run): ok, $(($(date +%s) - s)) s"
            return 0
        fi
        rm -rf "$BASE_TAR" "$dir"
    fi
    debootstrap --arch="$DEB_ARCH" --variant=minbase --include=$INCLUDE --unpack-tarball="$TARBALL" \
        "$SUITE" "$dir" "$MIRROR" >"$LOGS/debootstrap.log" 2>&1 ||
        { tail -20 "$LOGS/debootstrap.log" >&2; die "debootstrap failed: see $LOGS/debootstrap.log"; }
    rm -rf "$dir"/var/cache/apt/archives/*.deb
    tar -C "$dir" "${TAR_OPTS[@]}" -cpf "$BASE_TAR.tmp" . && mv "$BASE_TAR.tmp" "$BASE_TAR"
    cp /etc/resolv.conf "$dir/etc/resolv.conf"
    say "debootstrap ($SUITE $DEB_ARCH minbase + $INCLUDE, unpacked): ok, $(($(date +%s) - s)) s"
}

exec 9>"$CACHE/lock"
flock 9   # one at a time: a --fetch may be running
fetch_tarball
if [ $FETCH_ONLY -eq 1 ]; then
    mkdir -p "$CACHE/prepare"
    mnt -t tmpfs -o mode=755 dpbench-test-fresh-prepare "$CACHE/prepare"
    base_root "$CACHE/prepare/root"
    exit 0
fi

rm -f "$LOGS"/pass*.log
if mountpoint -q "$WORK"; then die "$WORK is still mounted from an earlier run: umount it first"; fi
mkdir -p "$WORK"
mnt -t tmpfs -o mode=755,size=${FRESH_TMPFS_SIZE:-12g} dpbench-test-fresh "$WORK"
BASE=$WORK/base
base_root "$BASE"
exec 9>&-

# ---- the passes -------------------------------------------------------------
# mkroot N ARCHIVES [CUDA_DIR]: pass N's root, an overlay of the base with its
# mounts (ARCHIVES as apt's .deb cache) and the clone
mkroot() {
    local n=$1 archives=$2 cuda=${3:-} d=$WORK/pass$1 r dev
    mkdir -p "$d/upper" "$d/work" "$d/root"
    mnt -t overlay -o "lowerdir=$BASE,upperdir=$d/upper,workdir=$d/work" "dpbench-fresh-$n" "$d/root"
    r=$d/root
    mnt -t proc proc "$r/proc"
    dev=$r/dev
    mnt -t tmpfs -o mode=755,nosuid dpbench-fresh-dev "$dev"
    mknod -m 666 "$dev/null" c 1 3; mknod -m 666 "$dev/zero" c 1 5; mknod -m 666 "$dev/full" c 1 7
    mknod -m 666 "$dev/random" c 1 8; mknod -m 666 "$dev/urandom" c 1 9; mknod -m 666 "$dev/tty" c 5 0
    ln -s /proc/self/fd "$dev/fd"; ln -s /proc/self/fd/0 "$dev/stdin"
    ln -s /proc/self/fd/1 "$dev/stdout"; ln -s /proc/self/fd/2 "$dev/stderr"
    mkdir -p "$dev/shm" "$dev/pts"
    mnt -t tmpfs -o mode=1777,nosuid,nodev dpbench-fresh-shm "$dev/shm"
    mnt --bind "$archives" "$r/var/cache/apt/archives"
    if [ -n "$cuda" ]; then
        mkdir -p "$r$cuda"
        mnt --bind "$cuda" "$r$cuda"
        mount -o remount,bind,ro "$r$cuda"
        [ "$CUDA_HOME" = "$cuda" ] || { mkdir -p "$r$(dirname "$CUDA_HOME")"; ln -sfn "$cuda" "$r$CUDA_HOME"; }
    fi
    git clone -q --no-local "$REPO" "$r/root/dpbench"
}

# inroot N CMD: runs the shell command CMD in pass N's clone, as a new user would
inroot() {
    local n=$1
    shift
    env -i HOME=/root TERM=dumb LANG=C.UTF-8 PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        FUZZ_SECONDS="$FUZZ" chroot "$WORK/pass$n/root" /bin/bash -c "cd /root/dpbench && $*"
}

pass1() {
    phase "pass 1: libblas-dev (reference BLAS, a cblas.h) installed, no OpenBLAS" "$LOGS/pass1-libblas.log" \
        inroot 1 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends libblas-dev &&
              ls /usr/include/cblas.h /usr/include/*/cblas.h 2>/dev/null | grep -q . &&
              ! dpkg -s libopenblas-dev >/dev/null 2>&1' || return 1
    phase "pass 1 (no CUDA): make run" "$LOGS/pass1-run.log" inroot 1 'make run' || return 1
    phase "pass 1 (no CUDA): make test" "$LOGS/pass1-test.log" inroot 1 'make test' || return 1
    phase "pass 1: OpenBLAS removed after the build, make installs it again" "$LOGS/pass1-stale.log" \
        inroot 1 'DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq libopenblas-dev libopenblas-pthread-dev &&
              ! pkg-config --exists openblas && make dpbench && pkg-config --exists openblas &&
              ./dpbench --config configs/tutorial.yaml --set train.epochs=1 >/dev/null'
}

pass2() {
    local rc=0
    phase "pass 2 (CUDA toolkit $1, read-only): make run" "$LOGS/pass2-run.log" inroot 2 'make run' || rc=1
    touch "$WORK/pass2.installed"
    [ $rc -eq 0 ] || return 1
    phase "pass 2 (CUDA toolkit $1, read-only): make test" "$LOGS/pass2-test.log" inroot 2 'make test'
}

# ---- the emulated pass (--arch arm64) -------------------------------------
# After `make run` and the test binaries' build, two `make test` runs side by
# side (one a core: each emulated program is one host thread), over the
# stages in ARM64_STAGES_A and _B. ARM64_SKIP names the tests skipped there:
# each holds a time that qemu-user, many times slower than the host, cannot
# keep (docs/testing.md gives each one's reason).
ARM64_STAGES_A="test-cli test-data-cli"
ARM64_STAGES_B="test-unit test-kernels test-results"
ARM64_SKIP="test_pinned_beats_pageable test_async_needs_pinned test_copy_depth"
# foreign_tests: the two runs; fails when either did
foreign_tests() {
    local log=$LOGS/pass-$FOREIGN rc=0 pa
    phase "pass $FOREIGN: make test TEST_STAGES=\"$ARM64_STAGES_A\"" "$log-test-a.log" \
        inroot "$FOREIGN" "DPBENCH_TEST_SKIP='$ARM64_SKIP' make test TEST_STAGES='$ARM64_STAGES_A'" &
    pa=$!
    PIDS+=($pa)
    phase "pass $FOREIGN: make test TEST_STAGES=\"$ARM64_STAGES_B\"" "$log-test-b.log" \
        inroot "$FOREIGN" "DPBENCH_TEST_SKIP='$ARM64_SKIP' make test TEST_STAGES='$ARM64_STAGES_B'" || rc=1
    wait "$pa" || rc=1
    PIDS=()
    sed -n '/^# stage/,/^test:/p' "$log-test-a.log" "$log-test-b.log" | sed "s/^/    /"
    return $rc
}
if [ -n "$FOREIGN" ]; then
    if [ -e "$CUDA_HOME/targets/sbsa-linux/include/cuda_runtime.h" ]; then
        say "pass $FOREIGN: CPU only: the host's aarch64 (sbsa) CUDA toolkit is not mounted into the root"
    else
        say "pass $FOREIGN: CPU only: no aarch64 (sbsa) CUDA toolkit on this host ($CUDA_HOME/targets: $(ls "$CUDA_HOME/targets" 2>/dev/null | tr '\n' ' ')), so the arm64 build has no cuda backend"
    fi
    mkroot "$FOREIGN" "$ARCHIVES"
    log=$LOGS/pass-$FOREIGN
    phase "pass $FOREIGN (emulated, no CUDA): make run" "$log-run.log" inroot "$FOREIGN" 'make run' || exit 1
    say "    $(grep -m1 '^# machine:' "$log-run.log")"
    phase "pass $FOREIGN: the unit tests' build" "$log-build.log" \
        inroot "$FOREIGN" 'make -j2 $(ls tests/test_*.c | sed "s|^tests/\(.*\)\.c$|build/tests/\1|")' || exit 1
    foreign_tests || exit 1
    say "passed: make run + make test ($ARM64_STAGES_A $ARM64_STAGES_B) on a fresh $SUITE $FOREIGN root under qemu-user"
    exit 0
fi

CUDA_DIR=""
[ -e "$CUDA_HOME/include/cuda_runtime.h" ] && CUDA_DIR=$(realpath "$CUDA_HOME")
rc1=0 rc2=0
if [ -n "$CUDA_DIR" ]; then
    # Pass 2, the longer, goes first; pass 1 starts beside it once pass 2's
    # `make run` has fetched the .deb files, from a copy of them.
    mkroot 2 "$CACHE/archives" "$CUDA_DIR"
    pass2 "$CUDA_DIR" &
    P2=$!
    PIDS+=($P2)
    while [ ! -e "$WORK/pass2.installed" ] && kill -0 "$P2" 2>/dev/null; do sleep 1; done
    rm -rf "$CACHE/archives-copy"
    cp -al "$CACHE/archives" "$CACHE/archives-copy"
    rm -f "$CACHE/archives-copy/lock"
    mkroot 1 "$CACHE/archives-copy"
    pass1 || rc1=$?
    wait "$P2" || rc2=$?
    PIDS=()
else
    say "pass 2 (with the CUDA toolkit): skipped: the host has no toolkit in $CUDA_HOME"
    mkroot 1 "$CACHE/archives"
    pass1 || rc1=$?
fi
[ $rc1 -eq 0 ] && [ $rc2 -eq 0 ] || die "failed (pass 1 exit $rc1, pass 2 exit $rc2)"
say "passed: make run + make test on a fresh $SUITE root$([ -n "$CUDA_DIR" ] && echo ", without and with the CUDA toolkit" || echo " (no CUDA toolkit on this host: pass 2 skipped)")"
