"""spaCy's output as stored, and the corpus-order sentence table flattened from it.

The build writes these records right after the spaCy pass and reads them back to resume or to reuse the
unchanged documents of the previous build; the reader rebuilds its sentence table from them. One
definition of the format and of sentence ids serves all three.
"""

from __future__ import annotations

import gzip
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from stores.files import write_atomic

FORMAT_VERSION = 1
RECORDS_FILE = "sentences.json.gz"
GRAPH_FILE = "graph.npz"
ENTITIES_FILE = "entities.json.gz"


@dataclass
class DocRecord:
    """spaCy's output for one document, reusable for as long as the document's text is unchanged.

    Each sentence is [char_start, char_end, tokens, text, entity display names in mention order].
    """

    id: str
    title: str
    sha: str
    sentences: list[list[Any]]


@dataclass
class SentenceTable:
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


def text_sha(text: str) -> str:
    """What a record is reused by: the same text parses the same, whatever the document's other fields."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def write_json_gz(path: Path, payload: Any) -> None:
    """Compact gzipped JSON, written atomically (a resumed build trusts any file it finds)."""

    def write(handle: Any) -> None:
        with gzip.GzipFile(fileobj=handle, mode="wb", compresslevel=5) as zipped:
            zipped.write(json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))

    write_atomic(path, write)


def read_json_gz(path: Path) -> Any:
    """Inverse of `write_json_gz`."""
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return json.load(handle)


def load_records(directory: Path | None, nlp_id: str) -> dict[str, DocRecord]:
    """Records of an earlier spaCy pass with the same pipeline, by document id (empty if there is none)."""
    if directory is None or not (directory / RECORDS_FILE).is_file():
        return {}
    payload = read_json_gz(directory / RECORDS_FILE)
    if payload.get("version") != FORMAT_VERSION or payload.get("nlp") != nlp_id:
        return {}
    return {doc["id"]: DocRecord(**doc) for doc in payload["docs"]}


def sentence_id_at(doc_id: str, position: int) -> str:
    """A sentence's id: its document and its position there, like a chunk's (evidence ids trace back)."""
    return f"{doc_id}#s{position}"


def flatten(records: Sequence[DocRecord]) -> SentenceTable:
    """Corpus-order arrays of all sentences."""
    ids: list[str] = []
    texts: list[str] = []
    mentions: list[list[str]] = []
    doc_numbers: list[int] = []
    positions: list[int] = []
    spans: list[tuple[int, int, int]] = []
    for number, record in enumerate(records):
        for position, (start, end, tokens, text, names) in enumerate(record.sentences):
            ids.append(sentence_id_at(record.id, position))
            texts.append(text)
            mentions.append(names)
            doc_numbers.append(number)
            positions.append(position)
            spans.append((start, end, tokens))
    span_array = np.asarray(spans, dtype=np.int64).reshape(len(spans), 3)
    return SentenceTable(
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
