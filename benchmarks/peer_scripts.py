"""The shared peer scripts (../shared/peers/), loaded as modules and run as their own command lines would, so
a benchmark can wrap a piece of them (a chunker, the llama.cpp model) and leave the rest unchanged."""

from __future__ import annotations

import contextlib
import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

SHARED = Path(__file__).resolve().parents[2] / "shared"
PEERS = SHARED / "peers"


def load(name: str) -> ModuleType:
    """The peer script `name` (file stem) as a fresh module."""
    path = PEERS / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"cannot load the peer script {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@contextlib.contextmanager
def command_line(argv: list[str]) -> Iterator[None]:
    """`sys.argv` as the peer's own command line, for its `main()`."""
    saved = sys.argv
    sys.argv = argv
    try:
        yield
    finally:
        sys.argv = saved
