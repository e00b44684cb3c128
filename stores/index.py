"""Chunk indexes: build once, query many times, never show a half-built index.

Layout under the store's root:

    NAME/builds/<build_id>/chroma/          Chroma collection "chunks" (vectors, chunk text, metadata),
                                            or the same collections on a Chroma server (stores.chroma)
    NAME/builds/<build_id>/bm25.json.gz     BM25 over the same chunks
    NAME/builds/<build_id>/<extra folder>/  each extra the build was asked for (stores.extras), which may
                                            also add collections to the build's Chroma collections
    NAME/builds/<build_id>/manifest.json    what was indexed and how; written last
    NAME/builds/<build_id>/.incomplete      present while the build is running
    NAME/current -> builds/<build_id>       switched atomically once a build is complete
    NAME/.writer.lock                       held by the one process building NAME (stores.locks)

The build id is a hash of the corpus, the embedding model and the chunking parameters (plus each
extra's key: its parameters and the identity of the models it is built with), so the same
inputs always land in the same folder: rebuilding an unchanged corpus is a no-op, and a build that was
interrupted resumes where it stopped (chunks already in Chroma are not embedded again). Readers only
ever follow `current`, so the previous index answers queries until the new one is complete. One process
at a time builds a name (its lock names the holder; a second build waits), so the builds a finished one
deletes are never being written.
"""

from __future__ import annotations

import builtins
import hashlib
import json
import os
import re
import shutil
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, TypeVar, overload

import numpy as np

from stores.bm25 import BM25Index, reciprocal_rank_fusion
from stores.chroma import GET_BATCH, BuildCollections, ChromaPlace, EmbeddedChroma
from stores.chunking import Chunk, chunk_document, chunk_id
from stores.documents import Document, Span, corpus_hash, load_corpus
from stores.errors import CorpusError, IndexDamagedError, IndexMismatchError, IndexNotFoundError
from stores.evidence import Evidence, about_line, evidence_from
from stores.exact import EXACT_SEARCH_MAX_CHUNKS, ExactVectors
from stores.extra_registry import EXTRAS, extra_named, in_build_order
from stores.extras import CHUNK_COLLECTION, Extra, ExtraBuild, ExtraMissingError, ExtraSource
from stores.files import batches, open_appending, refuse_links, write_atomic
from stores.locks import LOCK_FILE, writer_lock
from stores.protocols import Embedder, Progress

SearchMode = Literal["dense", "bm25", "hybrid"]
BuildStatus = Literal["built", "unchanged", "resumed"]

COLLECTION = CHUNK_COLLECTION
EMBED_BATCH = 64
FUSION_DEPTH = 50
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
# The backend of every build made before manifests recorded one; its builds keep the ids they had.
LEGACY_BACKEND = "sentence-transformers"
_BUILD_ID = re.compile(r"[0-9a-f]{16}")  # what _build_id makes: the only names a build folder has
_INCOMPLETE = ".incomplete"
_MANIFEST = "manifest.json"
_BM25 = "bm25.json.gz"
_CHUNK_FIELDS = ("doc_id", "title", "position", "char_start", "char_end")
ReaderT = TypeVar("ReaderT")
METADATA_LINE_VERSION = 2


@dataclass
class IndexParams:
    """Chunking parameters and what is indexed of a chunk; part of the build id, so changing them builds a
    new index.

    `embed_metadata` names document metadata fields shown with every passage of this index: one line
    (`stores.evidence.about_line`: "source: TechCrunch · published_at: October 7, 2023 (2023-10-07)")
    before a chunk's title in the text that is embedded and BM25-indexed, and on each passage the readers
    see (`ChunkIndex.evidence`). MultiHop-RAG's pipeline and Multi-Meta-RAG's code both embed and read
    chunks with their source and date, and its questions name them. The stored chunk text is unchanged.
    Empty, it is left out of the build id, so indexes built before it existed keep their ids.
    """

    chunk_size: int = 256
    chunk_overlap: int = 32
    embed_metadata: list[str] = field(default_factory=list)

    def carried_by(self, docs: Sequence[Document]) -> IndexParams:
        """These parameters with `embed_metadata` cut to the fields some document has: the default names
        MultiHop-RAG's source and date, and a corpus without them builds (and keeps its id) as before."""
        present = {name for doc in docs for name in doc.metadata}
        return replace(self, embed_metadata=[name for name in self.embed_metadata if name in present])

    def indexed_text(self, chunk: Chunk) -> str:
        """What is embedded and BM25-indexed of `chunk`: its named metadata, then its title and text."""
        about = about_line(chunk.metadata, self.embed_metadata)
        return f"{about}\n{chunk.indexed_text}" if about else chunk.indexed_text


@dataclass
class Manifest:
    """What an index holds and how it was made, so a later run can tell whether it is still valid."""

    name: str
    build_id: str
    corpus_hash: str
    corpus_path: str
    embedding_model: str
    dimension: int
    params: IndexParams
    documents: int
    chunks: int
    created_at: str
    seconds: float
    extras: dict[str, Any] = field(default_factory=dict)  # extra name -> its info, in build order
    embedding_backend: str = LEGACY_BACKEND  # what computed the vectors (older manifests: the torch default)

    def embedded_by(self, embedder: Embedder) -> bool:
        """Whether `embedder` computes the vectors this index holds: the same model through the same backend
        (vectors of two backends never mix in one index, nor is one searched with the other's)."""
        return (self.embedding_model, self.embedding_backend) == (embedder.name, embedder.backend)

    def to_json(self) -> str:
        """Serialise for manifest.json (indented: people read it to see what an index holds)."""
        return json.dumps(asdict(self), indent=2, ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str) -> Manifest:
        """Parse manifest.json back, restoring the nested IndexParams and each extra's info.

        Manifests written before extras existed hold an extra's info in its own top-level field (null
        when the build lacks it); those builds load as if written now.
        """
        data = json.loads(text)
        data["params"] = IndexParams(**data["params"])
        extras = data.pop("extras", {})
        for extra in EXTRAS.values():
            if extra.legacy_field is not None and (info := data.pop(extra.legacy_field, None)) is not None:
                extras[extra.name] = info
        data["extras"] = {name: extra_named(name).info_from_dict(info) for name, info in extras.items()}
        return cls(**data)


