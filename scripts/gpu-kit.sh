#!/usr/bin/env bash
# Packs a prebuilt dpbench for a GPU machine that has the NVIDIA driver and a
# CUDA runtime but neither network access nor the Debian libraries dpbench
# links (libyaml, cJSON, OpenBLAS, cmocka, libjpeg, libpng): builds here,
# then copies the binaries and those shared libraries into .gpu-kit/
# (git-ignored, about 40 MB), with BUILD saying which CUDA it was built with.
# There, next to the same sources:
#   DPBENCH_KIT=.gpu-kit scripts/gpu-bench.sh
# runs the GPU benchmark without building. CUDA's own libraries (cudart,
# cuBLAS, the driver's libcuda, NCCL) come from the GPU machine: dpbench
# opens them at run time through its rpath ($CUDA_HOME/lib64),
# LD_LIBRARY_PATH or DPBENCH_CUDART / DPBENCH_CUBLAS / DPBENCH_LIBCUDA /
# DPBENCH_NCCL. So that machine needs the CUDA major this kit was built with
# (libcudart.so.N, libcublas.so.N) and a driver for it (CUDA 13: R580 or
# later): gpu-bench.sh checks the driver first, and dpbench names what is
# missing. A machine with an older driver needs a kit packed with that CUDA
# major's toolkit (CUDA_HOME=/usr/local/cuda-12.8 scripts/gpu-kit.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
kit=.gpu-kit
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
make -s CUDA_HOME="$CUDA_HOME" dpbench build/tests/gpu_test
rm -rf "$kit"
mkdir -p "$kit/bin" "$kit/lib"
cp dpbench build/tests/gpu_test "$kit/bin/"
# every shared library the two binaries load, but the C library's own and CUDA's
ldd dpbench build/tests/gpu_test | awk '/=> \//{print $3}' | sort -u |
    grep -vE '/(libc|libm|libpthread|libdl|librt|ld-linux[^/]*|libgcc_s|libcuda|libcudart|libcublas[^/]*|libnccl)\.so' |
    while read -r lib; do cp -L "$lib" "$kit/lib/"; done
{
    echo "cuda $("$CUDA_HOME/bin/nvcc" --version | sed -n 's/.*release \([0-9]*\.[0-9]*\).*/\1/p')"
    echo "commit $(git describe --always --dirty 2>/dev/null || echo unknown)"
    echo "kernels $(cat build/cuda-archs 2>/dev/null)"
} >"$kit/BUILD"
cat "$kit/BUILD"
du -sh "$kit"
ls "$kit/lib"
