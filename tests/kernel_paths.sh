#!/usr/bin/env bash
# The numerical unit tests on every kernel path this CPU can execute, as other
# machines would take them (REFERENCE.md section 8): Debian's OpenBLAS picks
# its kernels by CPU at run time (OPENBLAS_CORETYPE forces a set), libxsmm
# generates code for the CPU it finds (LIBXSMM_TARGET forces an instruction
# set), and a user's own CFLAGS reorder floating-point work (a build with
# -O3 -march=native -ffp-contract=fast, made by `make test-kernels`).
#
#   tests/kernel_paths.sh [--native DIR] TEST_BINARY...
#
# Each binary runs with the step's library forced (DPBENCH_TEST_BLAS, so that
# nothing depends on what parallel.blas=auto picks): OpenBLAS under each core
# type of this architecture (x86-64 or arm64) whose instructions this CPU has,
# libxsmm under each target it has (x86-64 only);
# --native DIR runs DIR/<binary> too (OpenBLAS and libxsmm as found). A core
# type or target the CPU lacks, or one the library does not take (it reports
# running another), is skipped with the reason. Prints one line per path and
# "kernels: N passed, N failed, N skipped" (tests passed and failed; paths
# skipped).
set -u
native=""
if [ "${1:-}" = "--native" ]; then native=$2; shift 2; fi
[ $# -gt 0 ] || { echo "usage: $0 [--native DIR] TEST_BINARY..." >&2; exit 2; }

# hwcap_flags: arm64's instruction-set extensions, by their /proc/cpuinfo
# names, from the aux vector's AT_HWCAP and AT_HWCAP2 bits as the dynamic
# loader prints them: qemu-user fills the aux vector for its guest, while
# /proc/cpuinfo under it is the host's
hwcap_flags() {
    local auxv hw hw2 out="" bit
    auxv=$(LD_SHOW_AUXV=1 /bin/true)
    hw=$(awk '$1 == "AT_HWCAP:" {print $2}' <<<"$auxv")
    hw2=$(awk '$1 == "AT_HWCAP2:" {print $2}' <<<"$auxv")
    hw=$((16#${hw#0x})) hw2=$((16#${hw2#0x}))
    for bit in 1:asimd 8:atomics 20:asimddp 22:sve; do
        [ $((hw >> ${bit%%:*} & 1)) -eq 0 ] || out+=" ${bit#*:}"
    done
    for bit in 1:sve2 14:bf16; do
        [ $((hw2 >> ${bit%%:*} & 1)) -eq 0 ] || out+=" ${bit#*:}"
    done
    echo "${out# }"
}

# This CPU's flags and OpenBLAS's core types for its architecture, each with
# the instructions its kernels use (the names OPENBLAS_CORETYPE takes and
# OPENBLAS_VERBOSE=2 reports as "Core: NAME")
case $(uname -m) in
x86_64)
    flags=" $(grep -m1 '^flags' /proc/cpuinfo | cut -d: -f2) "
    cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')
    CORE_TYPES='Prescott pni
Nehalem ssse3 sse4_1 sse4_2
Sandybridge avx
Haswell avx2 fma
Zen avx2 fma
SkylakeX avx512f avx512dq avx512cd avx512bw avx512vl
Cooperlake avx512f avx512dq avx512cd avx512bw avx512vl avx512_bf16
SapphireRapids avx512f avx512bw avx512vl avx512_bf16 avx512_fp16 amx_tile amx_bf16' ;;
aarch64)
    # Debian's 0.3.21 builds the armv8.1-a and later types with the compiler
    # free to use LSE atomics, and neoversev1/neoversen2 with SVE kernels
    flags=" $(hwcap_flags) "
    cpu="aarch64 with${flags% }"
    CORE_TYPES='armv8 asimd
cortexa53 asimd
cortexa55 asimd atomics
cortexa57 asimd
cortexa72 asimd
cortexa73 asimd
falkor asimd
thunderx asimd
thunderx2t99 asimd atomics
thunderx3t110 asimd atomics
tsv110 asimd atomics
emag8180 asimd
neoversen1 asimd atomics
neoversev1 asimd atomics asimddp sve
neoversen2 asimd atomics asimddp sve sve2 bf16' ;;
*)
    flags=" " cpu=$(uname -m) CORE_TYPES="" ;;
