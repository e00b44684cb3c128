#!/usr/bin/env bash
# Debian's chromium, for the tests that open the explorer page in a real headless browser (no driver, no
# browser download: the package registry only). Skipped when already installed. A failed install does not
# stop the suite: the browser tests then fail alone, saying what is missing.
set -uo pipefail
if ! command -v chromium >/dev/null; then
  echo "hopgraph: installing Debian's chromium for the browser tests"
  SUDO=$([ "$(id -u)" = 0 ] || echo sudo)
  if ! { $SUDO apt-get update -q && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q \
      --no-install-recommends chromium; }; then
    echo "hopgraph: could not install chromium; the browser tests will fail" >&2
  fi
fi
exit 0
