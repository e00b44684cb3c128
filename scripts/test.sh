#!/usr/bin/env bash
# Set up (first run only), then lint and run the whole test suite, real models included.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/chromium.sh
.venv/bin/ruff check .
# -n 2 --dist loadgroup: two pytest-xdist workers, one per core; the tests marked `llm` share one xdist group
# (tests/conftest.py), so they run in turn on one worker while the other takes the rest.
# --durations=30: CI prints the 30 slowest tests, so where the minutes go is visible in every run
.venv/bin/python -m pytest -q -p no:cacheprovider -n 2 --dist loadgroup --durations=30 "$@"
