#!/usr/bin/env bash
# Packs a prebuilt dpbench for a GPU machine that has the CUDA toolkit but
# neither network access nor the Debian libraries dpbench links (libyaml,
# cJSON, OpenBLAS, cmocka): builds here, then copies the binaries and those
# shared libraries into .gpu-kit/ (git-ignored, about 40 MB). There:
#   DPBENCH_KIT=.gpu-kit scripts/gpu-bench.sh
# runs the GPU benchmark without building. CUDA's own libraries (cudart,
# cuBLAS) come from the GPU machine's toolkit: dpbench opens them at run time
# through its rpath ($CUDA_HOME/lib64), LD_LIBRARY_PATH or DPBENCH_CUDART /
# DPBENCH_CUBLAS.
set -euo pipefail
cd "$(dirname "$0")/.."
kit=.gpu-kit
make -s dpbench build/tests/gpu_test
rm -rf "$kit"
mkdir -p "$kit/bin" "$kit/lib"
cp dpbench build/tests/gpu_test "$kit/bin/"
# every shared library the two binaries load, but the C library's own and CUDA's
ldd dpbench build/tests/gpu_test | awk '/=> \//{print $3}' | sort -u |
    grep -vE '/(libc|libm|libpthread|libdl|librt|ld-linux[^/]*|libgcc_s|libcudart|libcublas[^/]*)\.so' |
    while read -r lib; do cp -L "$lib" "$kit/lib/"; done
du -sh "$kit"
ls "$kit/lib"
