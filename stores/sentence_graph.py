"""ChainRAG's sentence graph (paper section 3.1): sentences as nodes, three labelled kinds of edges.

- EC (entity co-occurrence): two sentences share a key entity. A sentence's key entities are the top
  alpha% of its spaCy entities by BM25 importance (the entity is the term, the sentences the collection).
- SS (semantic similarity): one sentence is among the other's `similar_m` most similar by embedding.
- SA (structural adjacency): same document, at most `window` sentences apart.

Edges are stored compactly, because a hub entity ("2023", "Google") sits in thousands of sentences and
would otherwise materialise millions of EC edges: EC as an inverted index (key entity -> sentences), SS as
CSR arrays, SA not at all (a document's sentences are numbered consecutively, so adjacency is arithmetic).

    sentences/sentences.json.gz  spaCy's output per document (spans, text, entity mentions); written right
                                 after the spaCy pass, so a resumed or incremental build re-parses nothing
                                 it already has
    sentences/graph.npz          embeddings; sentence -> entities and sentence -> key entities (CSR);
                                 EC as the inverted index key entity -> sentences; SS as symmetric CSR
    sentences/entities.json.gz   display name of every entity, by entity number
    chroma/ collection "sentences"  the same sentences and vectors, for filtered vector search
"""

from __future__ import annotations

import gzip
import hashlib
import json
import re
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from chromadb.api.models.Collection import Collection

from stores.documents import Document, Span
from stores.errors import CorpusError, IndexNotFoundError
from stores.files import batches, write_atomic
from stores.protocols import Embedder, NLPDoc, NLPPipeline

Progress = Callable[[str, int, int], None]

SENTENCES_DIR = "sentences"
SENTENCE_COLLECTION = "sentences"
EDGE_KINDS: frozenset[str] = frozenset({"EC", "SS", "SA"})

_FORMAT_VERSION = 1
_RECORDS = "sentences.json.gz"
_GRAPH = "graph.npz"
_ENTITIES = "entities.json.gz"
_K1, _B = 1.5, 0.75
_SPACY_BATCH = 16
# Sentences per embed() call and Chroma insert: small enough that the embedder starts while spaCy is still
# early in the corpus, large enough that sorting a chunk by length leaves model batches little padding.
_EMBED_CHUNK = 1024
# Bytes of one block of the similarity matrix (rows x all sentences, float32); partition copies it once.
_SIMILARITY_BLOCK_BYTES = 1 << 27
# Pipeline components whose output (POS tags, morphology, lemmas) a sentence graph never reads: skipping
# them for the pass saves about a fifth of spaCy's time with en_core_web_sm, without changing its output.
_UNNEEDED_PIPES = frozenset(
    {"tagger", "morphologizer", "attribute_ruler", "lemmatizer", "trainable_lemmatizer"}
)
_SENTENCE_PIPES = frozenset({"parser", "senter", "sentencizer"})
_WHITESPACE = re.compile(r"\s+")
_POSSESSIVE = re.compile(r"(?:['’][sS]|(?<=[sS])['’])$")
_LEADING_THE = re.compile(r"^the\s+")
_QUOTES = "\"'“”‘’()[]"


class SentenceGraphMissingError(IndexNotFoundError):
    """The index exists but was built without a sentence graph (e.g. for NaiveRAG only)."""


@dataclass(frozen=True)
class SentenceGraphParams:
    """The paper's graph parameters (section 4.1: alpha=60, m=10; SA spans three sentences).

    They enter the build id, so changing one builds a new index (reusing spaCy's output and embeddings).
    """

    alpha: int = 60
    similar_m: int = 10
    window: int = 3

    def __post_init__(self) -> None:
        if not 0 < self.alpha <= 100:
            raise ValueError(f"alpha is a percentage of a sentence's entities: 1..100, got {self.alpha}")
        if self.similar_m < 0 or self.window < 0:
            raise ValueError(f"similar_m and window must be >= 0, got {self.similar_m} and {self.window}")


@dataclass(frozen=True)
class Sentence(Span):
    """One node of the graph: entities by display name in mention order, key entities most important
    first."""

    entities: tuple[str, ...]
    key_entities: tuple[str, ...]


