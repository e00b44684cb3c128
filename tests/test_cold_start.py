"""What a command that answers no question must not import: `hopgraph methods`, `--help` and the argument
checks start in about a second because torch, chromadb, sentence-transformers, spaCy and llama.cpp load only
where a command uses them (benchmarks/cold_start.py measures the seconds; this keeps the property).

Each check runs in a fresh interpreter: this test session has long since imported all of them.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("torch", "chromadb", "sentence_transformers", "transformers", "spacy", "llama_cpp", "langgraph")


def heavy_modules_after(code: str) -> list[str]:
    """The HEAVY packages a fresh interpreter has imported after running `code`."""
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)))"
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=120, check=True
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize(
    "code",
    [
        "import hopgraph.cli",  # every command's module: its help texts and argument types
        "import hopgraph",  # the package's front door names load on first use
        "from graphs.registry import METHODS, extras_for; extras_for('chainrag')",
        "from hopgraph.settings import Settings; Settings()",
    ],
)
def test_starting_a_command_imports_no_model_library(code: str) -> None:
    assert heavy_modules_after(code) == []


def test_the_methods_command_lists_every_method_without_building_one() -> None:
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "hopgraph", "methods"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    from graphs.registry import METHODS

    assert done.stdout.split() == sorted(METHODS)
    imported = {line.split("|")[-1].strip() for line in done.stderr.splitlines() if "|" in line}
    assert imported.isdisjoint(HEAVY), sorted(imported & set(HEAVY))


def test_a_front_door_name_still_loads_on_use() -> None:
    """`from hopgraph import build_graph` gives the API's own function (PEP 562), and an unknown name is
    an AttributeError as for any module."""
    import hopgraph
    import hopgraph.api

    assert hopgraph.build_graph is hopgraph.api.build_graph
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        hopgraph.nothing_here  # noqa: B018
