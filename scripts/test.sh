#!/usr/bin/env bash
# Set up (first run only), then lint and run the whole test suite, real models included.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/ruff check .
.venv/bin/python -m pytest -q -p no:cacheprovider "$@"
