"""One registry: graphs.registry.METHODS is the list of methods, and what Studio serves follows it.

langgraph.json names the graphs `langgraph dev` loads and hopgraph/studio.py exports them; both must
name exactly the registry's methods. Importing hopgraph.studio compiles every graph (well under a second
once the registry is imported) but loads no model: those load on a graph's first run.
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest
from langgraph.graph.state import CompiledStateGraph

from graphs.registry import METHODS

REPO = Path(__file__).resolve().parents[1]


def _langgraph_graphs() -> dict[str, str]:
    return json.loads((REPO / "langgraph.json").read_text())["graphs"]


def test_langgraph_json_lists_exactly_the_registry_methods() -> None:
    listed = set(_langgraph_graphs())
    assert listed == set(METHODS), (
        f"in the registry, not in langgraph.json: {sorted(set(METHODS) - listed)}; "
        f"in langgraph.json, not in the registry: {sorted(listed - set(METHODS))}"
    )


def test_every_langgraph_json_graph_is_its_studio_export() -> None:
    wrong = {
        name: spec for name, spec in _langgraph_graphs().items() if spec != f"./hopgraph/studio.py:{name}"
    }
    assert not wrong, f"entries not pointing at ./hopgraph/studio.py:<name>: {wrong}"


def test_studio_exports_one_graph_per_method_compiled_without_a_checkpointer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # studio reads Settings() at import: keep a hopgraph.toml in the working directory out of it
    monkeypatch.setenv("HOPGRAPH_CONFIG", "")
    studio = importlib.import_module("hopgraph.studio")
    assert list(studio.__all__) == list(METHODS)
    for name in METHODS:
        graph = getattr(studio, name, None)
        assert isinstance(graph, CompiledStateGraph), f"hopgraph.studio exports no graph {name!r}"
        assert graph.name == name
        assert graph.checkpointer is None, f"{name}: the server brings its own checkpointer"
