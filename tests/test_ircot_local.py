"""IR-CoT end to end at its defaults with the real embedded LLM, real BM25 / spaCy and SQLite checkpoints, on
the two-hop corpus (tests/two_hop.py): the chain's first sentence is the query that reaches the second hop."""

from __future__ import annotations

import pytest

from evals.metrics import exact_match
from evals.steps import thread_steps
from hopgraph import Settings, build_graph, services_for
from nodes.retrieve import search_evidence
from prompts import ircot
from tests.scripted import checkpointed_path
from tests.two_hop import BRIDGE, BRIDGE_ANSWER, bridge_hops


@pytest.mark.llm
def test_ircot_reaches_the_second_hop_through_its_chain_of_thought(
    settings: Settings, two_hop_index: str
) -> None:
    graph = build_graph("ircot", settings)
    config = {"configurable": {"thread_id": "ircot-e2e"}}
    out = graph.invoke({"question": BRIDGE}, config, context={"index": two_hop_index})

    history = list(graph.get_state_history(config))
    ran = checkpointed_path(history)
    # the greedy path (pinned, so a change of path fails here instead of skipping checks): two retrieval
    # rounds, the second sentence of the chain says "answer is", then the reader
    assert ran == ["__start__", "retrieve", "reason", "retrieve", "reason", "generate"]
    final = history[0].values
    assert final["stop"] == "answer" and out["fallbacks"] == []
    assert final["reasoning"] == out["reasoning"] and out["stats"]["iterations"] == 2
    nlp = services_for(settings).nlp
    assert all(ircot.sentences(sentence, nlp) == [sentence] for sentence in out["reasoning"])

    # round 1 searched the question (BM25 top 6), round 2 the chain's first sentence: a generated sentence,
    # not the question, which found the second-hop paragraph the question's search did not
    index = services_for(settings).indexes.open(two_hop_index)
    joined = [update["evidence"] for label, update in thread_steps(graph, config) if label == "retrieve"]
    first = [item["id"] for item in search_evidence(index, BRIDGE, 6, 1, mode="bm25")]
    assert [item["id"] for item in joined[0]] == first
    second_query = out["reasoning"][0]
    assert second_query != BRIDGE
    second = [item["id"] for item in search_evidence(index, second_query, 6, 2, mode="bm25")]
    assert [item["id"] for item in joined[1]] == [id_ for id_ in second if id_ not in first]
    assert bridge_hops(out["evidence"]) == ({1}, {2})

    reasoning_calls = [usage for usage in out["usage"] if usage["node"] == "reason"]
    assert all(usage["role"] == "reasoner" and usage["echoes"] == 0 for usage in reasoning_calls)
    # the second step's prompt extends the first: llama.cpp reuses its prefix
    assert reasoning_calls[1]["cached_tokens"] > 0.5 * reasoning_calls[1]["prompt_tokens"]

    assert exact_match(out["answer"], [BRIDGE_ANSWER]) == 1.0, (out["answer"], out["reasoning"])
    assert out["answer_outcome"] == "answered"
