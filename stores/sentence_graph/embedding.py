"""Sentence embedding on a worker thread, overlapped with the spaCy pass and written to Chroma as it goes.

Kept apart from the graph arithmetic because it is the one concurrent part of a build: its thread,
queues and failure handling are easier to reason about alone.
"""

from __future__ import annotations

import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from stores.files import batches
from stores.sentence_graph.records import DocRecord, sentence_id_at

if TYPE_CHECKING:
    from chromadb.api.models.Collection import Collection

    from stores.protocols import Embedder, Progress

# Sentences per embed() call and Chroma insert: small enough that the embedder starts while spaCy is still
# early in the corpus, large enough that sorting a chunk by length leaves model batches little padding.
_EMBED_CHUNK = 1024


@dataclass
class _Pending:
    """A sentence waiting to be embedded (or copied from the previous build) and added to Chroma."""

    id: str
    text: str
    metadata: dict[str, str | int]


@dataclass
class _Stored:
    """What the worker did with one chunk: the vectors it stored and the seconds it spent."""

    ids: list[str]
    vectors: np.ndarray
    embed_seconds: float
    chroma_seconds: float


class SentenceWriter:
    """Embeds sentences and adds them to the build's Chroma collection on one worker thread.

    spaCy runs on one core and mostly holds the GIL, while the embedding model releases it and uses every
    core: feeding the worker as documents are parsed overlaps the two passes instead of running them back
    to back. Chunks are sorted longest first, so each model batch pads to similar lengths, and each chunk
    is in Chroma as soon as it is embedded, so an interrupted build loses at most the chunks in flight.
    Sentences already in the collection (an interrupted run of this build) or in `previous` (unchanged
    documents of the previous build) are not embedded again. Progress is reported from the caller's thread.
    """

    def __init__(self, embedder: Embedder, collection: Collection, previous: dict[str, np.ndarray]) -> None:
        self._embedder = embedder
        self._collection = collection
        self._previous = previous
        self.vectors = self._stored()
        self.resumed = len(self.vectors)
        self.seconds = {"embed": 0.0, "chroma": 0.0}
        self._to_embed: list[_Pending] = []
        self._to_copy: list[_Pending] = []
        self._futures: list[Future[_Stored]] = []
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sentence-embedder")

    def _stored(self) -> dict[str, np.ndarray]:
        ids = self._collection.get(include=[])["ids"]
        vectors: dict[str, np.ndarray] = {}
        for batch in batches(ids, _EMBED_CHUNK):
            result = self._collection.get(ids=list(batch), include=["embeddings"])
            vectors.update(
                zip(result["ids"], np.asarray(result["embeddings"], dtype=np.float32), strict=True)
            )
        return vectors

    def add(self, record: DocRecord) -> None:
        """Queue the sentences of one document; hand the worker every full chunk."""
        for position, (start, end, _tokens, text, _names) in enumerate(record.sentences):
            sentence_id = sentence_id_at(record.id, position)
            if sentence_id in self.vectors:
                continue
            metadata: dict[str, str | int] = {
                "doc_id": record.id,
                "title": record.title,
                "position": position,
                "char_start": start,
                "char_end": end,
            }
            queue = self._to_copy if sentence_id in self._previous else self._to_embed
            queue.append(_Pending(sentence_id, text, metadata))
        self._submit(self._to_embed, embed=True, flush=False)
        self._submit(self._to_copy, embed=False, flush=False)
        # A worker that failed (model error, full disk) stops the build now, not after all of spaCy.
        for future in self._futures:
            if future.done() and future.exception() is not None:
                future.result()

    def finish(self, total: int, report: Progress) -> dict[str, np.ndarray]:
        """Hand over the last chunks, wait for the worker and return every sentence's vector by id."""
        self._submit(self._to_embed, embed=True, flush=True)
        self._submit(self._to_copy, embed=False, flush=True)
        report("embed-sentences", len(self.vectors), total)
        for future in self._futures:
            stored = future.result()
            self.vectors.update(zip(stored.ids, stored.vectors, strict=True))
            self.seconds["embed"] += stored.embed_seconds
            self.seconds["chroma"] += stored.chroma_seconds
            report("embed-sentences", len(self.vectors), total)
        return self.vectors

    def close(self) -> None:
        """Stop the worker, dropping queued chunks (after an error the build is abandoned anyway)."""
        self._pool.shutdown(wait=True, cancel_futures=True)

    def _submit(self, queue: list[_Pending], *, embed: bool, flush: bool) -> None:
        """Hand the worker every full chunk of `queue` (and with `flush`, the rest too)."""
        while len(queue) >= _EMBED_CHUNK or (flush and queue):
            chunk = sorted(queue[:_EMBED_CHUNK], key=lambda pending: -len(pending.text))
            del queue[:_EMBED_CHUNK]
            self._futures.append(self._pool.submit(self._store, chunk, embed))

    def _store(self, chunk: list[_Pending], embed: bool) -> _Stored:
        """Runs on the worker: embed (or copy) one chunk, then add it to Chroma."""
        started = time.perf_counter()
        if embed:
            vectors = np.asarray(self._embedder.embed([pending.text for pending in chunk]), dtype=np.float32)
            if vectors.shape != (len(chunk), self._embedder.dimension):
                raise ValueError(
                    f"embedder {self._embedder.name!r} returned shape {vectors.shape} for {len(chunk)} "
                    f"texts, expected ({len(chunk)}, {self._embedder.dimension})"
                )
        else:
            vectors = np.stack([self._previous[pending.id] for pending in chunk])
        embedded = time.perf_counter()
        ids = [pending.id for pending in chunk]
        self._collection.add(
            ids=ids,
            embeddings=vectors,
            documents=[pending.text for pending in chunk],
            metadatas=[pending.metadata for pending in chunk],
        )
        return _Stored(ids, vectors, embedded - started if embed else 0.0, time.perf_counter() - embedded)
