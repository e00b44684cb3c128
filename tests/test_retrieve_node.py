"""The shared retrieval node: where its query, hop and filter come from, exclusion of seen chunks, vector
queries, use as a `Send` branch; then NaiveRAG's retrieval and vector search on a real index.

The first tests hand the node a recording fake index, so they show exactly which search it asks for; the
last ones run the real sample index (MiniLM, Chroma, BM25; no LLM).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph
from langgraph.runtime import Runtime
from langgraph.types import Send
from test_naive_local import QUESTION

from graphs import naive
from graphs.decomposition.state import BranchedSubQuestionsState, SubQuestionBranch
from nodes.context import RetrievalContext
from nodes.retrieve import Retrieve
from stores.chunking import Chunk
from stores.documents import Span
from stores.evidence import Evidence, about_line, evidence_from
from stores.index import Hit


def chunk(chunk_id: str) -> Chunk:
    text = f"text of {chunk_id}"
    return Chunk(id=chunk_id, doc_id=f"doc-{chunk_id}", title=chunk_id, text=text, position=0,
                 char_start=0, char_end=len(text))  # fmt: skip


@dataclass
class RecordingIndex:
    """Ranks the same chunks for every query, best first, and records each search it is asked for."""

    ranking: list[str]
    searches: list[tuple[Any, ...]] = field(default_factory=list)

    def search(self, query: str, k: int, mode: str = "hybrid", where: dict | None = None) -> list[Hit]:
        self.searches.append(("text", query, k, mode, where))
        return self._top(k)

    def search_by_vector(self, vector: list[float], k: int, where: dict | None = None) -> list[Hit]:
        self.searches.append(("vector", vector, k, where))
        return self._top(k)

    def evidence(self, span: Span, score: float, hop: int) -> Evidence:
        """As an index without metadata makes evidence: the span alone."""
        return evidence_from(span, score, hop)

    def _top(self, k: int) -> list[Hit]:
        return [Hit(chunk(chunk_id), 1.0 / rank) for rank, chunk_id in enumerate(self.ranking[:k], start=1)]


@dataclass
class RecordingIndexes:
    index: RecordingIndex
    opened: list[str] = field(default_factory=list)

    def open(self, name: str) -> RecordingIndex:
        self.opened.append(name)
        return self.index


def fake_indexes() -> RecordingIndexes:
    return RecordingIndexes(RecordingIndex([f"c{n}" for n in range(1, 9)]))


def run(node: Retrieve, state: dict[str, Any], **context: Any) -> list[dict[str, Any]]:
    return node(state, Runtime(context=RetrievalContext(**context)))["evidence"]


def test_by_default_the_question_is_searched_at_hop_1_as_the_run_asks() -> None:
    indexes = fake_indexes()
    evidence = run(Retrieve(indexes), {"question": "q?"}, index="docs", top_k=3, retrieval_mode="bm25")
    assert indexes.opened == ["docs"]
    assert indexes.index.searches == [("text", "q?", 3, "bm25", None)]
    assert [(item["id"], item["hop"]) for item in evidence] == [("c1", 1), ("c2", 1), ("c3", 1)]


def test_query_hop_and_filter_come_from_the_state() -> None:
    """Iter-RetGen's query (question + last generation), ReSP's round, Multi-Meta-RAG's extracted filter."""
    indexes = fake_indexes()
    node = Retrieve(
        indexes,
        query=lambda state: f"{state['question']} {state['generation']}",
        hop="round",
        where="filters",
    )
    state = {"question": "q?", "generation": "draft", "round": 3, "filters": {"source": "TechCrunch"}}
    evidence = run(node, state, top_k=2)
    assert indexes.index.searches == [("text", "q? draft", 2, "hybrid", {"source": "TechCrunch"})]
    assert {item["hop"] for item in evidence} == {3}

    node = Retrieve(indexes, query="sub_question", hop=lambda state: state["round"] + 1)
    assert {item["hop"] for item in run(node, {**state, "sub_question": "s"})} == {4}
    assert indexes.index.searches[-1] == ("text", "s", 5, "hybrid", None)


def test_seen_chunks_are_left_out_and_k_new_ones_still_come_back() -> None:
    indexes = fake_indexes()
    seen = [evidence_from(chunk("c1"), 0.9, hop=1), evidence_from(chunk("c3"), 0.8, hop=1)]
    node = Retrieve(indexes, query="thought", hop=2, exclude_seen=True)
    evidence = run(node, {"question": "q?", "thought": "cot", "evidence": seen}, top_k=3)
    assert indexes.index.searches == [("text", "cot", 5, "hybrid", None)]  # over-fetched by the 2 seen
    assert [item["id"] for item in evidence] == ["c2", "c4", "c5"]

    again = run(Retrieve(indexes), {"question": "q?", "evidence": seen}, top_k=3)
    assert [item["id"] for item in again] == ["c1", "c2", "c3"]  # without exclude_seen: the plain top k


