"""Every per-run parameter says what it means in the JSON schema Studio renders (the context form).

Studio shows a field's `description` beside it; without one a form of "Ec Edges" and "Top K" explains
nothing. The schema is the compiled graph's `get_context_jsonschema()`, what `langgraph dev` serves.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from graphs.registry import METHODS, builder

NO_SERVICES = SimpleNamespace(
    llm=None, indexes=None, embedder=None, reranker=None, nlp=None, treehop_model=None
)
"""Builders only hand services to node constructors, so a graph compiles (for its schema) without them."""


def context_properties(method: str) -> dict[str, Any]:
    schema = builder(method)(NO_SERVICES).compile().get_context_jsonschema()
    assert schema is not None, f"{method} has no context schema"
    return schema["properties"]


@pytest.mark.parametrize("method", sorted(METHODS))
def test_every_context_field_has_a_description(method: str) -> None:
    properties = context_properties(method)
    assert properties
    undescribed = [name for name, prop in properties.items() if not prop.get("description", "").strip()]
    assert not undescribed, f"{method}: no description for {undescribed}"


@pytest.mark.parametrize("method", sorted(METHODS))
def test_every_count_has_a_least_and_a_greatest_value_and_no_field_names_a_file(method: str) -> None:
    """A count is spent on passages, LLM calls or tokens, and anyone reaching the Studio server may set it
    (issue 40 item 3): each declares both bounds, which Studio's form shows. No field names a file for the
    server to load (TreeHop's checkpoint is a setting)."""
    properties = context_properties(method)
    unbounded = [
        name
        for name, prop in properties.items()
        if prop.get("type") == "integer" and not {"minimum", "maximum"} <= set(prop)
    ]
    assert not unbounded, f"{method}: no least or greatest value for {unbounded}"
    assert "checkpoint" not in properties


def test_top_k_says_what_it_counts_for_each_method() -> None:
    def top_k(method: str) -> str:
        return context_properties(method)["top_k"]["description"].lower()

    assert "passages retrieved for the question" in top_k("naive")
    assert "seed sentences per sub-question" in top_k("chainrag")


@pytest.mark.parametrize("method", sorted(METHODS))
def test_every_node_can_reach_the_end(method: str) -> None:
    """From every node some path reaches END: no loop without an exit, no router target missing (the
    drawn graph holds each router's targets from its path list)."""
    drawn = builder(method)(NO_SERVICES).compile().get_graph()
    successors: dict[str, set[str]] = {}
    for edge in drawn.edges:
        successors.setdefault(edge.source, set()).add(edge.target)
    reaching = {"__end__"}
    changed = True
    while changed:
        changed = False
        for node, targets in successors.items():
            if node not in reaching and targets & reaching:
                reaching.add(node)
                changed = True
    stuck = sorted(set(drawn.nodes) - reaching)
    assert not stuck, f"{method}: no path to END from {stuck}"
