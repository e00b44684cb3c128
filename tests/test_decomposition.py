"""Query decomposition over real retrieval (the sample index: Chroma, MiniLM, BM25) with a scripted chat
model: one Send branch per sub-question, their evidence merged at the right hops and deduplicated, the
aggregate's order whichever branch finishes first, branches that really overlap in time, and retrieval
over one opened index that is safe from several threads."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import pytest

from graphs import decomposition
from graphs.decomposition.context import QueryDecompositionContext
from prompts import answer
from stores.documents import Span
from stores.evidence import Evidence
from stores.index import ChunkIndex, Hit
from tests.scripted import ScriptedChatModel, ScriptedServices, scripted_gateway, stream_updates

QUESTION = "Which electric pickup truck is thought safer for pedestrians, and what is its future?"
# Chosen to overlap: sub-questions 1 and 3 share chunks of the TechCrunch Cybertruck article.
SUBS = [
    "What is the future of the Tesla Cybertruck electric pickup?",
    "Is the Cybertruck deadly for pedestrians?",
    "What should you know about the Cybertruck electric pickup?",
]


def script(subs: list[str]) -> Any:
    def reply(prompt: str) -> str:
        return str(subs).replace("'", '"') if "JSON array" in prompt else "Cybertruck"

    return reply


def run(
    services: Any, index: str, subs: list[str] = SUBS, **context: Any
) -> tuple[list[tuple[str, dict]], dict, ScriptedChatModel]:
    """(every node update in the order streamed, the final state, the scripted model)."""
    llm, model = scripted_gateway(script(subs))
    graph = decomposition.build(ScriptedServices(services, llm)).compile()
    updates, final = stream_updates(graph, QUESTION, {"index": index, **context})
    return updates, final, model


def expected_aggregate(
    index: ChunkIndex, subs: list[str], k: int, mode: str = "dense"
) -> list[tuple[str, int]]:
    """Each sub-question's own top-k (by the method's default dense search), at its position; a chunk found
    again later stays at its first hop."""
    kept: dict[str, int] = {}
    for position, sub in enumerate(subs, start=1):
        for hit in index.search(sub, k, mode=mode):
            kept.setdefault(hit.chunk.id, position)
    return list(kept.items())


def test_one_branch_per_sub_question_merged_by_hop_then_rank_without_duplicates(
    services: Any, sample_index: str
) -> None:
    updates, final, model = run(services, sample_index, top_k=4)
    nodes = [node for node, _ in updates]
    assert nodes == ["decompose", "retrieve", "retrieve", "retrieve", "aggregate", "generate"]

    index = services.indexes.open(sample_index)
    branches = [update["evidence"] for node, update in updates if node == "retrieve"]
    searched = {sub: [hit.chunk.id for hit in index.search(sub, 4, mode="dense")] for sub in SUBS}
    for branch in branches:  # every branch: one sub-question's own dense top 4, at that sub-question's hop
        (hop,) = {item["hop"] for item in branch}
        assert [item["id"] for item in branch] == searched[SUBS[hop - 1]]
    assert sorted(branch[0]["hop"] for branch in branches) == [1, 2, 3]

    aggregate = [(item["id"], item["hop"]) for item in final["evidence"]]
    assert aggregate == expected_aggregate(index, SUBS, 4)
    assert len(aggregate) < 12, "the sub-questions were chosen to overlap: nothing was deduplicated"
    assert len({item_id for item_id, _ in aggregate}) == len(aggregate)
    assert final["stats"] == {"sub_questions": 3.0, "passages": float(len(aggregate))}

    # the shared reader is given exactly the aggregate, in that order, and the whole question
    reader_prompt = "\n".join(str(m.content) for m in answer.messages(QUESTION, final["evidence"]))
    assert model.prompts[-1] == reader_prompt
    assert final["answer_outcome"] == "answered" and final["fallbacks"] == []


def test_the_number_of_branches_follows_the_decomposition(services: Any, sample_index: str) -> None:
    updates, final, _ = run(services, sample_index, subs=SUBS[:2], count="up_to", top_k=2)
    assert [node for node, _ in updates].count("retrieve") == 2
    assert {item["hop"] for item in final["evidence"]} == {1, 2}

    updates, final, _ = run(services, sample_index, subs=SUBS, max_sub_questions=2, top_k=2)
    assert [node for node, _ in updates].count("retrieve") == 2  # cut at N, recorded
    assert final["fallbacks"] == ["decompose: 3 sub-questions: the first 2 kept"]


# Longest a branch waits on another before the test fails instead of hanging (a gate, not a timing).
GATE_TIMEOUT = 120.0


@dataclass
class GatedIndex:
    """The real index, each search held by gates rather than the clock: with `barrier`, every search waits
    until all the branches are searching at once (it breaks, failing the test, if they run one after
    another); a query in `after` starts only once that other query's search has finished, which fixes the
    order in which branches finish. Records the order searches finished and the threads they ran on."""

    index: ChunkIndex
    barrier: threading.Barrier | None = None
    after: dict[str, str] = field(default_factory=dict)
    finished: list[str] = field(default_factory=list)
    threads: set[int] = field(default_factory=set)
    done: dict[str, threading.Event] = field(default_factory=lambda: {sub: threading.Event() for sub in SUBS})

    def evidence(self, span: Span, score: float, hop: int) -> Evidence:
        return self.index.evidence(span, score, hop)

    def search(self, query: str, k: int, mode: str = "hybrid", where: dict | None = None) -> list[Hit]:
        self.threads.add(threading.get_ident())
        if self.barrier is not None:
            self.barrier.wait(timeout=GATE_TIMEOUT)
        if query in self.after and not self.done[self.after[query]].wait(timeout=GATE_TIMEOUT):
            raise AssertionError(f"{self.after[query]!r} never finished, so {query!r} could not start")
        hits = self.index.search(query, k, mode=mode, where=where)
        self.finished.append(query)
        self.done[query].set()
        return hits


@dataclass
class GatedIndexes:
    gated: GatedIndex

    def open(self, name: str) -> GatedIndex:
        return self.gated


def run_gated(services: Any, index: str, **gates: Any) -> tuple[dict, GatedIndex]:
    gated = GatedIndex(services.indexes.open(index), **gates)
    llm, _ = scripted_gateway(script(SUBS))
    graph = decomposition.build(ScriptedServices(services, llm, indexes=GatedIndexes(gated))).compile()
    out = graph.invoke({"question": QUESTION}, context={"index": index, "top_k": 3})
    return out, gated


def test_branches_retrieve_at_the_same_time(services: Any, sample_index: str) -> None:
    """All three branches pass a three-party barrier inside their search: none could have finished before
    the others started."""
    out, gated = run_gated(services, sample_index, barrier=threading.Barrier(len(SUBS)))
    assert sorted(gated.finished) == sorted(SUBS) and len(gated.threads) == 3
    # the evidence is every branch's own search, merged
    index = services.indexes.open(sample_index)
    searched = {hit.chunk.id for sub in SUBS for hit in index.search(sub, 3, mode="dense")}
    assert {item["id"] for item in out["evidence"]} == searched


@pytest.mark.parametrize("in_order", [True, False])
def test_the_aggregate_is_the_same_whichever_branch_finishes_first(
    services: Any, sample_index: str, in_order: bool
) -> None:
    order = SUBS if in_order else SUBS[::-1]  # sub-question 1 or 3 finishes first
    out, gated = run_gated(services, sample_index, after=dict(zip(order[1:], order[:-1], strict=True)))
    assert gated.finished == order
    index = services.indexes.open(sample_index)
    assert [(item["id"], item["hop"]) for item in out["evidence"]] == expected_aggregate(index, SUBS, 3)


def test_searching_one_opened_index_from_many_threads_gives_the_serial_results(
    services: Any, sample_index: str
) -> None:
    """What the branches rely on: Chroma queries, BM25 scoring and the (locked) embedder of one shared
    ChunkIndex, called from several threads at once, answer as they do one at a time."""
    index = services.indexes.open(sample_index)
    queries = [(sub, mode) for sub in [*SUBS, QUESTION] for mode in ("dense", "bm25", "hybrid")] * 3

    def search(query: tuple[str, str]) -> list[tuple[str, float]]:
        return [(hit.chunk.id, round(hit.score, 6)) for hit in index.search(query[0], 5, mode=query[1])]

    serial = [search(query) for query in queries]
    with ThreadPoolExecutor(max_workers=8) as pool:
        parallel = list(pool.map(search, queries))
    assert parallel == serial


def test_sub_questions_are_searched_dense_by_default_and_hybrid_on_request(
    services: Any, sample_index: str
) -> None:
    """Seed 004 retrieves each sub-query by vector similarity; hybrid search stays a named option."""
    assert QueryDecompositionContext().retrieval_mode == "dense"
    index = services.indexes.open(sample_index)
    dense, hybrid = (expected_aggregate(index, SUBS, 3, mode) for mode in ("dense", "hybrid"))
    assert dense != hybrid  # the sample tells the two apart
    _, final, _ = run(services, sample_index, top_k=3, retrieval_mode="hybrid")
    assert [(item["id"], item["hop"]) for item in final["evidence"]] == hybrid


def test_branch_evidence_keeps_its_corpus_ids(services: Any, sample_index: str) -> None:
    _, final, _ = run(services, sample_index, top_k=2)
    assert final["evidence"], "no evidence: the loop below would hold vacuously"
    for item in final["evidence"]:
        assert item["doc_id"].startswith("https://") and item["id"].startswith(item["doc_id"])
        assert item["char_start"] is not None and item["char_end"] > item["char_start"]