@dataclass(frozen=True)
class Hit:
    """A retrieved chunk with its score (cosine similarity, BM25 score or RRF score, by search mode), and
    its stored embedding when the search was asked for it (`search_by_vectors(..., with_vectors=True)`)."""

    chunk: Chunk
    score: float
    vector: np.ndarray | None = field(default=None, compare=False)


@dataclass(frozen=True)
class BuildResult:
    """Outcome of `IndexStore.build`: `seconds` is this call's time, `manifest.seconds` the build's."""

    manifest: Manifest
    status: BuildStatus
    seconds: float


def _chunk_metadata(chunk: Chunk) -> dict[str, Any]:
    """Flatten a chunk's fields and its document's metadata into one Chroma metadata dict."""
    return {**chunk.metadata, **{name: getattr(chunk, name) for name in _CHUNK_FIELDS}}


def _chunk_from_chroma(chunk_id: str, text: str, metadata: dict[str, Any]) -> Chunk:
    """Inverse of `_chunk_metadata`: Chroma holds everything needed to rebuild the Chunk."""
    doc_meta = {key: value for key, value in metadata.items() if key not in _CHUNK_FIELDS}
    return Chunk(
        id=chunk_id,
        doc_id=metadata["doc_id"],
        title=metadata["title"],
        text=text,
        position=metadata["position"],
        char_start=metadata["char_start"],
        char_end=metadata["char_end"],
        metadata=doc_meta,
    )


