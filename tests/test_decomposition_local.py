"""Query decomposition end to end with the real embedded LLM, real retrieval and real SQLite checkpoints."""

from __future__ import annotations

import pytest

from hopgraph import Settings, build_graph
from tests.test_naive_local import GOLD_TITLES, QUESTION


@pytest.mark.llm
def test_decomposition_answers_from_the_branches_aggregate_and_checkpoints_every_branch(
    settings: Settings, sample_index: str
) -> None:
    graph = build_graph("decomposition", settings)
    config = {"configurable": {"thread_id": "decomposition-e2e"}}
    context = {"index": sample_index, "top_k": 2, "max_sub_questions": 3}
    out = graph.invoke({"question": QUESTION}, config, context=context)

    subs = graph.get_state(config).values["sub_questions"]
    assert 1 <= len(subs) <= 3 and all(sub.strip() for sub in subs)
    assert out["stats"]["sub_questions"] == len(subs)
    hops = [item["hop"] for item in out["evidence"]]
    assert hops == sorted(hops) and set(hops) <= set(range(1, len(subs) + 1))
    assert len({item["id"] for item in out["evidence"]}) == len(out["evidence"]) == out["stats"]["passages"]
    assert {item["title"] for item in out["evidence"]} & GOLD_TITLES
    assert "cybertruck" in out["answer"].lower(), out["answer"]
    assert out["usage"][0]["node"] == "decompose" and out["usage"][0]["role"] == "decomposer"
    assert out["usage"][-1]["node"] == "generate" and out["usage"][-1]["echoes"] == 0

    history = list(graph.get_state_history(config))
    ran = [tuple(snapshot.next) for snapshot in reversed(history)]
    branches = ("retrieve",) * len(subs)  # one step holds every branch, each checkpointed as a task
    assert ran == [("__start__",), ("decompose",), branches, ("aggregate",), ("generate",), ()]
