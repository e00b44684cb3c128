"""Multi-Meta-RAG end to end at its defaults with the real embedded LLM (extractor and reader), real Chroma /
MiniLM, the reranker and SQLite checkpoints: on the two-hop corpus (tests/two_hop.py), whose paragraphs
carry sources, and on the sample corpus's dated articles."""

from __future__ import annotations

import json

import pytest

from evals.metrics import exact_match
from hopgraph import Settings, build_graph, index_corpus
from hopgraph.cli import SAMPLE_CORPUS
from tests import two_hop
from tests.scripted import checkpointed_path


@pytest.mark.llm
def test_multimeta_filters_by_the_source_the_question_names_and_answers_from_it(settings: Settings) -> None:
    """Two papers report the reopening differently: the filter keeps the named one's paragraphs only, and
    the answer is that paper's year (tests/two_hop.py)."""
    index_corpus(two_hop.CORPUS, "two_hop-multimeta", settings, method="multimeta")
    source_of = two_hop.source_of()
    graph = build_graph("multimeta", settings)
    config = {"configurable": {"thread_id": "multimeta-e2e"}}
    out = graph.invoke({"question": two_hop.SOURCE_NAMED}, config, context={"index": "two_hop-multimeta"})

    history = list(graph.get_state_history(config))
    ran = checkpointed_path(history)
    assert ran == ["__start__", "extract_metadata", "retrieve", "rerank", "generate"]
    state = history[0].values
    # the greedy path (pinned): the LLM's filter names the source, as the matcher does
    assert state["metadata_extractor"] == "llm" and state["matched_sources"] == [two_hop.SOURCE]
    assert out["metadata_filter"]["sources"] == [two_hop.SOURCE] and out["fallbacks"] == []
    assert {source_of[item["doc_id"]] for item in out["evidence"]} == {two_hop.SOURCE}
    named = sum(source == two_hop.SOURCE for source in source_of.values())
    assert len(out["evidence"]) == min(10, named) and len(state["gathered"]) == min(6, named)
    assert out["evidence"][0]["doc_id"] == two_hop.SOURCE_DOC

    assert out["usage"][0]["role"] == "extractor"
    assert [usage["role"] for usage in out["usage"][1:]] == ["generator"]
    assert exact_match(out["answer"], [two_hop.SOURCE_ANSWER]) == 1.0, (out["answer"], out)
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
