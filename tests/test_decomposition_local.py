"""Query decomposition end to end at its defaults with the real embedded LLM, real retrieval and real SQLite
checkpoints, on the two-hop corpus (tests/two_hop.py): the second-hop paragraph comes from a branch of its
own."""

from __future__ import annotations

import pytest

from evals.metrics import exact_match
from hopgraph import Settings, build_graph, services_for
from nodes.retrieve import search_evidence
from tests.two_hop import (
    BRIDGE,
    BRIDGE_ANSWER,
    BRIDGE_SECOND,
    COMPARISON,
    COMPARISON_ANSWER,
    COMPARISON_DOCS,
    bridge_hops,
)


@pytest.mark.llm
def test_decomposition_searches_each_sub_question_in_its_own_branch(
    settings: Settings, two_hop_index: str
) -> None:
    graph = build_graph("decomposition", settings)
    config = {"configurable": {"thread_id": "decomposition-e2e"}}
    out = graph.invoke({"question": BRIDGE}, config, context={"index": two_hop_index})

    subs = graph.get_state(config).values["sub_questions"]
    # the greedy decomposition (pinned): three sub-questions, the designer first, then where "he" was born
    assert len(subs) == 3 == out["stats"]["sub_questions"] and BRIDGE not in subs
    assert out["fallbacks"] == []
    history = list(graph.get_state_history(config))
    ran = [tuple(snapshot.next) for snapshot in reversed(history)]
    branches = ("retrieve",) * len(subs)  # one step holds every branch, each checkpointed as a task
    assert ran == [("__start__",), ("decompose",), branches, ("aggregate",), ("generate",), ()]

    # each branch read its own sub-question's dense top 5, recorded at its hop; the paragraph that
    # answers is found by the second branch, not by the question's own search
    index = services_for(settings).indexes.open(two_hop_index)
    seen: set[str] = set()
    for hop, sub in enumerate(subs, start=1):
        found = [item["id"] for item in search_evidence(index, sub, 5, hop, mode="dense")]
        assert [item["id"] for item in out["evidence"] if item["hop"] == hop] == [
            id_ for id_ in found if id_ not in seen
        ]
        seen.update(found)
    assert bridge_hops(out["evidence"]) == ({1}, {2})
    assert BRIDGE_SECOND not in {
        item["doc_id"] for item in search_evidence(index, BRIDGE, 5, 1, mode="dense")
    }

    assert exact_match(out["answer"], [BRIDGE_ANSWER]) == 1.0, (out["answer"], subs)
    assert out["answer_outcome"] == "answered"
    assert [usage["node"] for usage in out["usage"]] == ["decompose", "generate"]
    assert out["usage"][0]["role"] == "decomposer" and out["usage"][-1]["echoes"] == 0


@pytest.mark.llm
def test_decomposition_asks_of_each_side_of_a_comparison(settings: Settings, two_hop_index: str) -> None:
    """A comparison's two sides, each in its own paragraph beside paragraphs on same-named places whose
    years would turn the answer: a sub-question per side, both sides read, and the yes / no the two
    founding years give."""
    graph = build_graph("decomposition", settings)
    config = {"configurable": {"thread_id": "decomposition-comparison"}}
    out = graph.invoke({"question": COMPARISON}, config, context={"index": two_hop_index})

    subs = graph.get_state(config).values["sub_questions"]
    # the greedy decomposition: a founding year per side first. Whether it writes a fourth past the three
    # asked for depends on the CPU's kernels (three on the AVX-512 machine, 2026-11-29; four on an AVX2 one,
    # 2026-12-01): the three asked are kept either way, and a fourth is recorded in the state
    # (tests/test_decompose_node.py tests that record on the node).
    assert len(subs) == 3 and "Orsen Botanical Garden" in subs[0] and "Halloway Observatory" in subs[1]
    capped = ["decompose: 4 sub-questions: the first 3 kept"]
    assert out["fallbacks"] in ([], capped), (subs, out["fallbacks"])
    assert {item["doc_id"] for item in out["evidence"]} >= COMPARISON_DOCS
    assert exact_match(out["answer"], [COMPARISON_ANSWER]) == 1.0, (out["answer"], subs)
    assert out["answer_outcome"] == "answered"