esac
# missing FLAG...: the flags this CPU lacks
missing() {
    local f out=""
    for f in "$@"; do [[ $flags == *" $f "* ]] || out+=" $f"; done
    echo "${out# }"
}
# run LABEL WANT_RE ENV...: every binary with ENV set; WANT_RE (optional) must
# match the library's own report of the kernels it ran. Paths run up to one a
# core at once (numerical checks: no timing), each path's lines into its own
# file, printed in order at the end with a last line "#counts PASS FAIL SKIP".
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
n=0
run() {
    while [ "$(jobs -rp | wc -l)" -ge "$(nproc)" ]; do wait -n; done
    run_path "$@" >"$out/$n" 2>&1 </dev/null &
    n=$((n + 1))
}
run_path() {
    local label=$1 want=$2 t o rc p f got="" np=0 nf=0
    shift 2
    for t in "${BINS[@]}"; do
        o=$(env "$@" "$t" 2>&1); rc=$?
        p=$(sed -n 's/.*\[  PASSED  \] \([0-9]*\) test.*/\1/p' <<<"$o" | tail -1)
        f=$(sed -n 's/.*\[  FAILED  \] \([0-9]*\) test.*/\1/p' <<<"$o" | tail -1)
        np=$((np + ${p:-0})); nf=$((nf + ${f:-0}))
        if [ "$rc" -ne 0 ] && [ "${f:-0}" -eq 0 ]; then nf=$((nf + 1)); fi
        if [ "$rc" -ne 0 ]; then
            echo "$o" | grep -E 'ERROR|FAILED|error' | head -5 | sed "s|^|    $label ${t##*/}: |"
            echo "#first $label ${t##*/}: $(echo "$o" | grep -m1 -E '^ERROR|error' || echo "exit $rc")"
        fi
        [ -n "$want" ] && [ -z "$got" ] && got=$(grep -m1 -oE "$want" <<<"$o")
    done
    if [ -n "$want" ] && [ -z "$got" ]; then
        echo "  $label: skipped: the library did not report running it ($(echo "$o" | grep -m1 -E 'Core:|LIBXSMM_TARGET' || echo 'no report'))"
        echo "#counts 0 0 1"; return
    fi
    echo "  $label: $np passed, $nf failed"
    echo "#counts $np $nf 0"
}
# skipped LINE: a path not run, in its place among the others
skipped() {
    printf '%s\n#counts 0 0 1\n' "$1" >"$out/$n"
    n=$((n + 1))
}

BINS=("$@")
echo "# kernel paths on: $cpu"
[ -n "$CORE_TYPES" ] || skipped "  openblas: skipped: no core-type list for $(uname -m)"
while read -r core need; do
    [ -n "$core" ] || continue
    m=$(missing $need)
    if [ -n "$m" ]; then skipped "  openblas $core: skipped: this CPU lacks $m"; continue; fi
    run "openblas $core" "Core: $core" OPENBLAS_CORETYPE="$core" OPENBLAS_VERBOSE=2 DPBENCH_TEST_BLAS=openblas
done <<<"$CORE_TYPES"
# libxsmm targets (wsm = SSE4.2, snb = AVX, hsw = AVX2, skx = AVX-512)
# built in: the library's environment names are in the binary (linked statically)
if ! grep -qa LIBXSMM_TARGET "${BINS[0]}"; then
    skipped "  libxsmm: skipped: not built in (no libxsmm-dev, or XSMM=0)"
else
    while read -r target need; do
        m=$(missing $need)
        if [ -n "$m" ]; then skipped "  libxsmm $target: skipped: this CPU lacks $m"; continue; fi
        run "libxsmm $target" "LIBXSMM_TARGET: $target" LIBXSMM_TARGET="$target" LIBXSMM_VERBOSE=1 \
            DPBENCH_TEST_BLAS=libxsmm
    done <<'EOF'
wsm sse4_2
snb avx
hsw avx2 fma
skx avx512f avx512cd avx512dq avx512bw avx512vl
EOF
fi
if [ -n "$native" ]; then
    NB=()
    for t in "$@"; do NB+=("$native/${t##*/}"); done
    BINS=("${NB[@]}")
    run "-O3 -march=native -ffp-contract=fast, openblas" "" DPBENCH_TEST_BLAS=openblas
    if grep -qa LIBXSMM_TARGET "${BINS[0]}"; then
        run "-O3 -march=native -ffp-contract=fast, libxsmm" "" DPBENCH_TEST_BLAS=libxsmm
    fi
fi
wait
pass=0 fail=0 skip=0 first=""
for ((k = 0; k < n; k++)); do
    grep -v '^#' "$out/$k"
    read -r p f sk < <(sed -n 's/^#counts //p' "$out/$k")
    pass=$((pass + ${p:-0})) fail=$((fail + ${f:-1})) skip=$((skip + ${sk:-0}))
    [ -n "$first" ] || first=$(sed -n 's/^#first //p' "$out/$k" | head -1)
done
[ -n "$first" ] && echo "first failure: $first"
echo "kernels: $pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
