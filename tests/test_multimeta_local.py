"""Multi-Meta-RAG end to end with the real embedded LLM (extractor and reader), real BM25 / Chroma / MiniLM,
the reranker, the sample corpus with the metadata extra, and SQLite checkpoints."""

from __future__ import annotations

import json

import pytest

from evals.metrics import exact_match
from hopgraph import Settings, build_graph, index_corpus
from hopgraph.cli import SAMPLE_CORPUS
from tests.test_naive_local import QUESTION

NAMED = {"TechCrunch", "The Verge"}  # the two sources the question names


@pytest.mark.llm
def test_multimeta_filters_by_the_sources_the_question_names_and_answers(settings: Settings) -> None:
    index_corpus(SAMPLE_CORPUS, "sample_meta", settings, method="multimeta")
    source_of = {r["id"]: r["source"] for r in map(json.loads, SAMPLE_CORPUS.read_text().splitlines())}
    graph = build_graph("multimeta", settings)
    config = {"configurable": {"thread_id": "multimeta-e2e"}}
    out = graph.invoke({"question": QUESTION}, config, context={"index": "sample_meta"})

    history = list(graph.get_state_history(config))
    ran = [step for snapshot in reversed(history) for step in snapshot.next]
    assert ran == ["__start__", "extract_metadata", "retrieve", "rerank", "generate"]
    state = history[0].values
    # the LLM's filter if its reply was usable, else the matcher's, which finds both names here
    assert state["metadata_extractor"] in {"llm", "matcher", "llm+matcher"}, state.get("fallbacks")
    assert state["matched_sources"] == sorted(NAMED)
    sources = set(out["metadata_filter"]["sources"])
    assert sources and sources <= NAMED, (out["metadata_filter"], out.get("fallbacks"))
    assert {source_of[item["doc_id"]] for item in out["evidence"]} <= sources
    assert len(out["evidence"]) == 10 and len(state["gathered"]) == 6

    assert out["usage"][0]["role"] == "extractor"
    assert {usage["role"] for usage in out["usage"][1:]} == {"generator"}
    assert exact_match(out["answer"], ["Cybertruck", "Tesla Cybertruck"]) == 1.0, (out["answer"], out)
    assert out["answer_outcome"] == "answered"


@pytest.mark.llm
def test_the_real_extractor_lists_the_named_days_and_only_those_days_are_searched(settings: Settings) -> None:
    index_corpus(SAMPLE_CORPUS, "sample_meta", settings, method="multimeta")
    records = [json.loads(line) for line in SAMPLE_CORPUS.read_text().splitlines()]
    day_of = {record["id"]: record["published_at"][:10] for record in records}
    graph = build_graph("multimeta", settings, checkpointer=False)
    question = (
        "Did the TechCrunch article of October 1, 2023 and the one of November 30, 2023 discuss startups?"
    )
    updates: dict = {}
    for chunk in graph.stream(
        {"question": question}, context={"index": "sample_meta"}, stream_mode="updates"
    ):
        updates.update(chunk)
        if "retrieve" in chunk:
            break
    extracted = updates["extract_metadata"]
    assert extracted["metadata_extractor"] == "llm", extracted["fallbacks"]
    assert extracted["metadata_filter"]["days"] == ["2023-10-01", "2023-11-30"], extracted
    assert {day_of[item["doc_id"]] for item in updates["retrieve"]["gathered"]} == {
        "2023-10-01",
        "2023-11-30",
    }
