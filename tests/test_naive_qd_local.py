"""NaiveRAG w/ QD end to end with the real embedded LLM, real retrieval and real SQLite checkpoints."""

from __future__ import annotations

import pytest

from hopgraph import Settings, build_graph
from tests.test_naive_local import GOLD_TITLES, QUESTION


@pytest.mark.llm
def test_naive_qd_answers_each_sub_question_in_turn_then_integrates(
    settings: Settings, sample_index: str
) -> None:
    graph = build_graph("naive_qd", settings)
    config = {"configurable": {"thread_id": "naive-qd-e2e"}}
    out = graph.invoke({"question": QUESTION}, config, context={"index": sample_index, "top_k": 2})

    state = graph.get_state(config).values
    subs, solved = state["sub_questions"], state["solved"]
    assert 1 <= len(subs) <= 4 and [s["asked"] for s in solved] == subs
    assert all(s["question"] == s["asked"] for s in solved)  # never rewritten
    assert {item["hop"] for item in out["evidence"]} <= set(range(1, len(subs) + 1))
    assert {item["title"] for item in out["evidence"]} & GOLD_TITLES
    assert "cybertruck" in out["answer"].lower(), (out["answer"], solved)
    nodes = [usage["node"] for usage in out["usage"]]
    assert nodes[0] == "decompose" and nodes.count("answer_sub") == len(subs) and "integrate" in nodes

    history = list(graph.get_state_history(config))
    ran = [snapshot.next[0] for snapshot in reversed(history) if snapshot.next]
    assert ran == ["__start__", "decompose", *["prepare", "retrieve", "answer_sub"] * len(subs), "integrate"]
