"""ReSP end to end with the real embedded LLM, real Chroma / MiniLM / spaCy and SQLite checkpoints, kept small
for the 4,096-token test context (three passages a round, two rounds at most, 150-token summaries)."""

from __future__ import annotations

import pytest

from evals.metrics import exact_match
from hopgraph import Settings, build_graph, services_for
from nodes.retrieve import search_evidence
from tests.test_naive_local import QUESTION


@pytest.mark.llm
def test_resp_summarizes_plans_and_answers_over_the_sample_corpus(
    settings: Settings, sample_index: str
) -> None:
    graph = build_graph("resp", settings)
    config = {"configurable": {"thread_id": "resp-e2e"}}
    context = {"index": sample_index, "top_k": 3, "max_iterations": 2, "step_tokens": 150}
    out = graph.invoke({"question": QUESTION}, config, context=context)

    history = list(graph.get_state_history(config))
    ran = [step for snapshot in reversed(history) for step in snapshot.next]
    assert ran[:4] == ["__start__", "retrieve", "summarize", "judge"] and ran[-1] == "generate"
    final = history[0].values
    # the greedy path on the sample (pinned, so a change of path fails here instead of skipping checks):
    # one round, whose summary the judge finds sufficient, then the generator
    rounds = final["rounds"]
    assert ran == ["__start__", "retrieve", "summarize", "judge", "generate"]
    assert rounds == 1 == ran.count("summarize") == out["stats"]["iterations"]
    assert final["stop"] == "sufficient" and out["fallbacks"] == []
    assert final["global_memory"] == out["global_memory"]

    # round 1's passages are the question's top 3, at hop 1; a second round's are at hop 2
    index = services_for(settings).indexes.open(sample_index)
    first = search_evidence(index, QUESTION, 3, 1, mode="dense")
    assert out["evidence"][:3] == first and {item["hop"] for item in out["evidence"]} <= {1, 2}

    # the memories: a summary per round (or a recorded fallback), shorter than what it condenses; one pathway
    # entry per round after the first, each a sub-question not searched before
    assert len(out["global_memory"]) == rounds and out.get("local_memory", []) == []
    assert out["stats"]["compression_ratio"] > 1.0

    # each role on its calls; a call that follows one with the same prefix reuses llama.cpp's KV cache
    roles = {"summarize": "summarizer", "judge": "reasoner", "plan": "reasoner", "generate": "generator"}
    assert all(usage["role"] == roles[usage["node"]] for usage in out["usage"])
    summaries = [usage for usage in out["usage"] if usage["node"] == "summarize"]
    assert len(summaries) == 2 * rounds - 1  # no local-pathway call on round 1
    assert [usage["node"] for usage in out["usage"]] == ["summarize", "judge", "generate"]  # no plan
    # the generator's prompt is the judge's up to the instruction, right after the judge's Yes
    generator = next(usage for usage in out["usage"] if usage["node"] == "generate")
    assert generator["cached_tokens"] > 0.5 * generator["prompt_tokens"]

    assert exact_match(out["answer"], ["Cybertruck", "Tesla Cybertruck"]) == 1.0, (out["answer"], out)
    assert out["answer_outcome"] == "answered"
