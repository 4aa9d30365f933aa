#!/usr/bin/env bash
# CI: compile-only check of the CUDA backend (CI has no GPU): configure with RFFKERN_CUDA=ON and build
# the CUDA kernels (csrc/cuda/*.cu) and their module rffkern._cuda with warnings as errors, so a
# broken .cu file or binding fails CI. Nothing is run. Without nvcc it says so and passes.
# Usage: bash .ci/cuda_compile.sh   (PYTHON=... interpreter, default python3;
#        RFFKERN_CUDA_CI_ARCHS=... CUDA architectures, default 90; RFFKERN_CUDA_CI_BUILD=... build dir)
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
BUILD_DIR=${RFFKERN_CUDA_CI_BUILD:-/tmp/build-cuda-ci}
ARCHS=${RFFKERN_CUDA_CI_ARCHS:-90}

NVCC=$(command -v nvcc || true)
if [ -z "$NVCC" ] && [ -x /usr/local/cuda/bin/nvcc ]; then NVCC=/usr/local/cuda/bin/nvcc; fi
if [ -z "$NVCC" ]; then
    echo "cuda_compile.sh: SKIPPED: no nvcc on PATH or at /usr/local/cuda/bin/nvcc (the CUDA backend was not compiled)"
    exit 0
fi
start=$(date +%s)
echo "cuda_compile.sh: $("$NVCC" --version | tail -n 1), architectures $ARCHS"

# the configure step needs pybind11's CMake files, CMake >= 3.18 and ninja (a fresh machine may lack them)
"$PYTHON" -m pip install --quiet pybind11 cmake ninja
CMAKE=$("$PYTHON" -c "import cmake, os; print(os.path.join(cmake.CMAKE_BIN_DIR, 'cmake'))")
NINJA=$("$PYTHON" -c "import ninja, os; print(os.path.join(ninja.BIN_DIR, 'ninja'))")

rm -rf "$BUILD_DIR"
"$CMAKE" -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_MAKE_PROGRAM="$NINJA" -DCMAKE_BUILD_TYPE=Release \
    -DPython_EXECUTABLE="$(command -v "$PYTHON")" \
    -Dpybind11_DIR="$("$PYTHON" -m pybind11 --cmakedir)" \
    -DCMAKE_CUDA_COMPILER="$NVCC" -DCMAKE_CUDA_ARCHITECTURES="$ARCHS" \
    -DRFFKERN_CUDA=ON -DRFFKERN_WERROR=ON > "$BUILD_DIR.configure.log" 2>&1 \
    || { cat "$BUILD_DIR.configure.log"; exit 1; }
# only the CUDA targets: the CPU core and _core are built and tested by the rest of CI
"$CMAKE" --build "$BUILD_DIR" --target _cuda
echo "cuda_compile.sh: passed in $(( $(date +%s) - start )) s"
