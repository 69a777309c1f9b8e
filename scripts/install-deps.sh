#!/usr/bin/env bash
# Makes sure the Debian packages dpbench builds and tests with are installed:
# libyaml (config), OpenBLAS (CPU math), cJSON (results), cmocka (tests), and
# for `make test` clang with its sanitizer runtimes and valgrind.
# Installs what is missing when run as root (or with sudo), otherwise prints
# the exact command and fails.
set -euo pipefail

need=()
check() { # header package
    [ -e "/usr/include/$1" ] || [ -e "/usr/include/x86_64-linux-gnu/$1" ] \
        || [ -e "/usr/include/aarch64-linux-gnu/$1" ] || need+=("$2")
}
check yaml.h libyaml-dev
check cblas.h libopenblas-dev
check cjson/cJSON.h libcjson-dev
check cmocka.h libcmocka-dev
tool() { command -v "$1" >/dev/null || need+=("$2"); } # program package
tool clang clang
tool valgrind valgrind
# the sanitizer and libFuzzer runtimes clang links against
[ -e "$(clang -print-file-name=libclang_rt.fuzzer-x86_64.a 2>/dev/null)" ] ||
    [ "$(uname -m)" != x86_64 ] || need+=(libclang-rt-dev)
[ ${#need[@]} -eq 0 ] && exit 0

cmd="apt-get update && apt-get install -y ${need[*]}"
echo "dpbench: missing Debian packages: ${need[*]}" >&2
if [ "$(id -u)" -eq 0 ]; then
    sudo=""
elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
    sudo="sudo"
else
    echo "dpbench: install them with: sudo sh -c '$cmd'" >&2
    exit 1
fi
echo "dpbench: installing them: $cmd" >&2
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}" >&2
