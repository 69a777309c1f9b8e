#!/usr/bin/env bash
# Makes sure the Debian packages dpbench needs are installed, each one found
# for what it is (OpenBLAS by its pkg-config module `openblas`, never by "some
# cblas.h": Debian's reference libblas-dev ships a cblas.h too).
#
#   scripts/install-deps.sh [GROUP...] [--found FILE]
#
# GROUP is `make` (the default: what `make`, `make run` and `make test` build
# and test with, PyTorch for the side-by-side tests included) or `bench` (what
# `make bench` adds). Installs what is missing
# with apt-get when run as root (or with password-less sudo), otherwise prints
# the exact command and exits 1. With --found FILE it writes into FILE one
# path per line that shows each package is there (a .pc file, a program, the
# package's dpkg file list): the Makefile re-runs this script when one of
# them disappears.
set -euo pipefail

# One line per package: GROUP PACKAGE CHECK, where GROUP@ARCH limits the
# package to Debian architecture ARCH (libxsmm is built for amd64 only) and
# CHECK is
#   pc:MODULE    pkg-config knows MODULE
#   cmd:PROGRAM  PROGRAM is on PATH
#   file:PATH    PATH exists
#   clang-rt:LIB clang finds its runtime libclang_rt.LIB-<arch>.a
#   dpkg         the package itself is installed (not for a Multi-Arch: same
#                package, whose dpkg list PACKAGE:ARCH.list make cannot take)
# (g++: nvcc compiles the CUDA kernels' host side with it, where a CUDA
# toolkit is found)
PACKAGES='
make  pkg-config           cmd:pkg-config
make  libyaml-dev          pc:yaml-0.1
make  libopenblas-dev      pc:openblas
make  libcjson-dev         pc:libcjson
make  libcmocka-dev        pc:cmocka
make  clang                cmd:clang
make  g++                  cmd:g++
make  libclang-rt-dev      clang-rt:fuzzer
make  valgrind             cmd:valgrind
make  strace               cmd:strace
make  libjpeg-dev          pc:libjpeg
make  libpng-dev           pc:libpng
make  zlib1g-dev           pc:zlib
make  python3              file:/usr/bin/python3
make  time                 file:/usr/bin/time
make  dataset-fashion-mnist file:/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz
make  openmpi-bin          cmd:mpirun
make  libopenmpi-dev       pc:ompi-c
make@amd64 libxsmm-dev     pc:libxsmm
make  python3-torch        dpkg
make  python3-numpy        dpkg
make  python3-pil          file:/usr/lib/python3/dist-packages/PIL/Image.py
make  python3-matplotlib   dpkg
make  python3-jsonschema   dpkg
bench python3-yaml         dpkg
bench hyperfine            cmd:hyperfine
'

groups=()
found_file=""
while [ $# -gt 0 ]; do
    case $1 in
    --found) found_file=${2:?--found needs a file}; shift 2 ;;
    make|bench) groups+=("$1"); shift ;;
    *) echo "install-deps.sh: unknown argument '$1' (expected make, bench or --found FILE)" >&2; exit 2 ;;
    esac
done
[ ${#groups[@]} -gt 0 ] || groups=(make)

# dpkg_file PACKAGE: the package's dpkg file list when it is installed
dpkg_file() {
    local f
    for f in "/var/lib/dpkg/info/$1.list" "/var/lib/dpkg/info/$1:"*.list; do
        [ -e "$f" ] && { echo "$f"; return 0; }
    done
    return 1
}

# evidence PACKAGE CHECK: prints the path that shows PACKAGE is there, or fails
evidence() {
    local pkg=$1 check=$2 p
    case $check in
    pc:*)
        if command -v pkg-config >/dev/null; then
            pkg-config --exists "${check#pc:}" || return 1
            p="$(pkg-config --variable=pcfiledir "${check#pc:}")/${check#pc:}.pc"
            [ -e "$p" ] && echo "$p" || dpkg_file "$pkg"
        else
            return 1
        fi ;;
    cmd:*) command -v "${check#cmd:}" ;;
    file:*) [ -e "${check#file:}" ] && echo "${check#file:}" ;;
    clang-rt:*)
        command -v clang >/dev/null || return 1
        p=$(clang -print-file-name="libclang_rt.${check#clang-rt:}-$(uname -m).a")
        [ -e "$p" ] && echo "$p" ;;
    dpkg) dpkg_file "$pkg" ;;
    *) echo "install-deps.sh: bad check '$check' for $pkg" >&2; exit 2 ;;
    esac
}

# scan: fills need (missing packages) and found (their evidence paths)
scan() {
    need=() found=()
    local group pkg check g p
    local arch
    arch=$(dpkg --print-architecture 2>/dev/null || echo unknown)
    while read -r group pkg check; do
        [ -n "$group" ] || continue
        case $group in *@*) [ "${group#*@}" = "$arch" ] || continue; group=${group%@*} ;; esac
        for g in "${groups[@]}"; do
            [ "$g" = "$group" ] || continue
            if p=$(evidence "$pkg" "$check") && [ -n "$p" ]; then
                found+=("$p")
            else
                need+=("$pkg")
            fi
        done
    done <<<"$PACKAGES"
}

scan
if [ ${#need[@]} -gt 0 ]; then
    cmd="apt-get update && apt-get install -y ${need[*]}"
    echo "dpbench: missing Debian packages: ${need[*]}" >&2
    if ! command -v apt-get >/dev/null; then
        echo "dpbench: no apt-get here: install the equivalents of ${need[*]} by hand" >&2
        exit 1
    elif [ "$(id -u)" -eq 0 ]; then
        sudo=""
    elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
        sudo="sudo"
    else
        echo "dpbench: install them with: sudo sh -c '$cmd'" >&2
        exit 1
    fi
    echo "dpbench: installing them: $cmd" >&2
    wait=(-o DPkg::Lock::Timeout=600) # another apt-get may be running
    $sudo apt-get "${wait[@]}" update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get "${wait[@]}" install -y -qq --no-install-recommends "${need[@]}" >&2
    missing=("${need[@]}")
    scan
    if [ ${#need[@]} -gt 0 ]; then
        echo "dpbench: installed ${missing[*]} but still cannot find ${need[*]}" >&2
        exit 1
    fi
fi
if [ -n "$found_file" ]; then
    # the Makefile lists these paths as prerequisites: a ':' or a blank would
    # break it (a multi-arch package's dpkg list is PACKAGE:ARCH.list)
    for p in "${found[@]}"; do
        case $p in *[:[:space:]]*)
            echo "install-deps.sh: '$p' cannot be a make prerequisite: give its package a pc:, cmd: or file: check" >&2
            exit 2 ;;
        esac
    done
    printf '%s\n' "${found[@]}" >"$found_file"
fi
exit 0