class ChunkIndex:
    """One opened, read-only index build: dense, BM25 and hybrid search over its chunks.

    Dense search is exact, over the stored vectors held in memory (stores.exact), when the build has at
    most `exact_search_max_chunks` chunks (0: never); otherwise Chroma's HNSW answers it. Every dense path
    (`search` in dense mode, the dense half of hybrid, `search_by_vector(s)`) goes the same way, and with
    the vectors in memory `get` and `embeddings` read them from there too.
    """

    def __init__(
        self,
        build_dir: Path,
        manifest: Manifest,
        embedder: Embedder,
        collections: BuildCollections,
        exact_search_max_chunks: int = EXACT_SEARCH_MAX_CHUNKS,
    ) -> None:
        self.manifest = manifest
        self._embedder = embedder
        self._build_dir = build_dir
        self._extras: dict[str, Any] = {}
        self._about: dict[str, str] = {}  # document id -> its metadata line, for sentences
        self._extras_lock = threading.Lock()
        self._chroma = collections
        self._collection = collections.get(COLLECTION)
        self._bm25 = BM25Index.load(build_dir / _BM25)
        self._row = {chunk_id: row for row, chunk_id in enumerate(self._bm25.ids)}
        self._exact: ExactVectors | None = None
        if 0 < len(self._bm25.ids) <= exact_search_max_chunks:
            self._exact = ExactVectors(
                self._collection, self._bm25.ids, self._row, manifest.dimension, _chunk_from_chroma
            )

    @property
    def exact(self) -> bool:
        """Whether dense search is exact in memory (True) or Chroma's HNSW (False)."""
        return self._exact is not None

    def search(
        self, query: str, k: int, mode: SearchMode = "hybrid", where: dict[str, Any] | None = None
    ) -> list[Hit]:
        """Return the `k` best chunks for `query`, best first.

        `where` is a Chroma metadata filter (e.g. {"source": "TechCrunch"}); for BM25 the same filter is
        evaluated by Chroma and applied before ranking, so every mode honours it identically.
        """
        if mode not in ("dense", "bm25", "hybrid"):
            raise ValueError(f"unknown search mode {mode!r}; use 'dense', 'bm25' or 'hybrid'")
        if k <= 0:
            return []
        if mode == "dense":
            return self.search_by_vector(self._embedder.embed([query])[0], k, where)
        if mode == "bm25":
            return self._hits(self._bm25_search(query, k, where))
        depth = max(k, FUSION_DEPTH)
        dense = self._nearest(self._embedder.embed([query])[0], depth, where)
        lexical = self._bm25_search(query, depth, where)
        fused = reciprocal_rank_fusion(
            [[chunk_id for chunk_id, _ in ranking] for ranking in (dense, lexical)]
        )
        # sorted() is stable: equal RRF scores keep first-seen order (dense ranking first).
        return self._hits(sorted(fused.items(), key=lambda item: -item[1])[:k])

    def evidence(self, span: Span, score: float, hop: int) -> Evidence:
        """A chunk or sentence of this index as evidence, with its document's metadata line when the index
        shows metadata (`IndexParams.embed_metadata`): what every reader of passages then sees."""
        return evidence_from(span, score, hop, self.about(span))

    def unshown_metadata(self, fields: Sequence[str]) -> list[str]:
        """Those of `fields` this index's chunks carry but its passages do not show (an index built before
        the metadata line, or with `embed_metadata` empty): read from its first chunk."""
        if not self._bm25.ids:
            return []
        carried = self.get([self._bm25.ids[0]])[0].metadata
        shown = set(self.manifest.params.embed_metadata)
        return [name for name in fields if name in carried and name not in shown]

    def about(self, span: Span) -> str:
        """The metadata line of `span`'s document: from the chunk itself, or for a sentence from its
        document's first chunk (every chunk of a document carries the document's metadata)."""
        fields = self.manifest.params.embed_metadata
        if not fields:
            return ""
        if isinstance(span, Chunk):
            return about_line(span.metadata, fields)
        with self._extras_lock:
            cached = self._about.get(span.doc_id)
        if cached is None:
            first = chunk_id(span.doc_id, 0)
            cached = about_line(self.get([first])[0].metadata, fields) if first in self._row else ""
            with self._extras_lock:
                self._about[span.doc_id] = cached
        return cached

    def get(self, ids: list[str]) -> list[Chunk]:
        """Chunks by id, in the order asked; KeyError naming any id the index does not hold."""
        if self._exact is not None:
            return [self._exact.chunk(row) for row in self._rows(ids)]
        found = _fetch_chunks(self._collection, ids)
        missing = [chunk_id for chunk_id in ids if chunk_id not in found]
        if missing:
            raise KeyError(f"index {self.manifest.name!r} has no chunk(s) {missing[:5]}")
        return [found[chunk_id] for chunk_id in ids]

    def all_chunks(self) -> list[Chunk]:
        """Every chunk, in corpus order then position (the order they were indexed in)."""
        return self.get(self._bm25.ids)

    def embeddings(self, ids: list[str]) -> np.ndarray:
        """The stored vectors of `ids`, one float32 row each, in the order asked."""
        if self._exact is not None:
            return self._exact.vectors(self._rows(ids)).reshape(len(ids), self.manifest.dimension)
        rows: dict[str, np.ndarray] = {}
        for batch in batches(ids, GET_BATCH):
            result = self._collection.get(ids=list(batch), include=["embeddings"])
            rows.update(zip(result["ids"], result["embeddings"], strict=True))
        missing = [chunk_id for chunk_id in ids if chunk_id not in rows]
        if missing:
            raise KeyError(f"index {self.manifest.name!r} has no chunk(s) {missing[:5]}")
        matrix = np.asarray([rows[chunk_id] for chunk_id in ids], dtype=np.float32)
        return matrix.reshape(len(ids), self.manifest.dimension)

    def _rows(self, ids: list[str]) -> list[int]:
        """The index rows of `ids`; KeyError naming any id the index does not hold."""
        missing = [chunk_id for chunk_id in ids if chunk_id not in self._row]
        if missing:
            raise KeyError(f"index {self.manifest.name!r} has no chunk(s) {missing[:5]}")
        return [self._row[chunk_id] for chunk_id in ids]

    @overload
    def extra(self, kind: type[Extra[Any, Any, ReaderT]]) -> ReaderT: ...

    @overload
    def extra(self, kind: str) -> Any: ...

    def extra(self, kind: type[Extra[Any, Any, Any]] | str) -> Any:
        """The extra of this build (stores.extras), opened on first use, then shared by all callers.

        Asked by its class (`index.extra(SentenceGraphExtra)`), the result is that extra's typed reader;
        by its registered name (from the command line), it is whatever the extra opens."""
        name = kind if isinstance(kind, str) else kind.name
        extra = extra_named(name)
        if name not in self.manifest.extras:
            index = self.manifest.name
            raise ExtraMissingError(
                f"Index {index!r} was built without the {name} extra ({extra.description}), which this "
                f"method needs. Add it with `hopgraph index PATH --name {index} --with {name}` (the chunks "
                f"are kept, only the extra is built), or index for the method with "
                f"`hopgraph index PATH --name {index} --method METHOD`."
            )
        with self._extras_lock:
            return _open_extra(
                extra,
                self.manifest.extras,
                self._build_dir,
                self._embedder,
                self._chroma,
                self._extras,
            )

    def close(self) -> None:
        """Release the Chroma client; the store calls this before deleting a superseded build.

        A closed (superseded) index cannot be searched: open the index again to get the current build.
        """
        self._chroma.close()

    def search_by_vector(
        self, vector: np.ndarray | list[float], k: int, where: dict[str, Any] | None = None
    ) -> list[Hit]:
        """Return the `k` chunks nearest to `vector` (cosine), best first.

        For methods that compute their query vectors themselves (TreeHop updates the query embedding from
        hop to hop, with no text to embed). The vector must come from this index's embedding model
        (`manifest.embedding_model`). Dense only: BM25 has no words to match. `where` as in `search`.
        """
        return self.search_by_vectors(np.asarray(vector, dtype=np.float32).reshape(1, -1), k, where)[0]

    def search_by_vectors(
        self,
        vectors: np.ndarray,
        k: int,
        where: dict[str, Any] | None = None,
        *,
        with_vectors: bool = False,
    ) -> list[list[Hit]]:
        """The `k` nearest chunks of each row of `vectors`, best first, in one query (one matrix product
        in memory, or one Chroma query).

        One query for all rows because a tree search asks for many at once (TreeHop: one per branch), and
        each query has a fixed cost. `with_vectors` also returns each hit's stored embedding, which a
        method that computes the next query from the chunk needs (TreeHop), without a second lookup (in
        memory, a read-only view of the stored row).
        """
        matrix = np.asarray(vectors, dtype=np.float32)
        if matrix.ndim != 2 or matrix.shape[1] != self.manifest.dimension:
            raise ValueError(
                f"query vectors of index {self.manifest.name!r} must be rows of {self.manifest.dimension} "
                f"numbers ({self.manifest.embedding_model}); got shape {matrix.shape}"
            )
        if k <= 0 or len(matrix) == 0:
            return [[] for _ in matrix]
        if self._exact is not None:
            exact = self._exact
            return [
                [
                    Hit(exact.chunk(row), score, exact.vector(row) if with_vectors else None)
                    for row, score in ranked
                ]
                for ranked in exact.search(matrix, k, self._where_mask(where))
            ]
        include = ["documents", "metadatas", "distances", *(["embeddings"] if with_vectors else [])]
        result = self._collection.query(
            query_embeddings=matrix,
            n_results=min(k, self.manifest.chunks),
            where=where or None,
            include=include,
        )
        return [
            [
                Hit(
                    _chunk_from_chroma(chunk_id, text, dict(meta)),
                    1.0 - float(distance),
                    np.asarray(result["embeddings"][row][rank], dtype=np.float32) if with_vectors else None,
                )
                for rank, (chunk_id, text, meta, distance) in enumerate(
                    zip(
                        result["ids"][row],
                        result["documents"][row],
                        result["metadatas"][row],
                        result["distances"][row],
                        strict=True,
                    )
                )
            ]
            for row in range(len(matrix))
        ]

    def _nearest(
        self, vector: np.ndarray | list[float], k: int, where: dict[str, Any] | None
    ) -> list[tuple[str, float]]:
        """Ids and cosine similarities of the `k` chunks nearest to `vector`, best first (hybrid search).

        Ids and distances only: Chroma answers in about 1 ms with them and takes 4 ms more to return the
        texts and metadata of the 50 chunks hybrid search fuses, most of which the fusion drops.
        """
        if self._exact is not None:
            query = np.asarray(vector, dtype=np.float32).reshape(1, -1)
            ranked = self._exact.search(query, k, self._where_mask(where))[0]
            return [(self._exact.ids[row], score) for row, score in ranked]
        result = self._collection.query(
            query_embeddings=np.asarray(vector, dtype=np.float32).reshape(1, -1),
            n_results=min(k, self.manifest.chunks),
            where=where or None,
            include=["distances"],
        )
        return [
            (chunk_id, 1.0 - float(distance))
            for chunk_id, distance in zip(result["ids"][0], result["distances"][0], strict=True)
        ]

    def _bm25_search(self, query: str, k: int, where: dict[str, Any] | None) -> list[tuple[str, float]]:
        return self._bm25.search(query, k, self._where_mask(where))

    def _where_mask(self, where: dict[str, Any] | None) -> np.ndarray | None:
        """The chunks (one bool per index row) that Chroma's metadata filter `where` keeps; None for none."""
        if not where:
            return None
        matching = self._collection.get(where=where, include=[])["ids"]
        mask = np.zeros(len(self._bm25), dtype=bool)
        mask[[self._row[chunk_id] for chunk_id in matching]] = True
        return mask

    def _hits(self, ranked: list[tuple[str, float]]) -> list[Hit]:
        """Attach chunks to (id, score) pairs, fetched from Chroma in one call."""
        chunks = self.get([chunk_id for chunk_id, _ in ranked])
        return [Hit(chunk, score) for chunk, (_, score) in zip(chunks, ranked, strict=True)]