@dataclass
class SentenceGraphInfo:
    """The sentence graph's part of an index manifest: how it was made, its size, where the time went."""

    params: SentenceGraphParams
    nlp: str
    sentences: int
    entities: int
    key_entities: int
    ec_edges: int
    ss_edges: int
    sa_edges: int
    seconds: dict[str, float] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SentenceGraphInfo:
        """Inverse of `dataclasses.asdict`, restoring the nested params."""
        return cls(**{**data, "params": SentenceGraphParams(**data["params"])})


def pipeline_identity(nlp: NLPPipeline) -> str:
    """Name and version of a spaCy pipeline (part of the build id: another model finds other entities),
    after checking it can split sentences and find entities, so a wrong one fails before any work."""
    identity = f"{nlp.meta['lang']}_{nlp.meta['name']}-{nlp.meta['version']}"
    if "ner" not in nlp.pipe_names or not _SENTENCE_PIPES & set(nlp.pipe_names):
        raise ValueError(
            f"the spaCy pipeline {identity} must split sentences (parser, senter or sentencizer) and find "
            f"entities (ner); its enabled components are {nlp.pipe_names}"
        )
    return identity


def entity_display(text: str) -> str:
    """An entity mention as shown to people: single spaces, no possessive ("Apple's" -> "Apple")."""
    return _POSSESSIVE.sub("", _WHITESPACE.sub(" ", text).strip()).strip(_QUOTES + " ")


def entity_key(display: str) -> str:
    """What makes two mentions one entity: case and a leading "the" do not ("The Fed" = "the Fed")."""
    return _LEADING_THE.sub("", display.casefold())


@dataclass
class _DocRecord:
    """spaCy's output for one document, reusable for as long as the document's text is unchanged.

    Each sentence is [char_start, char_end, tokens, text, entity display names in mention order].
    """

    id: str
    title: str
    sha: str
    sentences: list[list[Any]]


@dataclass
class _Table:
    """All sentences of the corpus flattened in corpus order (a document's sentences are consecutive)."""

    ids: list[str]
    texts: list[str]
    doc: np.ndarray  # document number per sentence
    position: np.ndarray
    char_start: np.ndarray
    char_end: np.ndarray
    tokens: np.ndarray
    mentions: list[list[str]]
    doc_ids: list[str]
    titles: list[str]


def _text_sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def _write_json_gz(path: Path, payload: Any) -> None:
    def write(handle: Any) -> None:
        with gzip.GzipFile(fileobj=handle, mode="wb", compresslevel=5) as zipped:
            zipped.write(json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))

    write_atomic(path, write)


def _read_json_gz(path: Path) -> Any:
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return json.load(handle)


def _load_records(directory: Path | None, nlp_id: str) -> dict[str, _DocRecord]:
    """Records of an earlier spaCy pass with the same pipeline, by document id (empty if there is none)."""
    if directory is None or not (directory / _RECORDS).is_file():
        return {}
    payload = _read_json_gz(directory / _RECORDS)
    if payload.get("version") != _FORMAT_VERSION or payload.get("nlp") != nlp_id:
        return {}
    return {doc["id"]: _DocRecord(**doc) for doc in payload["docs"]}


def _parse(doc: Document, parsed: NLPDoc) -> _DocRecord:
    """Sentences of one parsed document with exact spans (surrounding whitespace trimmed) and entities.

    spaCy attaches trailing whitespace ("\\n\\n") to a sentence and may yield whitespace-only ones: those
    are dropped, so positions count real sentences only and SA windows have no holes.
    """
    ents = list(parsed.ents)
    next_ent = 0
    sentences: list[list[Any]] = []
    for sent in parsed.sents:
        names: list[str] = []
        # An entity belongs to the sentence it starts in (spaCy's NER does not see sentence boundaries).
        while next_ent < len(ents) and ents[next_ent].start < sent.end:
            name = entity_display(ents[next_ent].text)
            if entity_key(name):
                names.append(name)
            next_ent += 1
        raw = sent.text
        text = raw.strip()
        if not text:
            continue
        start = sent.start_char + len(raw) - len(raw.lstrip())
        sentences.append([start, start + len(text), len(sent), text, names])
    return _DocRecord(doc.id, doc.title, _text_sha(doc.text), sentences)


