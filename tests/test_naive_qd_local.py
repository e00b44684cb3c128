"""NaiveRAG w/ QD end to end at its defaults with the real embedded LLM, real retrieval and real SQLite
checkpoints, on the two-hop corpus (tests/two_hop.py): sub-questions answered in turn, the second reaching
the second hop."""

from __future__ import annotations

import pytest

from evals.metrics import exact_match
from hopgraph import Settings, build_graph
from tests.two_hop import BRIDGE, BRIDGE_ANSWER, BRIDGE_SECOND, bridge_hops


@pytest.mark.llm
def test_naive_qd_answers_each_sub_question_in_turn_then_integrates(
    settings: Settings, two_hop_index: str
) -> None:
    graph = build_graph("naive_qd", settings)
    config = {"configurable": {"thread_id": "naive-qd-e2e"}}
    out = graph.invoke({"question": BRIDGE}, config, context={"index": two_hop_index})

    state = graph.get_state(config).values
    subs, solved = state["sub_questions"], state["solved"]
    # the greedy path (pinned): two sub-questions, the designer, then where "he" was born, each answered
    assert len(subs) == 2 and [s["asked"] for s in solved] == subs
    assert all(s["question"] == s["asked"] and s["answered"] for s in solved)  # never rewritten
    history = list(graph.get_state_history(config))
    ran = [snapshot.next[0] for snapshot in reversed(history) if snapshot.next]
    assert ran == ["__start__", "decompose", *["prepare", "retrieve", "answer_sub"] * len(subs), "integrate"]

    # the first sub-question's answer names the bridge entity, and the second's passages, at hop 2, hold
    # the paragraph about her that the question's own search misses
    assert "dunmore" in solved[0]["answer"].lower(), solved
    assert BRIDGE_SECOND + "#0" in solved[1]["read"] and BRIDGE_SECOND + "#0" not in solved[0]["read"]
    assert bridge_hops(out["evidence"]) == ({1}, {2})

    assert exact_match(out["answer"], [BRIDGE_ANSWER]) == 1.0, (out["answer"], solved)
    assert out["answer_outcome"] == "answered" and out["fallbacks"] == []
    nodes = [usage["node"] for usage in out["usage"]]
    assert nodes == ["decompose", "answer_sub", "answer_sub", "integrate"]
