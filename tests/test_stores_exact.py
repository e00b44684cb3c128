"""Exact dense search in memory (stores.exact) on the bundled sample index: real Chroma, real MiniLM.

Brute force here reads the stored vectors straight from Chroma and ranks them in float64, apart from the
code under test.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from hopgraph import Settings
from stores.index import COLLECTION, ChunkIndex, IndexStore

QUESTIONS = [
    "What did Tesla deliver with the Cybertruck?",
    "Which senators met Silicon Valley at the AI Insight Forum?",
    "How did Wall Street's September slump affect the ASX?",
    "Who is favoured in the Frisco Bowl between UTSA and Marshall?",
]
K = 7


class _Named:
    """Names the embedding model and backend (the session's, the default): opening an index checks them, and
    vector search embeds nothing."""

    name = "all-MiniLM-L6-v2"
    backend = Settings.model_fields["embedding_backend"].default


class _QuerySpy:
    """The chunk collection, counting the vector queries sent to Chroma."""

    def __init__(self, collection: Any) -> None:
        self._collection = collection
        self.queries = 0

    def query(self, *args: Any, **kwargs: Any) -> Any:
        self.queries += 1
        return self._collection.query(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._collection, name)


def _open(settings: Settings, embedder: Any, max_chunks: int | None = None) -> ChunkIndex:
    """The sample index from a store of its own (its own ChunkIndex, loaded afresh)."""
    store = IndexStore(settings.indexes_path)
    if max_chunks is not None:
        store = IndexStore(settings.indexes_path, exact_search_max_chunks=max_chunks)
    return store.open("sample", embedder)


@pytest.fixture(scope="module")
def stored(settings: Settings, sample_index: str) -> tuple[list[str], np.ndarray, list[dict[str, Any]]]:
    """Every chunk's id, stored vector and metadata, read from Chroma directly."""
    index = _open(settings, _Named(), max_chunks=0)
    result = index._chroma.get(COLLECTION).get(include=["embeddings", "metadatas"])
    return result["ids"], np.asarray(result["embeddings"], dtype=np.float32), result["metadatas"]


@pytest.fixture(scope="module")
def queries(services: Any, stored: tuple[list[str], np.ndarray, list[dict[str, Any]]]) -> np.ndarray:
    """The questions embedded, and two stored vectors as queries (their own chunk is the nearest)."""
    vectors = stored[1]
    return np.vstack([services.embedder.embed(QUESTIONS), vectors[[0, len(vectors) // 2]]])


def brute_force(
    stored: tuple[list[str], np.ndarray, list[dict[str, Any]]], query: np.ndarray, keep: Any = None
) -> dict[str, float]:
    """Cosine similarity of `query` to every stored chunk (those `keep` accepts by metadata), by id."""
    ids, vectors, metadatas = stored
    matrix = vectors.astype(np.float64)
    scores = matrix @ query.astype(np.float64)
    scores /= np.linalg.norm(matrix, axis=1) * np.linalg.norm(query)
    return {
        chunk_id: float(score)
        for chunk_id, score, meta in zip(ids, scores, metadatas, strict=True)
        if keep is None or keep(meta)
    }


def assert_true_top_k(hits: list[Any], truth: dict[str, float], k: int) -> None:
    """The hits are k chunks whose true similarities are the k best, best first, scored as they truly are
    (ties may come in either order, so ids are compared through their scores)."""
    best = sorted(truth.values(), reverse=True)[:k]
    assert len(hits) == min(k, len(truth))
    assert [truth[hit.chunk.id] for hit in hits] == pytest.approx(best, abs=1e-5)
    assert [hit.score for hit in hits] == pytest.approx(best, abs=1e-5)


def test_exact_search_returns_the_true_top_k(
    settings: Settings, services: Any, stored: Any, queries: np.ndarray
) -> None:
    index = _open(settings, services.embedder)
    assert index.exact and index.manifest.chunks == len(stored[0])
    for query, hits in zip(queries, index.search_by_vectors(queries, K), strict=True):
        assert_true_top_k(hits, brute_force(stored, query), K)
    assert index.search_by_vectors(queries[4:], K)[0][0].chunk.id == stored[0][0]
    for question, query in zip(QUESTIONS, queries[: len(QUESTIONS)], strict=True):
        assert_true_top_k(index.search(question, K, mode="dense"), brute_force(stored, query), K)
        truth = brute_force(stored, query)
        dense = index._nearest(query, 50, None)
        assert [truth[chunk_id] for chunk_id, _ in dense] == pytest.approx(
            sorted(truth.values(), reverse=True)[:50], abs=1e-5
        )


def test_every_dense_path_is_answered_in_memory_and_the_0_setting_asks_chroma(
    settings: Settings, services: Any, queries: np.ndarray
) -> None:
    for max_chunks, exact in ((None, True), (0, False)):
        index = _open(settings, services.embedder, max_chunks)
        assert index.exact is exact
        spy = _QuerySpy(index._collection)
        index._collection = spy
        index.search(QUESTIONS[0], 5, mode="dense")
        index.search(QUESTIONS[0], 5, mode="hybrid")
        index.search_by_vector(queries[0], 5)
        index.search_by_vectors(queries, 5, with_vectors=True)
        assert spy.queries == (0 if exact else 4)
    hnsw = _open(settings, services.embedder, 0).search_by_vectors(queries[4:], 1)
    memory = _open(settings, services.embedder).search_by_vectors(queries[4:], 1)
    assert [row[0].chunk for row in hnsw] == [row[0].chunk for row in memory]  # its own chunk, either way


def test_where_filters_are_honoured(
    settings: Settings, services: Any, stored: Any, queries: np.ndarray
) -> None:
    index = _open(settings, services.embedder)
    for where, keep in (
        ({"source": "TechCrunch"}, lambda meta: meta["source"] == "TechCrunch"),
        (
            {"category": {"$in": ["sports", "business"]}},
            lambda meta: meta["category"] in ("sports", "business"),
        ),
    ):
        for query, hits in zip(queries, index.search_by_vectors(queries, K, where), strict=True):
            assert all(keep(hit.chunk.metadata) for hit in hits)
            assert_true_top_k(hits, brute_force(stored, query, keep), K)
        hybrid = index.search(QUESTIONS[0], K, mode="hybrid", where=where)
        assert hybrid and all(keep(hit.chunk.metadata) for hit in hybrid)
    assert index.search_by_vectors(queries, K, {"source": "Nobody"}) == [[] for _ in queries]
    few = {"source": "Sporting News"}
    matching = sum(meta["source"] == "Sporting News" for meta in stored[2])
    assert len(index.search_by_vector(queries[3], matching + 10, few)) == matching


def test_with_vectors_rows_are_the_stored_vectors(
    settings: Settings, services: Any, stored: Any, queries: np.ndarray
) -> None:
    index = _open(settings, services.embedder)
    by_id = dict(zip(stored[0], stored[1], strict=True))
    for hits in index.search_by_vectors(queries, K, with_vectors=True):
        for hit in hits:
            assert hit.vector is not None and hit.vector.dtype == np.float32
            assert np.array_equal(hit.vector, by_id[hit.chunk.id])
            assert not hit.vector.flags.writeable  # a view of the shared matrix, read-only
    assert all(hit.vector is None for hit in index.search_by_vectors(queries, K)[0])
    ids = [stored[0][3], stored[0][1]]
    assert np.array_equal(index.embeddings(ids), np.stack([by_id[chunk_id] for chunk_id in ids]))
    chunks = index.get(ids)
    assert [chunk.id for chunk in chunks] == ids
    assert chunks == _open(settings, services.embedder, 0).get(ids)  # same chunks as Chroma holds
    with pytest.raises(KeyError, match="nope#0"):
        index.get(["nope#0"])


def test_two_opens_and_another_process_return_the_same_hits(
    settings: Settings, services: Any, queries: np.ndarray, tmp_path: Path
) -> None:
    def ranking(index: ChunkIndex) -> list[list[tuple[str, float]]]:
        return [[(hit.chunk.id, hit.score) for hit in hits] for hits in index.search_by_vectors(queries, K)]

    first = ranking(_open(settings, services.embedder))
    assert ranking(_open(settings, services.embedder)) == first
    np.save(tmp_path / "queries.npy", queries)
    script = (
        "import json, sys, numpy as np\n"
        "from stores.index import IndexStore\n"
        "class Named:\n"
        "    name = 'all-MiniLM-L6-v2'\n"
        f"    backend = {_Named.backend!r}\n"
        "index = IndexStore(sys.argv[1]).open('sample', Named())\n"
        "hits = index.search_by_vectors(np.load(sys.argv[2]), int(sys.argv[3]))\n"
        "print(json.dumps([[[h.chunk.id, h.score] for h in row] for row in hits]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(settings.indexes_path), str(tmp_path / "queries.npy"), str(K)],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parents[1],
    )
    other = [
        [(chunk_id, score) for chunk_id, score in row] for row in json.loads(done.stdout.splitlines()[-1])
    ]
    assert other == first