def _spacy_pass(
    docs: Sequence[Document],
    nlp: NLPPipeline,
    known: dict[str, _DocRecord],
    on_record: Callable[[_DocRecord], None],
    report: Progress,
) -> list[_DocRecord]:
    """Split and tag every document whose text is not already in `known`, in one batched nlp.pipe pass.

    Each document's record goes to `on_record` as soon as it exists, so its sentences can be embedded
    while spaCy parses the next documents.
    """
    records: dict[str, _DocRecord] = {}
    todo: list[Document] = []
    for doc in docs:
        record = known.get(doc.id)
        if record is not None and record.sha == _text_sha(doc.text):
            records[doc.id] = _DocRecord(doc.id, doc.title, record.sha, record.sentences)
            on_record(records[doc.id])
        else:
            if len(doc.text) > nlp.max_length:
                raise CorpusError(
                    f"Document {doc.id!r} has {len(doc.text)} characters, more than the spaCy pipeline's "
                    f"max_length ({nlp.max_length}); split it, or raise nlp.max_length if memory allows."
                )
            todo.append(doc)
    report("spacy", len(records), len(docs))
    disable = [pipe for pipe in nlp.pipe_names if pipe in _UNNEEDED_PIPES]
    parsed_docs = nlp.pipe((doc.text for doc in todo), batch_size=_SPACY_BATCH, disable=disable)
    for doc, parsed in zip(todo, parsed_docs, strict=True):
        records[doc.id] = _parse(doc, parsed)
        on_record(records[doc.id])
        report("spacy", len(records), len(docs))
    return [records[doc.id] for doc in docs]


def _sentence_id(doc_id: str, position: int) -> str:
    return f"{doc_id}#s{position}"


def _flatten(records: Sequence[_DocRecord]) -> _Table:
    """Corpus-order arrays of all sentences."""
    ids: list[str] = []
    texts: list[str] = []
    mentions: list[list[str]] = []
    doc_numbers: list[int] = []
    positions: list[int] = []
    spans: list[tuple[int, int, int]] = []
    for number, record in enumerate(records):
        for position, (start, end, tokens, text, names) in enumerate(record.sentences):
            ids.append(_sentence_id(record.id, position))
            texts.append(text)
            mentions.append(names)
            doc_numbers.append(number)
            positions.append(position)
            spans.append((start, end, tokens))
    span_array = np.asarray(spans, dtype=np.int64).reshape(len(spans), 3)
    return _Table(
        ids=ids,
        texts=texts,
        doc=np.asarray(doc_numbers, dtype=np.int32),
        position=np.asarray(positions, dtype=np.int32),
        char_start=span_array[:, 0],
        char_end=span_array[:, 1],
        tokens=span_array[:, 2],
        mentions=mentions,
        doc_ids=[record.id for record in records],
        titles=[record.title for record in records],
    )


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


class _SentenceWriter:
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

    def add(self, record: _DocRecord) -> None:
        """Queue the sentences of one document; hand the worker every full chunk."""
        for position, (start, end, _tokens, text, _names) in enumerate(record.sentences):
            sentence_id = _sentence_id(record.id, position)
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


