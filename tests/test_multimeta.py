"""Multi-Meta-RAG and NaiveRAG's metadata filter over real retrieval (the sample corpus indexed with the
metadata extra: real BM25, Chroma, MiniLM and reranker) with a scripted chat model in place of the LLM:
the numeric dates and the source list the extra records, the filtered search, the rerank into 10 kept and
6 read, the top-up when a filter leaves too few, and an index without metadata. The scripted model tests
how the graphs use the LLM, never what an LLM would answer."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from graphs import multimeta, naive
from graphs.multimeta.context import MultiMetaContext
from hopgraph import Settings, index_corpus
from hopgraph.cli import SAMPLE_CORPUS
from nodes.integrate import rerank
from nodes.retrieve import search_evidence
from prompts import answer
from stores.documents import Document
from stores.extras import ExtraMissingError
from stores.metadata import MetadataExtra, timestamp
from tests.scripted import ScriptedChatModel, ScriptedServices, scripted_gateway, stream_updates
from tests.test_naive_local import QUESTION

RECORDS = [json.loads(line) for line in SAMPLE_CORPUS.read_text(encoding="utf-8").splitlines()]
SOURCE_OF = {record["id"]: record["source"] for record in RECORDS}
DAY_OF = {record["id"]: record["published_at"][:10] for record in RECORDS}
BOTH = '{"sources": ["TechCrunch", "the Verge"], "from": null, "to": null}'
UNNAMED = "What did the senators discuss at the second AI Insight Forum?"  # names no source


@pytest.fixture(scope="module")
def meta_index(settings: Settings) -> str:
    """The sample corpus with the metadata extra, under its own name (the shared 'sample' has none)."""
    index_corpus(SAMPLE_CORPUS, "sample_meta", settings, method="multimeta")
    return "sample_meta"


def replies(extractor: str, generator: str = "Cybertruck") -> Callable[[str], str]:
    """The extractor's reply to its prompt (the one listing the sources), the generator's to any other."""
    return lambda prompt: extractor if "Available sources:" in prompt else generator


def run(
    build: Callable[[Any], Any],
    services: Any,
    reply: Callable[[str], str],
    context: Any,
    question: str = QUESTION,
) -> tuple[list[str], dict[str, Any], dict[str, Any], ScriptedChatModel]:
    """(nodes in the order they ran, each node's update, the final state, the scripted model)."""
    llm, model = scripted_gateway(reply)
    graph = build(ScriptedServices(services, llm)).compile()
    updates, final = stream_updates(graph, question, context)
    return [node for node, _ in updates], dict(updates), final, model


def rendered(passages: list[Any]) -> str:
    return "\n".join(str(m.content) for m in answer.messages(QUESTION, passages))


def test_the_extra_stores_numeric_dates_and_records_sources_and_fields(
    services: Any, meta_index: str
) -> None:
    index = services.indexes.open(meta_index)
    info = index.extra(MetadataExtra)
    assert info.sources == [
        "Engadget",
        "Sporting News",
        "TechCrunch",
        "The Sydney Morning Herald",
        "The Verge",
    ]
    assert (info.first_date, info.last_date) == ("2023-09-26", "2023-12-19")
    assert {"source", "published_at", "published_at_ts", "author", "category"} <= set(info.fields)
    chunks = index.all_chunks()
    assert info.dated == len(chunks)
    assert all(
        chunk.metadata["published_at_ts"] == timestamp(chunk.metadata["published_at"]) for chunk in chunks
    )
    # a range on the numeric twin, honoured alike by every search mode
    since = {"published_at_ts": {"$gte": timestamp("2023-12-01T00:00:00+00:00")}}
    for mode in ("dense", "bm25", "hybrid"):
        hits = index.search("electric trucks", 50, mode=mode, where=since)
        assert hits and all(hit.chunk.metadata["published_at"] >= "2023-12-01" for hit in hits), mode


def test_multimeta_filters_reranks_keeps_ten_and_reads_six(services: Any, meta_index: str) -> None:
    context = MultiMetaContext(index=meta_index)
    steps, updates, final, model = run(multimeta.build, services, replies(BOTH), context)

    assert steps == ["extract_metadata", "retrieve", "rerank", "generate"]
    assert final["metadata_extractor"] == "llm"
    assert final["metadata_filter"] == {
        "sources": ["TechCrunch", "The Verge"],
        "days": [],
        "date_from": None,
        "date_to": None,
    }
    where = {"source": {"$in": ["TechCrunch", "The Verge"]}}
    # dense search, as the original's vector store searches
    candidates = search_evidence(
        services.indexes.open(meta_index), QUESTION, 20, 1, mode="dense", where=where
    )
    assert updates["retrieve"]["gathered"] == candidates and len(candidates) >= 10
    assert {SOURCE_OF[item["doc_id"]] for item in candidates} <= {"TechCrunch", "The Verge"}

    stored = services.indexes.open(meta_index).embeddings([item["id"] for item in candidates])
    ranked = rerank(services.reranker, QUESTION, candidates, stored)  # scored from the stored vectors
    assert final["evidence"] == ranked[:10]  # the reranked order is the ranking retrieval metrics score
    assert final["gathered"] == ranked[:6]
    assert model.prompts[1] == rendered(ranked[:6])  # the answer reads K' = 6
    assert final["answer"] == "Cybertruck" and not final.get("fallbacks")
    assert [usage["node"] for usage in final["usage"]] == ["extract_metadata", "generate"]
    assert [usage["role"] for usage in final["usage"]] == ["extractor", "generator"]
    assert final["stats"]["metadata_filter"] == 1.0


def test_what_the_filter_leaves_is_all_there_is_unless_refill_is_on(services: Any, meta_index: str) -> None:
    """As the original: a filter leaving few candidates reads those few, and one leaving none is recorded
    and reads nothing. With `refill` (hopgraph's behaviour before issue 38) unfiltered search tops them up
    to K, filtered hits first."""
    index = services.indexes.open(meta_index)
    engadget = {"source": {"$in": ["Engadget"]}}
    on_the_day = "What did the senators discuss at the second AI Insight Forum, reported on October 25, 2023?"
    few = search_evidence(index, on_the_day, 20, 1, mode="dense", where=engadget)
    assert 0 < len(few) < 20  # one Engadget article: fewer chunks than the K = 20 candidates
    wanted = len(few) + 1  # a K' the filtered hits fall short of

    # October 25, 2023: the Engadget article's day, the only article of that day
    reply = replies('{"sources": [], "from": "2023-10-25", "to": "2023-10-25"}')
    _, updates, final, _ = run(
        multimeta.build, services, reply, MultiMetaContext(index=meta_index), on_the_day
    )
    assert updates["retrieve"]["gathered"] == few and not final.get("fallbacks")

    context = MultiMetaContext(index=meta_index, answer_k=wanted, refill=True)
    _, updates, final, _ = run(multimeta.build, services, reply, context, on_the_day)
    gathered = updates["retrieve"]["gathered"]
    assert gathered[: len(few)] == few and len(gathered) == 20  # the filtered hits first, then the rest
    rest = search_evidence(
        index, on_the_day, 20 - len(few), 1, mode="dense", exclude={item["id"] for item in few}
    )
    assert gathered[len(few) :] == rest
    assert final["fallbacks"] == [
        f"retrieve: the metadata filter left {len(few)} passage(s), fewer than {wanted}; "
        f"unfiltered search added {len(rest)}"
    ]

    # a date range with no article at all: nothing to read, said so; with refill, all unfiltered
    in_2021 = "What did the senators discuss at the second AI Insight Forum in 2021?"
    empty = replies('{"sources": [], "from": "2021-01-01", "to": "2021-12-31"}')
    _, updates, final, _ = run(multimeta.build, services, empty, MultiMetaContext(index=meta_index), in_2021)
    assert final["metadata_extractor"] == "llm"
    assert updates["retrieve"]["gathered"] == [] and final["evidence"] == []
    assert final["fallbacks"][0] == "retrieve: the metadata filter left no passage"
    context = MultiMetaContext(index=meta_index, refill=True)
    _, updates, final, _ = run(multimeta.build, services, empty, context, in_2021)
    assert updates["retrieve"]["gathered"] == search_evidence(index, in_2021, 20, 1, mode="dense")
    assert final["fallbacks"] == [
        "retrieve: the metadata filter left 0 passage(s), fewer than 6; unfiltered search added 20"
    ]
    assert len(final["evidence"]) == 10 and final["answer"] == "Cybertruck"


def test_a_malformed_extraction_falls_back_to_the_matcher_in_the_graph(
    services: Any, meta_index: str
) -> None:
    _, _, final, _ = run(multimeta.build, services, replies("TechCrunch"), MultiMetaContext(index=meta_index))
    assert final["metadata_extractor"] == "matcher"
    assert final["metadata_filter"]["sources"] == ["TechCrunch", "The Verge"]  # both named in the question
    assert final["fallbacks"] == [
        "extract_metadata: no JSON object",
        "extract_metadata: the source matcher's filter used instead",
    ]
    assert {SOURCE_OF[item["doc_id"]] for item in final["evidence"]} <= {"TechCrunch", "The Verge"}


def test_a_corpus_without_metadata_degrades_to_reranked_naive_retrieval(
    services: Any, settings: Settings
) -> None:
    docs = [
        Document(
            id="a", title="Cybertruck", text="The Cybertruck is an electric pickup truck made by Tesla."
        ),
        Document(id="b", title="Pedestrians", text="Large trucks are more dangerous for pedestrians."),
    ]
    index_corpus(docs, "plain_meta", settings, method="multimeta")
    steps, _, final, model = run(
        multimeta.build, services, replies("unused"), MultiMetaContext(index="plain_meta")
    )
    assert steps == ["extract_metadata", "retrieve", "rerank", "generate"]
    assert final["metadata_extractor"] == "none" and len(model.prompts) == 1  # the generator's alone
    assert final["fallbacks"] == [
        "extract_metadata: index 'plain_meta' has no source or date metadata: no filter (NaiveRAG retrieval)"
    ]
    assert {item["doc_id"] for item in final["evidence"]} == {"a", "b"}


def test_an_index_without_the_metadata_extra_says_how_to_add_it(services: Any, sample_index: str) -> None:
    with pytest.raises(ExtraMissingError, match="--with metadata"):
        run(multimeta.build, services, replies(BOTH), MultiMetaContext(index=sample_index))


def test_naive_rag_filters_by_metadata_only_when_switched_on(services: Any, meta_index: str) -> None:
    steps, _, final, model = run(naive.build, services, replies(BOTH), {"index": meta_index})
    assert steps == ["retrieve", "generate"] and len(model.prompts) == 1
    assert final["evidence"] == search_evidence(services.indexes.open(meta_index), QUESTION, 10, 1)  # its k

    only = replies('{"sources": ["TechCrunch"], "from": "2023-11-01", "to": null}')
    switched = {"index": meta_index, "metadata_filter": True, "top_k": 5}
    steps, _, final, _ = run(naive.build, services, only, switched)
    assert steps == ["extract_metadata", "retrieve", "generate"]
    assert final["metadata_extractor"] == "llm" and len(final["evidence"]) == 5
    assert all(SOURCE_OF[item["doc_id"]] == "TechCrunch" for item in final["evidence"])
    published = {json.loads(line)["id"]: json.loads(line)["published_at"] for line in SAMPLE_CORPUS.open()}
    assert all(published[item["doc_id"]] >= "2023-11-01" for item in final["evidence"])


def test_days_the_question_names_are_searched_as_those_days_and_range_spans_them(
    services: Any, meta_index: str
) -> None:
    question = "Did the TechCrunch article of October 1, 2023 and the one of November 30, 2023 agree?"
    reply = (
        '{"sources": ["TechCrunch"], "days": ["2023-10-01", "November 30, 2023"], "from": null, "to": null}'
    )
    days: dict[str, set[str]] = {}
    for dates in ("days", "range"):
        context = MultiMetaContext(index=meta_index, dates=dates)
        _, updates, final, _ = run(multimeta.build, services, replies(reply), context, question)
        assert final["metadata_filter"]["days"] == ["2023-10-01", "2023-11-30"]
        candidates = updates["retrieve"]["gathered"]
        assert {SOURCE_OF[item["doc_id"]] for item in candidates} == {"TechCrunch"}
        days[dates] = {DAY_OF[item["doc_id"]] for item in candidates}
    # the original's published_at list: only articles of those two days
    assert days["days"] == {"2023-10-01", "2023-11-30"}
    # one range over both: TechCrunch's November 3 and 11 articles come in as well
    assert days["range"] == {"2023-10-01", "2023-11-03", "2023-11-11", "2023-11-30"}