class IndexStore:
    """All indexes under one root folder; builds them, and opens each build at most once per process.

    `chroma` is where the builds' Chroma collections live: by default in each build's folder, or on a
    Chroma server (stores.chroma.ChromaServer) shared by every index. Builds of at most
    `exact_search_max_chunks` chunks are searched exactly in memory (stores.exact; 0: always Chroma's HNSW).
    """

    def __init__(
        self,
        root: Path,
        chroma: ChromaPlace | None = None,
        exact_search_max_chunks: int = EXACT_SEARCH_MAX_CHUNKS,
    ) -> None:
        self.root = Path(root)
        self.chroma = chroma or EmbeddedChroma()
        self.exact_search_max_chunks = exact_search_max_chunks
        self._lock = threading.Lock()
        self._open: dict[tuple[str, str], ChunkIndex] = {}

    def build(
        self,
        name: str,
        source: str | Path | list[Document],
        embedder: Embedder,
        params: IndexParams | None = None,
        progress: Progress | None = None,
        *,
        extras: Mapping[str, Any] | None = None,
        models: Mapping[str, Any] | None = None,
    ) -> BuildResult:
        """Index `source` as `name`; a no-op when `current` already holds this exact build.

        `extras` maps extra names (stores.extra_registry) to their build parameters: the same atomic build
        also holds them, and each extra they depend on with its default parameters. Their builds are
        handed `models` by name (the store never loads models itself). While another process builds
        `name`, this one waits for it (one warning line on the "hopgraph" logger names the holder), then
        builds, or finds its build done by the other.
        """
        started = time.perf_counter()
        models = models or {}
        wanted = _wanted_extras(extras or {}, models)
        index_dir = self._index_dir(name)
        docs = source if isinstance(source, list) else load_corpus(source)
        _check_unique(docs)
        corpus_path = "<documents>" if isinstance(source, list) else str(Path(source).resolve())
        # One writer per name: a second build of it waits, since the first may delete builds it supersedes
        # (this one's, half written) and two writers of one build folder would both write its Chroma files.
        with writer_lock(index_dir / LOCK_FILE, f"index {name!r}", wait=True):
            return self._build(
                name,
                docs,
                corpus_path,
                embedder,
                (params or IndexParams()).carried_by(docs),
                progress or (lambda stage, done, total: None),
                wanted,
                models,
                started,
            )

    def _build(
        self,
        name: str,
        docs: list[Document],
        corpus_path: str,
        embedder: Embedder,
        params: IndexParams,
        report: Progress,
        wanted: list[tuple[Extra[Any, Any, Any], Any]],
        models: Mapping[str, Any],
        started: float,
    ) -> BuildResult:
        """`build` once this process holds the name's lock: a build that waited for another sees what that
        one left (`current` may now be this very build, or a build to reuse vectors from)."""
        index_dir = self._index_dir(name)
        digest = corpus_hash(docs)
        build_id = _build_id(digest, embedder, params, _extra_keys(wanted, models))
        current = self.current_manifest(name)
        if current is not None and current.build_id == build_id:
            return BuildResult(current, "unchanged", time.perf_counter() - started)

        build_dir = self._build_dir(name, build_id)
        # A build that only adds, drops or changes extras of the current build's corpus copies that build's
        # chunk part whole, and the extras it keeps unchanged, instead of chunking, embedding and
        # BM25-indexing it again.
        same_chunks = None
        if (
            current is not None
            and not self.chroma.started(name, build_id, build_dir, COLLECTION)
            and (current.corpus_hash, current.params) == (digest, params)
            and current.embedded_by(embedder)
        ):
            same_chunks = current
        kept = _kept_extras(same_chunks, wanted, models)
        chunks: list[Chunk] = []
        if same_chunks is None:
            for done, doc in enumerate(docs, start=1):
                chunks.extend(
                    chunk_document(doc, embedder.token_spans, params.chunk_size, params.chunk_overlap)
                )
                report("chunk", done, len(docs))
            if not chunks:
                raise CorpusError(f"Corpus {corpus_path} produced no chunks: it holds no non-empty document.")

        self._forget(name, build_id)  # a cached index of this folder would hold Chroma state from before
        build_dir.mkdir(parents=True, exist_ok=True)
        open_appending(build_dir / _INCOMPLETE).close()  # created, never through a planted link

        if same_chunks is not None:
            self._copy_chunk_part(
                name, same_chunks, build_id, [extra for extra, _ in wanted if extra in kept]
            )
            chunk_count, present = same_chunks.chunks, 0
            report("copy-chunks", chunk_count, chunk_count)
        else:
            present = self._embed_missing(name, current, build_dir, chunks, embedder, params, report)
            report("bm25", 0, len(chunks))
            BM25Index([chunk.id for chunk in chunks], [params.indexed_text(chunk) for chunk in chunks]).save(
                build_dir / _BM25
            )
            report("bm25", len(chunks), len(chunks))
            chunk_count = len(chunks)

        infos, extras_resumed = self._build_extras(
            name, current, build_dir, docs, embedder, wanted, kept, models, report
        )

        manifest = Manifest(
            name=name,
            build_id=build_id,
            corpus_hash=digest,
            corpus_path=corpus_path,
            embedding_model=embedder.name,
            embedding_backend=embedder.backend,
            dimension=embedder.dimension,
            params=params,
            documents=len(docs),
            chunks=chunk_count,
            created_at=datetime.now(UTC).isoformat(timespec="seconds"),
            seconds=round(time.perf_counter() - started, 3),
            extras=infos,
        )
        write_atomic(build_dir / _MANIFEST, lambda handle: handle.write(manifest.to_json().encode("utf-8")))
        (build_dir / _INCOMPLETE).unlink()
        self._switch(index_dir, build_id)
        self._remove_other_builds(name, build_id)
        status: BuildStatus = "resumed" if present or extras_resumed else "built"
        return BuildResult(manifest, status, time.perf_counter() - started)

    def _embed_missing(
        self,
        name: str,
        current: Manifest | None,
        build_dir: Path,
        chunks: list[Chunk],
        embedder: Embedder,
        params: IndexParams,
        report: Progress,
    ) -> int:
        """Put every chunk into the build's Chroma collection; return how many were there already.

        Chunks already in the collection (an interrupted run of this build) are skipped, and chunks the
        current build embedded with the same model and the same title and text reuse its
        vector, so adding a few documents to a corpus embeds only the new ones.
        """
        with self.chroma.open(name, build_dir.name, build_dir) as collections:
            collection = collections.get_or_create(COLLECTION)
            present = set(collection.get(include=[])["ids"])
            todo = [chunk for chunk in chunks if chunk.id not in present]
            previous = self._previous_vectors(name, current, embedder, params, todo)
            done = len(chunks) - len(todo)
            report("embed", done, len(chunks))
            for batch in batches(todo, EMBED_BATCH):
                fresh = [chunk for chunk in batch if chunk.id not in previous]
                embedded = _embed(embedder, [params.indexed_text(chunk) for chunk in fresh])
                vectors = dict(zip([chunk.id for chunk in fresh], embedded, strict=True))
                vectors.update({chunk.id: previous[chunk.id] for chunk in batch if chunk.id in previous})
                collection.add(
                    ids=[chunk.id for chunk in batch],
                    embeddings=np.stack([vectors[chunk.id] for chunk in batch]),
                    documents=[chunk.text for chunk in batch],
                    metadatas=[_chunk_metadata(chunk) for chunk in batch],
                )
                done += len(batch)
                report("embed", done, len(chunks))
        return len(present)

    def _copy_chunk_part(
        self, name: str, source: Manifest, build_id: str, kept: list[Extra[Any, Any, Any]]
    ) -> None:
        """Copy the chunk part of the complete build `source` (Chroma collections and BM25 file) into build
        `build_id`, with the extras in `kept` (their folders and collections) and without any other extra's
        collections.

        Complete builds are never written again, so their files can be copied while readers have them open.
        Each folder is copied aside and renamed into place, the chunks collection last, so an interruption
        never leaves a partial copy that a resumed build would take for its own.
        """
        old_dir, build_dir = self._build_dir(name, source.build_id), self._build_dir(name, build_id)
        for extra in kept:
            _copy_folder(old_dir / extra.directory, build_dir / extra.directory)
        keep = [collection for extra in kept for collection in extra.collections]
        self.chroma.copy(name, (source.build_id, old_dir), (build_id, build_dir), [*keep, COLLECTION])
        shutil.copyfile(old_dir / _BM25, build_dir / _BM25)

    def _build_extras(
        self,
        name: str,
        current: Manifest | None,
        build_dir: Path,
        docs: list[Document],
        embedder: Embedder,
        wanted: list[tuple[Extra[Any, Any, Any], Any]],
        kept: set[Extra[Any, Any, Any]],
        models: Mapping[str, Any],
        report: Progress,
    ) -> tuple[dict[str, Any], bool]:
        """Build each wanted extra into `build_dir` in dependency order, except those copied whole from
        `current` (`kept`); returns (infos by name, whether any build resumed).

        An extra the `current` build holds, made with the same embedding model and models, hands its
        folder to the new build as `previous`, so its work on unchanged documents is reused.
        """
        infos: dict[str, Any] = {}
        resumed = False
        opened: dict[str, Any] = {}
        with self.chroma.open(name, build_dir.name, build_dir) as client:
            for extra, params in wanted:
                if extra in kept and current is not None:
                    infos[extra.name] = current.extras[extra.name]
                    continue
                previous = None
                earlier = None if current is None else current.extras.get(extra.name)
                if (
                    current is not None
                    and earlier is not None
                    and current.embedded_by(embedder)
                    and extra.same_models(earlier, models)
                ):
                    previous = self._build_dir(name, current.build_id) / extra.directory
                directory = build_dir / extra.directory
                directory.mkdir(exist_ok=True)
                dependencies = {
                    dependency: _open_extra(
                        extra_named(dependency), infos, build_dir, embedder, client, opened
                    )
                    for dependency in extra.depends_on
                }
                job = ExtraBuild(
                    params=params,
                    docs=docs,
                    embedder=embedder,
                    models=models,
                    directory=directory,
                    previous=previous,
                    chroma=client,
                    chunks=lambda: _stored_chunks(build_dir, client),
                    dependencies=dependencies,
                    report=report,
                )
                infos[extra.name], extra_resumed = extra.build(job)
                resumed = resumed or extra_resumed
        return infos, resumed

    def _previous_vectors(
        self,
        name: str,
        current: Manifest | None,
        embedder: Embedder,
        params: IndexParams,
        chunks: list[Chunk],
    ) -> dict[str, np.ndarray]:
        """Vectors of `chunks` in the `current` build whose embedded text is unchanged (same model, same
        metadata embedded, same title and text)."""
        if (
            current is None
            or not chunks
            or not current.embedded_by(embedder)
            or current.params.embed_metadata != params.embed_metadata
        ):
            return {}
        old_dir = self._build_dir(name, current.build_id)
        wanted = {chunk.id: chunk for chunk in chunks}
        vectors: dict[str, np.ndarray] = {}
        with self.chroma.open(name, current.build_id, old_dir) as collections:
            old = collections.get(COLLECTION)
            for batch in batches(list(wanted), GET_BATCH):
                result = old.get(ids=list(batch), include=["documents", "metadatas", "embeddings"])
                for chunk_id, text, meta, vector in zip(
                    result["ids"], result["documents"], result["metadatas"], result["embeddings"], strict=True
                ):
                    if text == wanted[chunk_id].text and meta["title"] == wanted[chunk_id].title:
                        vectors[chunk_id] = np.asarray(vector, dtype=np.float32)
        return vectors

    def open(self, name: str, embedder: Embedder) -> ChunkIndex:
        """The current build of `name`, opened once per process and shared.

        Every retrieval node opens its index on every call, so an already opened build is found from the
        `current` link alone, one readlink: reading and parsing its manifest again cost about 2 ms a call,
        and checking again that the build is complete three more file system calls (0.3 ms a TreeHop hop
        here), while a build once opened was complete and a complete build never changes.
        """
        build_id = self._linked_build(name)
        with self._lock:
            opened = self._open.get((name, build_id)) if build_id is not None else None
        if opened is not None and opened.manifest.embedded_by(embedder):
            return opened
        manifest = self.current_manifest(name)
        if manifest is None:
            # neither the other indexes' names nor the data directory: a Studio or API caller may be
            # anyone who reaches the server (the command line adds the names for its own user)
            raise IndexNotFoundError(
                f"No index named {name!r}. Build it with `hopgraph index PATH --name {name}`."
            )
        build_id = manifest.build_id
        build_dir = self._build_dir(name, build_id)
        if manifest.embedding_model != embedder.name:
            raise IndexMismatchError(
                f"Index {name!r} was built with embedding model {manifest.embedding_model!r}, but the "
                f"configured embedding model is {embedder.name!r}. Configure {manifest.embedding_model!r}, "
                f"or rebuild with `hopgraph index PATH --name {name}` using the configured model."
            )
        if manifest.embedding_backend != embedder.backend:
            raise IndexMismatchError(
                f"Index {name!r} was built with embedding_backend {manifest.embedding_backend!r}, but the "
                f"configured embedding_backend is {embedder.backend!r}: set embedding_backend = "
                f"{manifest.embedding_backend!r}, or rebuild with `hopgraph index PATH --name {name}`."
            )
        with self._lock:
            key = (name, build_id)
            if key not in self._open:
                self._open[key] = ChunkIndex(
                    build_dir,
                    manifest,
                    embedder,
                    self.chroma.open(name, build_id, build_dir),
                    self.exact_search_max_chunks,
                )
            return self._open[key]

    def list(self) -> builtins.list[Manifest]:
        """Manifests of every complete index, by name."""
        if not self.root.is_dir():
            return []
        names = (d.name for d in sorted(self.root.iterdir()) if _NAME.fullmatch(d.name))
        return [manifest for manifest in map(self.current_manifest, names) if manifest is not None]

    def current_manifest(self, name: str) -> Manifest | None:
        """The manifest of the build `name` currently serves, or None when it has no complete build."""
        build_id = self._current_build(name)
        if build_id is None:
            return None
        path = self._build_dir(name, build_id) / _MANIFEST
        manifest = Manifest.from_json(path.read_text(encoding="utf-8"))
        if manifest.build_id != build_id:  # every later path is built from the manifest's build_id
            raise IndexDamagedError(
                f"{path} names build_id {manifest.build_id!r}, not its own folder's {build_id}: index "
                f"{name!r} was altered. Rebuild it with `hopgraph index PATH --name {name}`."
            )
        return manifest

    def extra_directory(self, name: str, extra: str) -> Path | None:
        """The folder of extra `extra` in the build `name` currently serves; None when it has no such extra.

        For reading an extra's files before a build (a dry run's count of the work a build would reuse)."""
        manifest = self.current_manifest(name)
        if manifest is None or extra not in manifest.extras:
            return None
        return self._build_dir(name, manifest.build_id) / extra_named(extra).directory

    def interrupted_build_directory(
        self,
        name: str,
        docs: list[Document],
        embedder: Embedder,
        params: IndexParams,
        extras: Mapping[str, Any],
        models: Mapping[str, Any],
    ) -> Path | None:
        """The folder of the build that `build` with these arguments would resume: one started and stopped
        before it was complete (killed, or an LLM call failed); None when there is none.

        For a dry run, whose count of the work left must include what that build's journals already hold.
        """
        wanted = _wanted_extras(extras, models)
        build_dir = self._build_dir(
            name,
            _build_id(corpus_hash(docs), embedder, params.carried_by(docs), _extra_keys(wanted, models)),
        )
        return build_dir if (build_dir / _INCOMPLETE).exists() else None

    def _build_dir(self, name: str, build_id: str) -> Path:
        return self._index_dir(name) / "builds" / build_id

    def exists(self, name: str) -> bool:
        """Whether `name` has a complete build to query."""
        return self._current_build(name) is not None

    def _index_dir(self, name: str) -> Path:
        """The folder of index `name`; the name is checked because it becomes a path component."""
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise ValueError(
                f"invalid index name {name!r}: use letters, digits, '-', '_' and '.', "
                "starting with a letter or digit"
            )
        return self.root / name

    def _linked_build(self, name: str) -> str | None:
        """The build id `current` points at, complete or not (None without the link).

        `_switch` links only builds/<build id>; any other target (`current -> ../../..`, planted in a
        copied data directory) is refused rather than used as a path."""
        link = self._index_dir(name) / "current"
        try:
            target = Path(os.readlink(link))
        except OSError:
            return None
        if target.parent != Path("builds") or not _BUILD_ID.fullmatch(target.name):
            raise IndexDamagedError(
                f"{link} points at {str(target)!r}, not at one of the index's builds: index {name!r} was "
                f"altered. Remove the link and rebuild with `hopgraph index PATH --name {name}`."
            )
        return target.name

    def _current_build(self, name: str) -> str | None:
        """The build id `current` points at, if that build is complete."""
        build_id = self._linked_build(name)
        if build_id is None:
            return None
        build_dir = self._build_dir(name, build_id)
        if (build_dir / _INCOMPLETE).exists() or not (build_dir / _MANIFEST).is_file():
            return None
        return build_id

    def _switch(self, index_dir: Path, build_id: str) -> None:
        """Point `current` at the new build in one rename, so a reader sees the old build or the new."""
        temporary = index_dir / f".current.{os.getpid()}.{threading.get_ident()}"
        temporary.unlink(missing_ok=True)
        os.symlink(Path("builds") / build_id, temporary)
        os.replace(temporary, index_dir / "current")

    def _remove_other_builds(self, name: str, keep: str) -> None:
        """Delete superseded and abandoned builds of `name` (only ever after `current` has moved, and under
        the name's lock: an abandoned build is one whose writer died, never one a live process writes)."""
        builds = self._index_dir(name) / "builds"
        refuse_links(builds)  # deleting "the other builds" in a linked folder deletes what it points at
        for build_dir in builds.iterdir():
            if build_dir.name != keep:
                self._forget(name, build_dir.name)
                self.chroma.drop(name, build_dir.name, build_dir)
                shutil.rmtree(build_dir)

    def _forget(self, name: str, build_id: str) -> None:
        """Close and uncache an opened build, releasing Chroma's hold on its folder."""
        with self._lock:
            opened = self._open.pop((name, build_id), None)
        if opened is not None:
            opened.close()


