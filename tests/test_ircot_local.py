"""IR-CoT end to end with the real embedded LLM, real BM25 / Chroma / MiniLM / spaCy and SQLite checkpoints,
kept small for the 4,096-token test context (one demonstration, two paragraphs per step, two steps)."""

from __future__ import annotations

import pytest

from evals.metrics import exact_match
from hopgraph import Settings, build_graph, services_for
from prompts import ircot
from tests.test_naive_local import QUESTION


@pytest.mark.llm
def test_ircot_reasons_over_the_sample_corpus_and_checkpoints_every_step(
    settings: Settings, sample_index: str
) -> None:
    graph = build_graph("ircot", settings)
    config = {"configurable": {"thread_id": "ircot-e2e"}}
    context = {
        "index": sample_index,
        "top_k": 2,
        "max_iterations": 2,
        "paragraph_budget": 4,
        "demonstrations": 1,
    }
    out = graph.invoke({"question": QUESTION}, config, context=context)

    history = list(graph.get_state_history(config))
    ran = [tuple(snapshot.next) for snapshot in reversed(history)]
    assert ran[:3] == [("__start__",), ("retrieve",), ("reason",)] and ran[-2:] == [("generate",), ()]
    # the greedy path on the sample (pinned, so a change of path fails here instead of skipping checks):
    # retrieve, reason, retrieve, reason, whose reply only repeats the chain's sentence, then the reader
    steps = [step for (step,) in ran[1:-1]]
    assert steps == ["retrieve", "reason", "retrieve", "reason", "generate"]
    final = history[0].values
    assert final["reasoning"] == out["reasoning"] and final["stop"] == "fallback"
    assert out["fallbacks"] == [
        "reason: the reply only repeated sentences the chain already has: reasoning stopped; the reader "
        "answers from the 3 paragraphs kept"
    ]

    # the chain of thought: one sentence per step, each whole (spaCy finds one sentence in it)
    nlp = services_for(settings).nlp
    assert len(out["reasoning"]) == 1
    assert all(ircot.sentences(sentence, nlp) == [sentence] for sentence in out["reasoning"])
    assert out["stats"]["iterations"] == steps.count("reason")

    # paragraphs: within the budget, each at the round that found it, the question's round first
    assert len(out["evidence"]) == 3 and out["stats"]["paragraphs"] == len(out["evidence"])
    assert out["evidence"][0]["hop"] == 1 and {item["hop"] for item in out["evidence"]} <= {1, 2}

    reasoning_calls = [usage for usage in out["usage"] if usage["node"] == "reason"]
    assert all(usage["role"] == "reasoner" and usage["echoes"] == 0 for usage in reasoning_calls)
    # the second step's prompt extends the first: llama.cpp reuses its prefix
    assert len(reasoning_calls) == 2
    assert reasoning_calls[1]["cached_tokens"] > 0.4 * reasoning_calls[1]["prompt_tokens"]

    assert exact_match(out["answer"], ["Cybertruck", "Tesla Cybertruck"]) == 1.0, (out["answer"], out)
    assert out["answer_outcome"] == "answered"