def _similar(vectors: np.ndarray, m: int, report: Progress) -> tuple[np.ndarray, np.ndarray]:
    """SS edges as symmetric CSR: each sentence's top-m most similar others, in either direction.

    The similarity matrix is computed a block of rows at a time (never all pairs in memory, never a Python
    loop over pairs). Per row, `np.partition` finds the m-th best score and a comparison picks everything
    at least that good, which is cheaper than `argpartition`'s index shuffling; ties are then cut to m,
    best first and lower sentence number first, so the graph does not depend on partition order.
    """
    n = len(vectors)
    m = min(m, n - 1)
    if m <= 0:
        return np.zeros(n + 1, dtype=np.int64), np.empty(0, dtype=np.int32)
    block = max(1, _SIMILARITY_BLOCK_BYTES // (4 * n))
    sources: list[np.ndarray] = []
    targets: list[np.ndarray] = []
    for start in range(0, n, block):
        scores = vectors[start : start + block] @ vectors.T
        local = np.arange(len(scores))
        scores[local, start + local] = -np.inf
        kth = np.partition(scores, n - m, axis=1)[:, n - m]
        rows, cols = np.nonzero(scores >= kth[:, None])
        order = np.lexsort((cols, -scores[rows, cols], rows))
        rows, cols = rows[order], cols[order]
        first = np.concatenate(([0], np.cumsum(np.bincount(rows, minlength=len(scores)))[:-1]))
        keep = np.arange(len(rows)) - first[rows] < m
        sources.append(rows[keep] + start)
        targets.append(cols[keep])
        report("similarity", min(start + block, n), n)
    return _symmetric_csr(np.concatenate(sources), np.concatenate(targets), n)


def _symmetric_csr(sources: np.ndarray, targets: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """CSR (indptr, sorted indices per row) of the undirected union of the directed pairs given."""
    keys = np.unique(
        np.concatenate((sources.astype(np.int64) * n + targets, targets.astype(np.int64) * n + sources))
    )
    return _csr(keys // n, keys % n, n)


def _csr(rows: np.ndarray, values: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """CSR of (row, value) pairs already grouped by row."""
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=n), out=indptr[1:])
    return indptr, values.astype(np.int32)


@dataclass
class _Entities:
    """Entities of the corpus and the graph's entity structures, all as arrays of entity numbers."""

    display: list[str]
    entity_indptr: np.ndarray  # sentence -> its distinct entities, first mention first
    entity_indices: np.ndarray
    key_indptr: np.ndarray  # sentence -> its key entities, most important first
    key_indices: np.ndarray
    ec_indptr: np.ndarray  # key entity -> the sentences it is key in (EC, stored as an inverted index)
    ec_indices: np.ndarray


def _entities(table: _Table, alpha: int) -> _Entities:
    """Number the entities, then keep each sentence's top ceil(alpha% of |E_i|) by BM25 as key entities.

    BM25 with the entity as the term and the sentences as the collection: idf from the number of sentences
    mentioning the entity (the Lucene form log(1 + (N - df + .5) / (df + .5)), which stays positive for
    an entity in most sentences, unlike Okapi's), tf = its mentions in the sentence, and the sentence's
    token count against the average for length normalisation (k1=1.5, b=0.75). Ties keep mention order.
    """
    n = len(table.ids)
    numbers: dict[str, int] = {}
    forms: list[Counter[str]] = []
    pair_sentence: list[int] = []
    pair_entity: list[int] = []
    pair_tf: list[int] = []
    for row, names in enumerate(table.mentions):
        counts: dict[int, int] = {}
        for name in names:
            key = entity_key(name)
            number = numbers.setdefault(key, len(numbers))
            if number == len(forms):
                forms.append(Counter())
            forms[number][name] += 1
            counts[number] = counts.get(number, 0) + 1
        for number, tf in counts.items():
            pair_sentence.append(row)
            pair_entity.append(number)
            pair_tf.append(tf)
    # The most frequent surface form names an entity; Counter breaks ties by first occurrence.
    display = [form.most_common(1)[0][0] for form in forms]
    sentence = np.asarray(pair_sentence, dtype=np.int64)
    entity = np.asarray(pair_entity, dtype=np.int64)
    tf = np.asarray(pair_tf, dtype=np.float64)
    entity_indptr, entity_indices = _csr(sentence, entity, n)

    df = np.bincount(entity, minlength=len(display)).astype(np.float64)
    idf = np.log1p((n - df + 0.5) / (df + 0.5))
    lengths = table.tokens.astype(np.float64)
    norm = _K1 * (1 - _B + _B * lengths / max(lengths.mean(), 1.0))
    score = idf[entity] * tf * (_K1 + 1) / (tf + norm[sentence])
    order = np.lexsort((np.arange(len(entity)), -score, sentence))
    sentence, entity = sentence[order], entity[order]
    per_sentence = np.diff(entity_indptr)
    keep_count = (alpha * per_sentence + 99) // 100  # ceil(alpha% of |E_i|) in exact integer arithmetic
    rank = np.arange(len(sentence)) - entity_indptr[:-1][sentence]
    keep = rank < keep_count[sentence]
    key_sentence, key_entity = sentence[keep], entity[keep]
    key_indptr, key_indices = _csr(key_sentence, key_entity, n)
    by_entity = np.lexsort((key_sentence, key_entity))
    ec_indptr, ec_indices = _csr(key_entity[by_entity], key_sentence[by_entity], len(display))
    return _Entities(display, entity_indptr, entity_indices, key_indptr, key_indices, ec_indptr, ec_indices)


def _ec_edge_count(ents: _Entities) -> int:
    """Distinct sentence pairs sharing at least one key entity, counted without listing hub entities' pairs.

    A sentence with one key entity is linked to every other sentence of that entity; only sentences with
    several key entities need the union of their entities' sentences.
    """
    sizes = np.diff(ents.ec_indptr)
    per_sentence = np.diff(ents.key_indptr)
    single = per_sentence == 1
    degrees = int((sizes[ents.key_indices[ents.key_indptr[:-1][single]]] - 1).sum())
    for row in np.flatnonzero(per_sentence > 1):
        keys = ents.key_indices[ents.key_indptr[row] : ents.key_indptr[row + 1]]
        degrees += len(_union_rows(ents.ec_indptr, ents.ec_indices, keys)) - 1
    return degrees // 2


def _union_rows(indptr: np.ndarray, indices: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """The sorted union of the CSR rows `rows`."""
    if not len(rows):
        return np.empty(0, dtype=np.int64)
    return np.unique(np.concatenate([indices[indptr[row] : indptr[row + 1]] for row in rows.tolist()]))


def _sa_edge_count(table: _Table, window: int) -> int:
    """Pairs of sentences of one document at most `window` apart."""
    lengths = np.bincount(table.doc, minlength=len(table.doc_ids))
    return int(sum(np.clip(lengths - distance, 0, None).sum() for distance in range(1, window + 1)))


def build_sentence_graph(
    docs: Sequence[Document],
    nlp: NLPPipeline,
    embedder: Embedder,
    params: SentenceGraphParams,
    directory: Path,
    collection: Collection,
    previous: Path | None,
    report: Progress,
) -> tuple[SentenceGraphInfo, bool]:
    """Build the graph of `docs` into `directory` and the Chroma `collection`; returns (info, resumed).

    `directory` may hold the output of an interrupted run of this same build, and `previous` is the
    sentence folder of the index's current build when it used the same spaCy pipeline and embedding
    model: documents whose text is unchanged are then neither parsed nor embedded again.
    """
    nlp_id = pipeline_identity(nlp)
    directory.mkdir(parents=True, exist_ok=True)
    own = _load_records(directory, nlp_id)
    prior = _load_records(previous, nlp_id)
    reusable = _previous_vectors(previous, prior, docs) if previous is not None and prior else {}
    timings: dict[str, float] = {}
    writer = _SentenceWriter(embedder, collection, reusable)
    try:
        started = time.perf_counter()
        records = _spacy_pass(docs, nlp, {**prior, **own}, writer.add, report)
        timings["spacy"] = time.perf_counter() - started
        if not own:
            payload = {"version": _FORMAT_VERSION, "nlp": nlp_id, "docs": [asdict(r) for r in records]}
            _write_json_gz(directory / _RECORDS, payload)
        table = _flatten(records)
        if not table.ids:
            raise CorpusError("The corpus holds no sentences to build a sentence graph from.")
        started = time.perf_counter()
        by_id = writer.finish(len(table.ids), report)
        # Time spent waiting for the embedder once spaCy was done: spaCy + this is the two passes' wall time.
        timings["embed_wait"] = time.perf_counter() - started
        timings.update(writer.seconds)
    finally:
        writer.close()
    vectors = np.stack([by_id[sentence_id] for sentence_id in table.ids])

    started = time.perf_counter()
    ss_indptr, ss_indices = _similar(vectors, params.similar_m, report)
    timings["similarity"] = time.perf_counter() - started

    started = time.perf_counter()
    report("sentence-graph", 0, 1)
    ents = _entities(table, params.alpha)
    arrays = {
        "embeddings": vectors,
        "entity_indptr": ents.entity_indptr,
        "entity_indices": ents.entity_indices,
        "key_indptr": ents.key_indptr,
        "key_indices": ents.key_indices,
        "ec_indptr": ents.ec_indptr,
        "ec_indices": ents.ec_indices,
        "ss_indptr": ss_indptr,
        "ss_indices": ss_indices,
    }
    write_atomic(directory / _GRAPH, lambda handle: np.savez(handle, **arrays))
    _write_json_gz(directory / _ENTITIES, {"version": _FORMAT_VERSION, "display": ents.display})
    info = SentenceGraphInfo(
        params=params,
        nlp=nlp_id,
        sentences=len(table.ids),
        entities=len(ents.display),
        key_entities=int(np.count_nonzero(np.diff(ents.ec_indptr))),
        ec_edges=_ec_edge_count(ents),
        ss_edges=len(ss_indices) // 2,
        sa_edges=_sa_edge_count(table, params.window),
    )
    timings["graph"] = time.perf_counter() - started
    info.seconds = {stage: round(seconds, 3) for stage, seconds in timings.items()}
    report("sentence-graph", 1, 1)
    return info, bool(own) or writer.resumed > 0


def _previous_vectors(
    previous: Path, prior: dict[str, _DocRecord], docs: Sequence[Document]
) -> dict[str, np.ndarray]:
    """The previous build's vectors of the sentences of documents whose text it already had.

    `prior` is the previous build's records in its corpus order, which is the row order of its vectors.
    """
    old_rows: dict[str, int] = {}
    for record in prior.values():
        for position in range(len(record.sentences)):
            old_rows[_sentence_id(record.id, position)] = len(old_rows)
    wanted = [
        (_sentence_id(doc.id, position), old_rows[_sentence_id(doc.id, position)])
        for doc in docs
        if doc.id in prior and prior[doc.id].sha == _text_sha(doc.text)
        for position in range(len(prior[doc.id].sentences))
    ]
    if not wanted:
        return {}
    with np.load(previous / _GRAPH) as graph:
        old_vectors = graph["embeddings"]
    return {sentence_id: old_vectors[row] for sentence_id, row in wanted}


class SentenceGraph:
    """A loaded sentence graph: sentence lookup, the embedding pre-filter, and neighbours by edge kind.

    Everything lives in memory as numpy arrays (about 1.6 KB per sentence with MiniLM), so queries never
    touch Chroma or disk; instances are read-only and safe to share between threads.
    """

    def __init__(self, directory: Path, params: SentenceGraphParams, embedder: Embedder) -> None:
        self._embedder = embedder
        self._window = params.window
        records = [_DocRecord(**doc) for doc in _read_json_gz(directory / _RECORDS)["docs"]]
        table = _flatten(records)
        self._ids = table.ids
        self._row = {sentence_id: row for row, sentence_id in enumerate(self._ids)}
        self._texts = table.texts
        self._doc = table.doc
        self._doc_ids = table.doc_ids
        self._titles = table.titles
        self._position = table.position
        self._char_start = table.char_start
        self._char_end = table.char_end
        # Row of each document's first sentence: SA neighbours are rows within the window and the document.
        self._doc_start = np.concatenate(([0], np.cumsum(np.bincount(table.doc, minlength=len(records)))))
        self._display = _read_json_gz(directory / _ENTITIES)["display"]
        with np.load(directory / _GRAPH) as graph:
            self._vectors = graph["embeddings"]
            self._entity_indptr = graph["entity_indptr"]
            self._entity_indices = graph["entity_indices"]
            self._key_indptr = graph["key_indptr"]
            self._key_indices = graph["key_indices"]
            self._ec_indptr = graph["ec_indptr"]
            self._ec_indices = graph["ec_indices"]
            self._ss_indptr = graph["ss_indptr"]
            self._ss_indices = graph["ss_indices"]

    def __len__(self) -> int:
        return len(self._ids)

    def sentence(self, sentence_id: str) -> Sentence:
        """The sentence with this id; KeyError if the graph has none."""
        row = self._rows([sentence_id])[0]
        doc = self._doc[row]
        return Sentence(
            id=self._ids[row],
            doc_id=self._doc_ids[doc],
            title=self._titles[doc],
            text=self._texts[row],
            position=int(self._position[row]),
            char_start=int(self._char_start[row]),
            char_end=int(self._char_end[row]),
            entities=self._names(self._entity_indptr, self._entity_indices, row),
            key_entities=self._names(self._key_indptr, self._key_indices, row),
        )

    def sentences(self, ids: Iterable[str]) -> list[Sentence]:
        """Sentences by id, in the order asked."""
        return [self.sentence(sentence_id) for sentence_id in ids]

    def embeddings(self, ids: Iterable[str]) -> np.ndarray:
        """The stored (L2-normalised, float32) vectors of `ids`, one row each, in the order asked."""
        return self._vectors[self._rows(ids)]

    def candidates(self, query: str, n: int = 100) -> list[tuple[str, float]]:
        """The `n` sentences most similar to `query` (cosine), best first: the paper's seed pre-filter.

        One matrix-vector product over all sentences: ~50k x 384 takes a few milliseconds.
        """
        if n <= 0:
            return []
        scores = self._vectors @ np.asarray(self._embedder.embed([query]), dtype=np.float32)[0]
        top = np.argpartition(-scores, n - 1)[:n] if n < len(scores) else np.arange(len(scores))
        top = top[np.lexsort((top, -scores[top]))]
        return [(self._ids[row], float(scores[row])) for row in top]

    def neighbors(self, ids: Iterable[str], kinds: frozenset[str] = EDGE_KINDS) -> dict[str, set[str]]:
        """Every sentence adjacent to one of `ids` by an enabled edge kind (not `ids` themselves), mapped to
        the kinds that connect it; in corpus order. Disabling kinds is ChainRAG's edge ablation."""
        unknown = set(kinds) - EDGE_KINDS
        if unknown:
            raise ValueError(f"unknown edge kind(s) {sorted(unknown)}; use {sorted(EDGE_KINDS)}")
        seeds = np.unique(np.asarray(self._rows(ids), dtype=np.int64))
        found: dict[str, np.ndarray] = {}
        if "EC" in kinds:
            keys = _union_rows(self._key_indptr, self._key_indices, seeds)
            found["EC"] = _union_rows(self._ec_indptr, self._ec_indices, keys)
        if "SS" in kinds:
            found["SS"] = _union_rows(self._ss_indptr, self._ss_indices, seeds)
        if "SA" in kinds:
            found["SA"] = self._adjacent(seeds)
        linked: dict[int, set[str]] = {}
        for kind, rows in found.items():
            for row in np.setdiff1d(rows, seeds).tolist():
                linked.setdefault(row, set()).add(kind)
        return {self._ids[row]: linked[row] for row in sorted(linked)}

    def edge(self, a: str, b: str) -> dict[str, tuple[str, ...]]:
        """The kinds of edge between two sentences: EC with the display names of their shared key
        entities, SS and SA with an empty tuple; an empty dict when they are not adjacent."""
        i, j = self._rows([a, b])
        if i == j:
            return {}
        kinds: dict[str, tuple[str, ...]] = {}
        mine = self._key_indices[self._key_indptr[i] : self._key_indptr[i + 1]]
        theirs = set(self._key_indices[self._key_indptr[j] : self._key_indptr[j + 1]].tolist())
        shared = tuple(self._display[key] for key in mine.tolist() if key in theirs)
        if shared:
            kinds["EC"] = shared
        similar = self._ss_indices[self._ss_indptr[i] : self._ss_indptr[i + 1]]
        at = np.searchsorted(similar, j)
        if at < len(similar) and similar[at] == j:
            kinds["SS"] = ()
        if self._doc[i] == self._doc[j] and abs(i - j) <= self._window:
            kinds["SA"] = ()
        return kinds

    def _rows(self, ids: Iterable[str]) -> list[int]:
        if isinstance(ids, str):
            raise TypeError("pass a list of sentence ids, not one id string")
        try:
            return [self._row[sentence_id] for sentence_id in ids]
        except KeyError as exc:
            raise KeyError(f"the sentence graph has no sentence {exc.args[0]!r}") from None

    def _names(self, indptr: np.ndarray, indices: np.ndarray, row: int) -> tuple[str, ...]:
        return tuple(self._display[number] for number in indices[indptr[row] : indptr[row + 1]].tolist())

    def _adjacent(self, seeds: np.ndarray) -> np.ndarray:
        """Rows within the SA window of a seed, inside the seed's document."""
        spans = []
        for row in seeds.tolist():
            doc = self._doc[row]
            low = max(int(self._doc_start[doc]), row - self._window)
            high = min(int(self._doc_start[doc + 1]), row + self._window + 1)
            spans.append(np.arange(low, high))
        return np.unique(np.concatenate(spans)) if spans else np.empty(0, dtype=np.int64)