def _check_unique(docs: list[Document]) -> None:
    """Chunk ids derive from document ids, so two documents with one id would overwrite each other."""
    seen: set[str] = set()
    for doc in docs:
        if doc.id in seen:
            raise CorpusError(f"Two documents share the id {doc.id!r}; document ids must be unique.")
        seen.add(doc.id)


def _embed(embedder: Embedder, texts: list[str]) -> np.ndarray:
    """Embed the chunks' indexed texts, checking the embedder keeps its promised shape."""
    if not texts:
        return np.empty((0, embedder.dimension), dtype=np.float32)
    vectors = np.asarray(embedder.embed(texts), dtype=np.float32)
    if vectors.shape != (len(texts), embedder.dimension):
        raise ValueError(
            f"embedder {embedder.name!r} returned shape {vectors.shape} for {len(texts)} texts, "
            f"expected ({len(texts)}, {embedder.dimension})"
        )
    return vectors


def _build_id(digest: str, embedder: Embedder, params: IndexParams, extra_keys: list[Any]) -> str:
    """Same corpus, model, backend and parameters give the same id, hence the same folder to resume into.

    `extra_keys` are the keys of the build's extras in name order, appended after the chunk part, so
    chunk-only indexes keep the ids they had before extras existed; `embed_metadata` enters only when
    set, and the embedding backend only when it is not LEGACY_BACKEND, for the same reason.
    """
    model = embedder.name if embedder.backend == LEGACY_BACKEND else f"{embedder.name} [{embedder.backend}]"
    chunking = asdict(params)
    if params.embed_metadata:
        # the metadata line's layout: 2 since dates are also written as questions write them
        chunking["metadata_line"] = METADATA_LINE_VERSION
    else:
        del chunking["embed_metadata"]
    parts: list[Any] = [digest, model, chunking, *extra_keys]
    key = json.dumps(parts, sort_keys=True)
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:16]


