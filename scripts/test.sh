#!/usr/bin/env bash
# Set up (first run only), then lint and run the whole test suite, real models included.
set -euo pipefail
cd "$(dirname "$0")/.."
# Debian's chromium installs while the set-up runs (apt waits on the mirror and dpkg, the set-up mostly on
# the compiler); its output is printed once both are done.
CHROMIUM_LOG=$(mktemp)
bash scripts/chromium.sh >"$CHROMIUM_LOG" 2>&1 &
CHROMIUM=$!
bash scripts/setup.sh
wait "$CHROMIUM"
cat "$CHROMIUM_LOG" && rm -f "$CHROMIUM_LOG"
.venv/bin/ruff check .
# Python keeps the bytecode it compiles (in __pycache__, which git ignores). A container that sets
# PYTHONDONTWRITEBYTECODE has every pytest worker compile hopgraph's modules and rewrite every test module
# again, and every `hopgraph` process a test starts compile what it imports: collecting the suite took 34 s
# of CPU against 21 s with the bytecode kept (one process, 2026-11-27).
unset PYTHONDONTWRITEBYTECODE
# -n 2 --dist loadgroup: two pytest-xdist workers, one per core; the tests marked `llm` share one xdist group
# (tests/conftest.py), so they run in turn on one worker while the other takes the rest. Tried against it on
# this 2-core machine (one run each, 2026-11-27, where this layout took 17.8 to 21.0 minutes): the real-model
# tests spread over both workers with one llama.cpp thread each (HOPGRAPH_LOCAL_N_THREADS=1, --dist load),
# 22.4 minutes; OpenMP's passive wait (OMP_WAIT_POLICY=PASSIVE), so llama.cpp's two threads do not spin
# while the other worker holds a core, 20.7 minutes. Neither is kept. Nor is (2026-11-28) running the tests
# not marked llm at nice 10: the real-model tests took 1,017 s on their worker against 1,158 (ChainRAG's 159 s
# against 245), but the rest, starved, 1,515 s against 876, and the suite 21.9 minutes.
# --durations=30: CI prints the 30 slowest tests, so where the minutes go is visible in every run
.venv/bin/python -m pytest -q -p no:cacheprovider -n 2 --dist loadgroup --durations=30 "$@"
