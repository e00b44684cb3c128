"""TreeHop end to end with the shipped checkpoint, the real embedded LLM as generator, real Chroma and
MiniLM, and SQLite checkpoints; plus the shipped checkpoint refused for another embedder (no LLM)."""

from __future__ import annotations

import pytest

from evals.metrics import exact_match
from graphs.treehop.model import CheckpointError, load_checkpoint
from hopgraph import Settings, build_graph
from hopgraph.providers import SHIPPED_TREEHOP
from tests.test_naive_local import GOLD_TITLES, QUESTION


@pytest.mark.llm
def test_treehop_searches_the_tree_then_answers_from_the_sample_corpus(
    settings: Settings, sample_index: str
) -> None:
    graph = build_graph("treehop", settings)
    config = {"configurable": {"thread_id": "treehop-e2e"}}
    out = graph.invoke({"question": QUESTION}, config, context={"index": sample_index, "top_k": 3, "hops": 2})

    history = list(graph.get_state_history(config))
    ran = [step for snapshot in reversed(history) for step in snapshot.next]
    assert ran == ["__start__", "embed", "hop", "hop", "generate"]
    tree = out["tree"]
    assert [node["hop"] for node in tree] == [1] * 3 + [2] * 9  # K = 3 chunks for each of 3 branches
    assert sum(node["status"] == "last_hop" for node in tree) <= 3
    assert {node["status"] for node in tree} <= {"expanded", "last_hop", "redundant", "layer_top_k"}
    kept = [node["chunk_id"] for node in tree if node["status"] in ("expanded", "last_hop")]
    assert kept == [item["id"] for item in out["evidence"]]
    assert {item["title"] for item in out["evidence"]} & GOLD_TITLES
    assert exact_match(out["answer"], ["Cybertruck", "Tesla Cybertruck"]) == 1.0, out["answer"]
    assert [usage["node"] for usage in out["usage"]] == ["generate"] * len(out["usage"])


def test_the_shipped_checkpoint_is_for_minilm_and_refused_for_another_embedder() -> None:
    assert load_checkpoint(SHIPPED_TREEHOP, "all-MiniLM-L6-v2", 384).card.dimension == 384
    with pytest.raises(CheckpointError, match=r"all-MiniLM-L6-v2 \(384 dimensions\).*hopgraph train treehop"):
        load_checkpoint(SHIPPED_TREEHOP, "BAAI/bge-m3", 1024)