def _name_of(item: tuple[Extra[Any, Any, Any], Any]) -> str:
    """Extras' keys enter the build id in name order, whatever order they were asked or built in."""
    return item[0].name


def _extra_keys(wanted: list[tuple[Extra[Any, Any, Any], Any]], models: Mapping[str, Any]) -> list[Any]:
    """The wanted extras' keys in name order: their part of the build id."""
    return [extra.key(extra_params, models) for extra, extra_params in sorted(wanted, key=_name_of)]


def _wanted_extras(
    asked: Mapping[str, Any], models: Mapping[str, Any]
) -> list[tuple[Extra[Any, Any, Any], Any]]:
    """The asked extras and those they depend on, in build order, each with its parameters; an unknown
    name, a missing model or one that cannot serve (an extra's key checks its models) is an error here,
    before any work and before the name's writer lock creates its folder."""
    wanted = []
    for extra in in_build_order(asked):
        for model, needed in extra.models.items():
            if models.get(model) is None:
                raise ValueError(
                    f"building the {extra.name} extra needs {needed}: pass models={{{model!r}: ...}} "
                    f"(hopgraph's Services.{model})"
                )
        params = asked[extra.name] if extra.name in asked else extra.params_type()
        extra.key(params, models)
        wanted.append((extra, params))
    return wanted


