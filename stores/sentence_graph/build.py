"""Building a sentence graph: spaCy pass and embedding (overlapped), SS and EC edges, files written last.

This module only orders the stages and decides what an interrupted or previous build lets it skip; each
stage's work is in its own module.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from stores.errors import CorpusError
from stores.files import write_atomic
from stores.sentence_graph.embedding import SentenceWriter
from stores.sentence_graph.entities import ec_edge_count, entity_tables
from stores.sentence_graph.params import SentenceGraphInfo, SentenceGraphParams
from stores.sentence_graph.parse import pipeline_identity, spacy_pass
from stores.sentence_graph.records import (
    ENTITIES_FILE,
    FORMAT_VERSION,
    GRAPH_FILE,
    RECORDS_FILE,
    DocRecord,
    SentenceTable,
    flatten,
    load_records,
    sentence_id_at,
    text_sha,
    write_json_gz,
)
from stores.sentence_graph.similarity import similar_sentences

if TYPE_CHECKING:
    from chromadb.api.models.Collection import Collection

    from stores.documents import Document
    from stores.protocols import Embedder, NLPPipeline, Progress


def _sa_edge_count(table: SentenceTable, window: int) -> int:
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

    `directory` exists and may hold the output of an interrupted run of this same build; `previous` is the
    sentence folder of the index's current build when it used the same spaCy pipeline and embedding
    model: documents whose text is unchanged are then neither parsed nor embedded again.
    """
    nlp_id = pipeline_identity(nlp)
    own = load_records(directory, nlp_id)
    prior = load_records(previous, nlp_id)
    reusable = _previous_vectors(previous, prior, docs) if previous is not None and prior else {}
    timings: dict[str, float] = {}
    writer = SentenceWriter(embedder, collection, reusable)
    try:
        started = time.perf_counter()
        records = spacy_pass(docs, nlp, {**prior, **own}, writer.add, report)
        timings["spacy"] = time.perf_counter() - started
        if not own:
            payload = {"version": FORMAT_VERSION, "nlp": nlp_id, "docs": [asdict(r) for r in records]}
            write_json_gz(directory / RECORDS_FILE, payload)
        table = flatten(records)
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
    ss_indptr, ss_indices = similar_sentences(vectors, params.similar_m, report)
    timings["similarity"] = time.perf_counter() - started

    started = time.perf_counter()
    report("sentence-graph", 0, 1)
    ents = entity_tables(table, params.alpha)
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
    write_atomic(directory / GRAPH_FILE, lambda handle: np.savez(handle, **arrays))
    write_json_gz(directory / ENTITIES_FILE, {"version": FORMAT_VERSION, "display": ents.display})
    info = SentenceGraphInfo(
        params=params,
        nlp=nlp_id,
        sentences=len(table.ids),
        entities=len(ents.display),
        key_entities=int(np.count_nonzero(np.diff(ents.ec_indptr))),
        ec_edges=ec_edge_count(ents),
        ss_edges=len(ss_indices) // 2,
        sa_edges=_sa_edge_count(table, params.window),
    )
    timings["graph"] = time.perf_counter() - started
    info.seconds = {stage: round(seconds, 3) for stage, seconds in timings.items()}
    report("sentence-graph", 1, 1)
    return info, bool(own) or writer.resumed > 0


def _previous_vectors(
    previous: Path, prior: dict[str, DocRecord], docs: Sequence[Document]
) -> dict[str, np.ndarray]:
    """The previous build's vectors of the sentences of documents whose text it already had.

    `prior` is the previous build's records in its corpus order, which is the row order of its vectors.
    """
    old_rows: dict[str, int] = {}
    for record in prior.values():
        for position in range(len(record.sentences)):
            old_rows[sentence_id_at(record.id, position)] = len(old_rows)
    wanted = [
        (sentence_id_at(doc.id, position), old_rows[sentence_id_at(doc.id, position)])
        for doc in docs
        if doc.id in prior and prior[doc.id].sha == text_sha(doc.text)
        for position in range(len(prior[doc.id].sentences))
    ]
    if not wanted:
        return {}
    with np.load(previous / GRAPH_FILE) as graph:
        old_vectors = graph["embeddings"]
    return {sentence_id: old_vectors[row] for sentence_id, row in wanted}
