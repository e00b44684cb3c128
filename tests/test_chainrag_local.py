"""ChainRAG end to end at its defaults with the real embedded LLM, a real sentence graph (spaCy, MiniLM,
Chroma) and SQLite checkpoints, on the two-hop corpus (tests/two_hop.py): the second sub-question, rewritten
with the first one's answer, is seeded at the paragraph that answers."""

from __future__ import annotations

import pytest

from evals.metrics import exact_match
from hopgraph import Settings, build_graph, index_corpus
from tests import two_hop
from tests.scripted import checkpointed_path


@pytest.mark.llm
def test_chainrag_rewrites_the_second_sub_question_with_the_first_answer_and_reaches_the_second_hop(
    settings: Settings,
) -> None:
    index_corpus(two_hop.CORPUS, "two_hop-chainrag", settings, method="chainrag")
    graph = build_graph("chainrag", settings)
    config = {"configurable": {"thread_id": "chainrag-e2e"}}
    out = graph.invoke({"question": two_hop.BRIDGE}, config, context={"index": "two_hop-chainrag"})

    history = list(graph.get_state_history(config))
    ran = checkpointed_path(history)
    # the greedy path (pinned): two sub-questions, each prepared (the second rewritten), seeded, expanded
    # and judged sufficient before its answer, then the integration
    per_sub_question = ["prepare", "seed", "expand", "judge", "answer_sub"]
    assert ran == ["__start__", "decompose", *per_sub_question * 2, "integrate"]
    state = history[0].values
    first, second = state["solved"]
    assert first["question"] == first["asked"] and "dunmore" in first["answer"].lower(), first
    # the rewrite: the second sub-question refers back ("he"); prepare replaced that with the first answer
    assert second["question"] != second["asked"] and "dunmore" in second["question"].lower(), second
    assert "dunmore" not in second["asked"].lower()
    assert first["answered"] and second["answered"] and out["fallbacks"] == []

    # the second sub-question's sentences are led by the paragraph about the bridge entity, at hop 2
    assert second["read"][0].startswith(two_hop.BRIDGE_SECOND + "#")
    assert 2 in two_hop.hops_of(out["evidence"], two_hop.BRIDGE_SECOND)
    assert 1 in two_hop.hops_of(out["evidence"], two_hop.BRIDGE_FIRST)

    nodes = [usage["node"] for usage in out["usage"]]
    assert nodes == ["decompose", "judge", "answer_sub", "prepare", "judge", "answer_sub", "integrate"]
    assert exact_match(out["answer"], [two_hop.BRIDGE_ANSWER]) == 1.0, (out["answer"], state["solved"])
    assert out["answer_outcome"] == "answered"