def _kept_extras(
    source: Manifest | None, wanted: list[tuple[Extra[Any, Any, Any], Any]], models: Mapping[str, Any]
) -> set[Extra[Any, Any, Any]]:
    """The wanted extras that the build `source`, whose chunk part is copied, holds exactly as this build
    would make them: same parameters, same models, and every extra they depend on kept too."""
    kept: set[Extra[Any, Any, Any]] = set()
    if source is None:
        return kept
    for extra, params in wanted:
        info = source.extras.get(extra.name)
        if (
            info is not None
            and info.params == params
            and extra.same_models(info, models)
            and all(extra_named(dependency) in kept for dependency in extra.depends_on)
        ):
            kept.add(extra)
    return kept


def _open_extra(
    extra: Extra[Any, Any, Any],
    infos: Mapping[str, Any],
    build_dir: Path,
    embedder: Embedder,
    client: BuildCollections,
    opened: dict[str, Any],
) -> Any:
    """`extra` of the build in `build_dir`, opened with its dependencies, each at most once (in `opened`)."""
    if extra.name not in opened:
        dependencies = {
            dependency: _open_extra(extra_named(dependency), infos, build_dir, embedder, client, opened)
            for dependency in extra.depends_on
        }
        source = ExtraSource(build_dir / extra.directory, infos[extra.name], embedder, client, dependencies)
        opened[extra.name] = extra.open(source)
    return opened[extra.name]


