#!/usr/bin/env bash
# The main job on the embedded defaults: set up (first run only), index the bundled sample corpus and
# answer a multi-hop question over it with NaiveRAG, showing each step and the evidence it used.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/hopgraph demo "$@"
