"""Iter-RetGen end to end with the real embedded LLM, real BM25 / Chroma / MiniLM and SQLite checkpoints."""

from __future__ import annotations

import pytest

from evals.metrics import exact_match
from graphs.iter_retgen.steps import joined_query
from hopgraph import Settings, build_graph
from tests.test_naive_local import QUESTION


@pytest.mark.llm
def test_iter_retgen_iterates_over_the_sample_corpus_and_checkpoints_every_step(
    settings: Settings, sample_index: str
) -> None:
    graph = build_graph("iter_retgen", settings)
    config = {"configurable": {"thread_id": "iter-retgen-e2e"}}
    out = graph.invoke({"question": QUESTION}, config, context={"index": sample_index, "top_k": 3})

    history = list(graph.get_state_history(config))
    ran = [step for snapshot in reversed(history) for step in snapshot.next]
    rounds = history[0].values["rounds"]
    assert ran == ["__start__", *["retrieve", "generate"] * rounds]
    assert history[0].values["stop"] == ("iterations" if rounds == 3 else "converged")
    assert len(out["generations"]) == rounds == out["stats"]["iterations"]
    if rounds < 3:  # ended at a fixed point: the next query would have been this iteration's again
        previous = out["generations"][-2] if rounds > 1 else ""
        assert joined_query(QUESTION, out["generations"][-1]) == joined_query(QUESTION, previous)

    assert {item["hop"] for item in out["evidence"]} <= set(range(1, rounds + 1))
    assert out["evidence"][0]["hop"] == 1 and len({item["id"] for item in out["evidence"]}) == len(
        out["evidence"]
    )
    assert [usage["role"] for usage in out["usage"]] == ["generator"] * len(out["usage"])
    assert exact_match(out["answer"], ["Cybertruck", "Tesla Cybertruck"]) == 1.0, (out["answer"], out)
    assert out["answer_outcome"] == "answered" and out["answer"] == out["generations"][-1]
