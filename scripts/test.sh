#!/usr/bin/env bash
# Set up (first run only), then lint and run the whole test suite, real models included.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/chromium.sh
.venv/bin/ruff check .
# --durations=30: CI prints the 30 slowest tests, so where the minutes go is visible in every run
.venv/bin/python -m pytest -q -p no:cacheprovider --durations=30 "$@"
