#!/usr/bin/env bash
# Everything the CUDA backend needs checked on a GPU machine, in one call (a GPU lease is short and
# each start is slow): build with RFFKERN_CUDA=ON, the GPU tests, the CPU kernel tests against the
# same build, compute-sanitizer (memcheck, racecheck, initcheck) on the GPU tests, the benchmark.
#
#   bash bench/gpu_session.sh [build] [tests] [sanitize] [bench] [cpu]   (default: all five, in this order)
#
# Logs (build, tests, sanitize, bench), the bench's JSON and the built modules go to $OUT (default
# /tmp/gpu_session; at most 8 files come back from a device call): a later call with the modules
# in python/rffkern skips what is there. Each step prints its status, time and the end of its log.
# A step that fails does not stop the next one; the exit status is the number of failed steps.
# RFFKERN_BENCH_ARGS: extra arguments for bench/bench_cuda.py (e.g. "--s 1000 --repeats 3").
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/gpu_session}
mkdir -p "$OUT"
PY=${PYTHON:-python3}
BUILD=${RFFKERN_GPU_BUILD:-/tmp/build-gpu}
STEPS=${*:-build tests sanitize bench cpu}
export PYTHONPATH=$PWD/python:$PWD/tests PYTHONUNBUFFERED=1 OMP_NUM_THREADS=${OMP_NUM_THREADS:-8}
failed=0

step() {  # step NAME LOG SECONDS COMMAND...: run with a time limit, appending to $OUT/LOG.log
    local name=$1 log=$OUT/$2.log limit=$3 t0 rc
    shift 3
    t0=$(date +%s)
    echo "== $name: $*" >>"$log"
    if declare -F "$1" >/dev/null; then "$@" >>"$log" 2>&1; else timeout "$limit" "$@" >>"$log" 2>&1; fi
    rc=$?
    echo "== $name: rc=$rc in $(($(date +%s) - t0)) s"
    tail -n "${TAIL:-12}" "$log" | cut -c1-400
    [ "$rc" -eq 0 ] || failed=$((failed + 1))
}

has() { case " $STEPS " in *" $1 "*) return 0 ;; esac; return 1; }

{
    nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
    nvcc --version | tail -n 1
    $PY -c "import sys, numpy, torch, cupy; print(sys.version.split()[0], 'numpy', numpy.__version__, 'torch', torch.__version__, 'cupy', cupy.__version__)"
} 2>&1 | tee "$OUT/build.log"

build() {
    local targets="_cuda" ext
    ext=$($PY -c "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))")
    [ -f "python/rffkern/_core$ext" ] || targets="_core _cuda"
    echo "building $targets"
    cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPython_EXECUTABLE="$(command -v $PY)" \
        -Dpybind11_DIR="$($PY -m pybind11 --cmakedir)" -DRFFKERN_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
        -DRFFKERN_WERROR=ON &&
        cmake --build "$BUILD" --target $targets -j 16 &&
        for t in $targets; do cp "$BUILD/$t$ext" python/rffkern/ && cp "$BUILD/$t$ext" "$OUT/"; done
}

has build && step build build 400 build
if has tests; then
    step tests tests 420 $PY -m pytest tests/test_cuda.py -v -p no:cacheprovider --maxfail=20 --durations=5
fi
if has sanitize; then
    # PyTorch without its caching allocator: every tensor is its own cudaMalloc, so an access past
    # an array's end is past an allocation's end, which memcheck reports
    export PYTORCH_NO_CUDA_MEMORY_CACHING=1
    sel="torch and (large or reproducible or no_rows or written or (match_reference and f32))"
    step memcheck sanitize 300 compute-sanitizer --tool memcheck --error-exitcode 99 --print-limit 20 \
        $PY -m pytest tests/test_cuda.py -q -p no:cacheprovider -x -k "$sel" --hypothesis-seed=0
    step racecheck sanitize 240 compute-sanitizer --tool racecheck --error-exitcode 99 --print-limit 20 \
        $PY -m pytest tests/test_cuda.py -q -p no:cacheprovider -x -k "torch and (reproducible or no_rows)"
    step initcheck sanitize 240 compute-sanitizer --tool initcheck --error-exitcode 99 --print-limit 20 \
        $PY -m pytest tests/test_cuda.py -q -p no:cacheprovider -x -k "torch and (large and f32 or reproducible)"
    unset PYTORCH_NO_CUDA_MEMORY_CACHING
fi
if has bench; then
    # shellcheck disable=SC2086
    step bench bench 420 $PY bench/bench_cuda.py --json "$OUT/bench_cuda.json" ${RFFKERN_BENCH_ARGS:-}
    TAIL=40
    echo "== bench table"
    grep -E "^(features|predict|gram|device)" "$OUT/bench.log" | cut -c1-300
fi
if has cpu; then  # the CPU kernels' tests against this build's _core (the CUDA build must not change them)
    step cpu tests 200 $PY -m pytest tests/test_hostile_kernels.py tests/test_kernels_reference.py -q -p no:cacheprovider -x
fi
echo "== gpu_session: $failed failed step(s)"
exit "$failed"
