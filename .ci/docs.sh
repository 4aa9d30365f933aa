#!/usr/bin/env bash
# CI: build the documentation site with the gallery executed; any Sphinx warning fails the build.
# Installs the "docs" extra of pyproject.toml: only its tools when rffkern is already importable
# (CI installed it before; or PYTHONPATH=python with the compiled core there), else with rffkern.
# Usage: bash .ci/docs.sh   (PYTHON=... to choose the interpreter; RFFKERN_DOCS_FAST=0 for full sizes)
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
start=$(date +%s)
if "$PYTHON" -c "import rffkern" 2>/dev/null; then
    mapfile -t reqs < <("$PYTHON" - <<'PY'
import ast, re  # the docs extra of pyproject.toml (no tomllib before Python 3.11)
text = open("pyproject.toml", encoding="utf-8").read()
print("\n".join(ast.literal_eval(re.search(r"(?m)^docs = (\[.*\])$", text).group(1))))
PY
)
    "$PYTHON" -m pip install --quiet "${reqs[@]}"
else
    "$PYTHON" -m pip install --quiet ".[docs]"
fi
export RFFKERN_DOCS_FAST="${RFFKERN_DOCS_FAST:-1}"   # the gallery's smaller sizes
export MPLBACKEND=Agg
rm -rf docs/_build docs/auto_examples docs/generated
"$PYTHON" -m sphinx -W --keep-going -b html docs docs/_build/html
echo "docs.sh: built docs/_build/html/index.html in $(( $(date +%s) - start )) s"