def test_a_vector_query_is_searched_by_vector() -> None:
    """TreeHop's updated query embeddings: no text, so no retrieval mode; the filter still applies."""
    indexes = fake_indexes()
    node = Retrieve(indexes, query="query_vector", hop="round", where="filters", exclude_seen=True)
    seen = [evidence_from(chunk("c2"), 0.9, hop=1)]
    state = {"query_vector": [0.1, 0.2], "round": 2, "filters": None, "evidence": seen}
    evidence = run(node, state, top_k=2, retrieval_mode="bm25")
    assert indexes.index.searches == [("vector", [0.1, 0.2], 3, None)]
    assert [(item["id"], item["hop"]) for item in evidence] == [("c1", 2), ("c3", 2)]


def test_the_node_serves_as_a_send_branch_reading_the_branch_payload() -> None:
    """Decomposition: one branch per sub-question, each retrieving with its sub-question at its position."""
    indexes = fake_indexes()
    graph = StateGraph(BranchedSubQuestionsState, context_schema=RetrievalContext)
    graph.add_node("retrieve", Retrieve(indexes, query="sub_question", hop="position"))
    graph.add_conditional_edges(
        START,
        lambda state: [
            Send("retrieve", SubQuestionBranch(sub_question=sub, position=position))
            for position, sub in enumerate(state["sub_questions"], start=1)
        ],
        ["retrieve"],
    )
    out = graph.compile().invoke({"question": "q?", "sub_questions": ["s1", "s2"]}, context={"top_k": 2})
    assert sorted(search[1] for search in indexes.index.searches) == ["s1", "s2"]
    assert [(item["id"], item["hop"]) for item in out["evidence"]] == [("c1", 1), ("c2", 1)]


def naive_retrieval(services: Any, index: str, **context: Any) -> list[dict[str, Any]]:
    """The evidence NaiveRAG's graph holds after its retrieve step (stopped there: no LLM is called)."""
    graph = naive.build(services).compile(checkpointer=InMemorySaver(), interrupt_after=["retrieve"])
    config = {"configurable": {"thread_id": "retrieve-only"}}
    return graph.invoke({"question": QUESTION}, config, context={"index": index, **context})["evidence"]


SHOWN = ["source", "published_at"]  # the default `embed_metadata`


@pytest.mark.parametrize("mode", ["dense", "bm25", "hybrid"])
def test_naive_evidence_is_the_index_search_for_the_question_at_hop_1(
    sample_index: str, services: Any, mode: str
) -> None:
    """What NaiveRAG's retrieval always was: `search(question, top_k, mode)`, every hit at hop 1; each
    with its document's source and date line, since the sample's news articles carry them."""
    index = services.indexes.open(sample_index)
    hits = index.search(QUESTION, 4, mode=mode)
    expected = [evidence_from(hit.chunk, hit.score, 1, about_line(hit.chunk.metadata, SHOWN)) for hit in hits]
    assert naive_retrieval(services, sample_index, top_k=4, retrieval_mode=mode) == expected
    assert all(
        item["about"].startswith("source: ") and "published_at: " in item["about"] for item in expected
    )


def test_search_by_vector_is_dense_search_with_a_vector_of_ones_own(sample_index: str, services: Any) -> None:
    index = services.indexes.open(sample_index)
    vector = services.embedder.embed([QUESTION])[0]

    def ranked(hits: list[Hit]) -> list[tuple[str, float]]:
        return [(hit.chunk.id, round(hit.score, 5)) for hit in hits]

    assert ranked(index.search_by_vector(vector, 5)) == ranked(index.search(QUESTION, 5, mode="dense"))
    assert ranked(index.search_by_vector(vector.tolist(), 5)) == ranked(index.search_by_vector(vector, 5))
    verge = {"source": "The Verge"}
    filtered = index.search_by_vector(vector, 3, where=verge)
    assert ranked(filtered) == ranked(index.search(QUESTION, 3, mode="dense", where=verge))
    assert filtered and {hit.chunk.metadata["source"] for hit in filtered} == {"The Verge"}
    assert index.search_by_vector(vector, 0) == []
