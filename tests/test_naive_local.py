"""NaiveRAG end to end at its defaults with the real embedded LLM, real Chroma, real MiniLM and real SQLite
checkpoints, on the sample corpus: a question one retrieval answers (the multi-hop methods' tests use
tests/two_hop.py, whose questions it cannot)."""

from __future__ import annotations

import pytest

from evals.metrics import exact_match
from hopgraph import Settings, build_graph
from hopgraph.local_model import BATCH

QUESTION = (
    "What is the name of the electric pickup truck discussed in TechCrunch as having an uncertain future "
    "and believed by Elon Musk, as reported by The Verge, to be potentially safer for occupants and "
    "pedestrians than other trucks?"
)
GOLD_TITLES = {
    "What’s up with Tesla’s Cybertruck? Everything to know about much-hyped electric pickup",
    "If the Cybertruck is deadly for pedestrians, it’s because all large trucks are",
}


@pytest.mark.llm
def test_naive_answers_from_the_sample_corpus_and_checkpoints_every_step(
    settings: Settings, sample_index: str
) -> None:
    graph = build_graph("naive", settings)
    config = {"configurable": {"thread_id": "naive-e2e"}}
    out = graph.invoke({"question": QUESTION}, config, context={"index": sample_index})  # the defaults

    # the expected span, not a sentence around it (SQuAD normalisation, as the benchmarks score)
    assert exact_match(out["answer"], ["Cybertruck", "Tesla Cybertruck"]) == 1.0, out["answer"]
    assert out["answer_outcome"] == "answered"
    titles = {item["title"] for item in out["evidence"]}
    assert titles & GOLD_TITLES, titles
    assert all(item["hop"] == 1 and item["doc_id"].startswith("https://") for item in out["evidence"])
    assert len(out["evidence"]) == 10  # NaiveRAG reads ten passages by default
    [usage] = out["usage"]
    assert usage["node"] == "generate" and usage["calls"] == 1 and usage["echoes"] == 0
    assert usage["prompt_tokens"] > 200 and 0 < usage["completion_tokens"] <= 32

    history = list(graph.get_state_history(config))
    ran = [tuple(snapshot.next) for snapshot in reversed(history)]
    assert ran == [("__start__",), ("retrieve",), ("generate",), ()]
    assert history[0].values["answer"] == out["answer"]


@pytest.mark.llm
def test_a_repeated_prompt_prefix_is_reused_by_llama_cpp(settings: Settings, sample_index: str) -> None:
    """Same passages, a different question: llama.cpp re-evaluates only the prompt's lines after its last
    blank line, where the question is (hopgraph.local_model.batch_starts)."""
    graph = build_graph("naive", settings, checkpointer=False)
    context = {"index": sample_index, "top_k": 1, "retrieval_mode": "bm25"}
    first = graph.invoke({"question": "Cybertruck pedestrians safety?"}, context=context)
    second = graph.invoke({"question": "Cybertruck pedestrians safety"}, context=context)
    assert [e["id"] for e in first["evidence"]] == [e["id"] for e in second["evidence"]]
    reused, sent = second["usage"][0]["cached_tokens"], second["usage"][0]["prompt_tokens"]
    assert reused >= BATCH and sent - reused < 40, (reused, sent)