def _fetch_chunks(collection: Any, ids: Sequence[str]) -> dict[str, Chunk]:
    """The chunks of `ids` that `collection` holds, by id, fetched in batches Chroma accepts."""
    found: dict[str, Chunk] = {}
    for batch in batches(ids, GET_BATCH):
        result = collection.get(ids=list(batch), include=["documents", "metadatas"])
        for found_id, text, meta in zip(result["ids"], result["documents"], result["metadatas"], strict=True):
            found[found_id] = _chunk_from_chroma(found_id, text, dict(meta))
    return found


def _stored_chunks(build_dir: Path, collections: BuildCollections) -> list[Chunk]:
    """Every chunk of the build in `build_dir`, in corpus order (BM25's), read back from Chroma."""
    ids = BM25Index.load(build_dir / _BM25).ids
    found = _fetch_chunks(collections.get(COLLECTION), ids)
    return [found[chunk_id] for chunk_id in ids]


def _copy_folder(source: Path, target: Path) -> None:
    """Copy `source` to `target` aside and rename it into place, replacing what an interrupted copy left."""
    staging = target.with_name(target.name + ".copy")
    shutil.rmtree(staging, ignore_errors=True)
    shutil.copytree(source, staging)
    shutil.rmtree(target, ignore_errors=True)
    os.replace(staging, target)
