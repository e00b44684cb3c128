"""The shared peer scripts (../shared/peers/), loaded as modules and run as their own command lines would, so
a benchmark can wrap a piece of them (a chunker, the llama.cpp model) and leave the rest unchanged.

    python -m benchmarks.peer_scripts CORPUS QUERIES SCRIPT [SCRIPT ...]

runs each SCRIPT (a file name in ../shared/peers/) as `python SCRIPT CORPUS QUERIES` would, one after
another in one interpreter, each followed by a line END_OF_PEER + SCRIPT: the BM25 peer imports the dense
peer's module (chromadb, sentence-transformers and torch), so a process of its own paid those imports
again (about 10 s of CPU).
"""

from __future__ import annotations

import contextlib
import importlib.util
import runpy
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

SHARED = Path(__file__).resolve().parents[2] / "shared"
PEERS = SHARED / "peers"
END_OF_PEER = "hopgraph: end of peer "


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


def run_in_turn(scripts: list[str], corpus: str, queries: str) -> None:
    """Each peer script on CORPUS and QUERIES as its own command line runs it, a line naming it after it."""
    for script in scripts:
        with command_line([str(PEERS / script), corpus, queries]):
            runpy.run_path(str(PEERS / script), run_name="__main__")
        print(END_OF_PEER + script, flush=True)


if __name__ == "__main__":
    run_in_turn(sys.argv[3:], sys.argv[1], sys.argv[2])
