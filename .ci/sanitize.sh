#!/usr/bin/env bash
# CI: build the core and module with AddressSanitizer + UBSan (RFFKERN_SANITIZE=ON) into their own
# build dir and install target, then run the compiled-kernel tests against that build.
# Usage: bash .ci/sanitize.sh   (PYTHON=... to choose the interpreter; default python3)
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
TARGET=${RFFKERN_ASAN_TARGET:-/tmp/rffkern-asan}
BUILD_DIR=${RFFKERN_ASAN_BUILD:-/tmp/build-asan}
start=$(date +%s)

# what --no-build-isolation needs, and the test dependencies (a fresh machine has neither)
"$PYTHON" -m pip install --quiet scikit-build-core pybind11 ninja cmake numpy scipy scikit-learn \
    pytest hypothesis threadpoolctl
rm -rf "$TARGET"
"$PYTHON" -m pip install --quiet --no-build-isolation --no-deps --target "$TARGET" \
    -C build-dir="$BUILD_DIR" -C cmake.define.RFFKERN_SANITIZE=ON .

# The interpreter is not instrumented: the ASan runtime must be loaded first. Python's allocator
# keeps memory to the end by design, so leak checks are off.
LD_PRELOAD="$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libubsan.so)"
export LD_PRELOAD
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:strict_string_checks=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export PYTHONPATH="$TARGET${PYTHONPATH:+:$PYTHONPATH}"

core=$("$PYTHON" -c "import rffkern._core as c; print(c.__file__)")
case "$core" in
    "$TARGET"/*) echo "sanitize.sh: testing $core" ;;
    *) echo "sanitize.sh: tests would import $core, not the sanitized build in $TARGET" >&2; exit 1 ;;
esac

# The compiled-kernel tests (estimators are slow under ASan and add no kernel coverage). The two
# tests that assert wall-time ratios (GIL release, concurrent speed-up) measure nothing meaningful
# under instrumentation; the concurrent calls themselves still run in the agreement tests.
timeout 660 "$PYTHON" -m pytest -q -p no:cacheprovider \
    tests/test_kernels_reference.py tests/test_gradients.py tests/test_structured.py \
    tests/test_threads.py tests/test_input_validation.py tests/test_core_bindings.py tests/test_centered_rows.py \
    tests/test_backward_kernel.py \
    -k "not test_two_python_threads_run_features_concurrently and not test_gil_is_released_during_features"
echo "sanitize.sh: passed in $(( $(date +%s) - start )) s"
