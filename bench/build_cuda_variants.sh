#!/usr/bin/env bash
# Build variants of the module rffkern._cuda for Python 3.12 on this machine (nvcc, no GPU needed),
# each with its own -D flags (the RFFKERN_CUDA_* tile macros of csrc/cuda/cos_kernels_cuda.cu), so a
# GPU call can time them all with bench/cuda_tune.py without building there.
#   bash bench/build_cuda_variants.sh OUTDIR NAME="FLAGS" [NAME="FLAGS" ...]
# PY312 (default: python3.12) must have its headers; pybind11's headers come from PYBIND11_INC;
# CUDA_HOME defaults to /usr/local/cuda.
set -euo pipefail
cd "$(dirname "$0")/.."
out=$1
shift
PY312=${PY312:-python3.12}
PYINC=$("$PY312" -c "import sysconfig; print(sysconfig.get_paths()['include'])")
EXT=$("$PY312" -c "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))")
PBINC=${PYBIND11_INC:-$(python3 -c "import pybind11; print(pybind11.get_include())")}
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
CUDA_LIB=$CUDA_HOME/lib64
mkdir -p "$out"
g++ -O2 -std=c++17 -fPIC -fvisibility=hidden -Icsrc -I"$PBINC" -I"$PYINC" -I"$CUDA_HOME/include" \
    -c csrc/bindings/bind_cuda.cpp -o "$out/bind_cuda.o"
for spec in "$@"; do
    name=${spec%%=*}
    flags=${spec#*=}
    mkdir -p "$out/$name"
    # shellcheck disable=SC2086
    nvcc -O3 -std=c++17 -arch=sm_90 -Xcompiler=-fPIC,-fvisibility=hidden -Icsrc $flags \
        -c csrc/cuda/cos_kernels_cuda.cu -o "$out/$name/kernels.o"
    g++ -shared -o "$out/$name/_cuda$EXT" "$out/bind_cuda.o" "$out/$name/kernels.o" \
        -L"$CUDA_LIB" -lcudart_static -ldl -lrt -lpthread
    echo "built $out/$name/_cuda$EXT ($flags)"
done
