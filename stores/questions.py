"""Hypothetical questions per chunk, as an index extra: QuOTE's entries, and the question nodes BiQOG links.

For every chunk a question writer (an LLM the store never sees, handed in as `models["question_writer"]`)
writes up to `per_chunk` questions the chunk answers. The extra keeps, in the build being made:

    questions/written.jsonl      one line per chunk, appended and fsynced as soon as its questions come back:
                                 chunk id, a digest of its title and text, how many questions were asked
                                 for, the questions kept, and what the parser did. It is the durable record
                                 of the LLM work: a build killed at any point (kill -9 included) and run
                                 again asks only for chunks not in it; a build for an edited or grown corpus
                                 takes every unchanged chunk's line from the previous build's file and asks
                                 only for the new or changed chunks.
    chroma/ "questions"          each question alone, embedded: what a question-to-question or query-to-
                                 question search reads (BiQOG's seed questions)
    chroma/ "question_chunks"    each question followed by its chunk's title and text, embedded: QuOTE's
                                 entries, one per question, searched by `QuestionStore.nearest_entries`

Both collections hold the question as the document and `chunk_id` and `number` (its position among the
chunk's questions) as metadata; an entry's id is "<chunk id>?<number>". Like every extra, all of it lives in
the build's own folder and collections, which queries reach only after the store switches `current` to the
complete build: a half-written extra is never visible.

`max_chunks` (0 = all) asks about the first chunks only, in corpus order: a trial build whose cost and
questions can be looked at before paying for the whole corpus. A later build without it reuses those chunks'
questions from the trial's file.
"""

from __future__ import annotations

import hashlib
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from stores.extras import Extra, ExtraBuild, ExtraSource
from stores.files import batches
from stores.journal import Journal, read_records, run_journaled

if TYPE_CHECKING:
    from chromadb.api.models.Collection import Collection

    from stores.chroma import BuildCollections
    from stores.chunking import Chunk
    from stores.protocols import QuestionWriter

QUESTIONS_COLLECTION = "questions"
QUESTION_CHUNKS_COLLECTION = "question_chunks"
JOURNAL = "written.jsonl"
_EMBED_BATCH = 64


TIE_DEPTH = 10
"""Entries searched beyond twice those asked, so equal-scored ones at the cut are ordered, not dropped."""


@dataclass(frozen=True)
class QuestionParams:
    """How many questions each chunk is asked for, and how many chunks (0: all) are asked about.

    Ten per chunk: QuOTE's authors found about ten questions a chunk best, with little gained past 10-15.
    The cost is bearable with the embedded 1.5B model: ten questions are about 150 generated tokens, some
    5 s at its ~30 tokens/s, on top of about 2.5 s to read a 256-token chunk (the instructions before it
    are reused from llama.cpp's cache), so about 7.5 s a chunk where five questions would take about 5 s.
    """

    per_chunk: int = 10
    max_chunks: int = 0

    def __post_init__(self) -> None:
        if self.per_chunk < 1:
            raise ValueError(f"questions per chunk must be at least 1, got {self.per_chunk}")
        if self.max_chunks < 0:
            raise ValueError(f"max_chunks must be 0 (every chunk) or more, got {self.max_chunks}")

    def selected(self, chunks: Sequence[Chunk]) -> list[Chunk]:
        """The chunks asked about: the first `max_chunks` in corpus order, or all of them."""
        return list(chunks[: self.max_chunks] if self.max_chunks else chunks)


@dataclass
class QuestionsInfo:
    """The extra's part of the manifest: how it was made, what it holds, what the LLM work was.

    `written`: chunks whose questions the LLM wrote for this build (over all its runs, a resumed one
    included); `reused`: chunks whose questions came from the previous build's file; `parse`: the parser's
    counts summed over every chunk (prompts.questions.OUTCOMES).
    """

    params: QuestionParams
    writer: str
    chunks: int
    questions: int
    written: int
    reused: int
    parse: dict[str, int] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> QuestionsInfo:
        return cls(**{**data, "params": QuestionParams(**data["params"])})


@dataclass(frozen=True)
class WrittenChunk:
    """One line of the journal: a chunk's questions as written for `asked` questions."""

    chunk_id: str
    digest: str
    asked: int
    questions: list[str]
    counts: dict[str, int]

    def fits(self, chunk: Chunk, asked: int) -> bool:
        """Whether these questions were written for this very chunk text, asked for as many."""
        return self.digest == chunk_digest(chunk) and self.asked == asked


def chunk_digest(chunk: Chunk) -> str:
    """What a chunk's questions depend on: its title and text."""
    return hashlib.sha256(f"{chunk.title}\n{chunk.text}".encode()).hexdigest()[:16]


def entry_id(chunk_id: str, number: int) -> str:
    return f"{chunk_id}?{number}"


def read_journal(path: Path) -> dict[str, WrittenChunk]:
    """The complete lines of a questions journal by chunk id."""
    return read_records(path, WrittenChunk, _chunk_id)


def _chunk_id(record: WrittenChunk) -> str:
    return record.chunk_id


def written_records(
    chunks: Sequence[Chunk], asked: int, *journals: Mapping[str, WrittenChunk]
) -> dict[str, WrittenChunk]:
    """Each chunk's record from the first of `journals` that holds its questions as it is now, asked for
    `asked`, by chunk id: the work a build reuses."""
    found: dict[str, WrittenChunk] = {}
    for chunk in chunks:
        record = next(
            (
                record
                for journal in journals
                if (record := journal.get(chunk.id)) and record.fits(chunk, asked)
            ),
            None,
        )
        if record is not None:
            found[chunk.id] = record
    return found


def unwritten(chunks: Sequence[Chunk], asked: int, *journals: Mapping[str, WrittenChunk]) -> list[Chunk]:
    """The chunks none of `journals` holds questions for (as they are now, asked for `asked`): the LLM calls
    a build still has to make. The dry run's cost and the build itself count them alike."""
    written = written_records(chunks, asked, *journals)
    return [chunk for chunk in chunks if chunk.id not in written]


class QuestionJournal(Journal[WrittenChunk]):
    """The build's questions journal, open for appending (stores.journal), records keyed by chunk id."""

    def __init__(self, path: Path) -> None:
        super().__init__(path, WrittenChunk, _chunk_id)


def _write_missing(
    todo: Sequence[Chunk], writer: QuestionWriter, asked: int, journal: QuestionJournal, job: ExtraBuild[Any]
) -> None:
    """Ask the writer for every chunk of `todo`, `writer.concurrency` at a time, each journaled on return."""
    total = len(journal.records) + len(todo)
    job.report("questions", len(journal.records), total)

    def ask(chunk: Chunk) -> WrittenChunk:
        questions, counts = writer.write(chunk.title, chunk.text, asked)
        return WrittenChunk(chunk.id, chunk_digest(chunk), asked, questions, dict(counts))

    run_journaled(
        todo, ask, journal, writer.concurrency, lambda: job.report("questions", len(journal.records), total)
    )


def _embed_entries(
    job: ExtraBuild[Any], name: str, entries: list[tuple[Chunk, int, str]], with_chunk: bool
) -> None:
    """Embed the entries the collection `name` lacks (a resumed build keeps what it had) and add them."""
    collection = job.collection(name)
    present = set(collection.get(include=[])["ids"])
    todo = [entry for entry in entries if entry_id(entry[0].id, entry[1]) not in present]
    done = len(entries) - len(todo)
    job.report(f"embed-{name}", done, len(entries))
    for batch in batches(todo, _EMBED_BATCH):
        texts = [f"{q}\n{chunk.indexed_text}" if with_chunk else q for chunk, _, q in batch]
        collection.add(
            ids=[entry_id(chunk.id, number) for chunk, number, _ in batch],
            embeddings=np.asarray(job.embedder.embed(texts), dtype=np.float32),
            documents=[question for _, _, question in batch],
            metadatas=[{"chunk_id": chunk.id, "number": number} for chunk, number, _ in batch],
        )
        done += len(batch)
        job.report(f"embed-{name}", done, len(entries))


def build_questions(job: ExtraBuild[QuestionParams]) -> tuple[QuestionsInfo, bool]:
    """Write the questions the journals lack, then embed every question both ways (module docstring)."""
    writer: QuestionWriter = job.models["question_writer"]
    asked = job.params.per_chunk
    started = time.perf_counter()
    chunks = job.params.selected(job.chunks())
    journal = QuestionJournal(job.directory / JOURNAL)
    try:
        resumed = bool(journal.records)
        previous = read_journal(job.previous / JOURNAL) if job.previous is not None else {}
        journal.add(
            *(
                earlier
                for chunk in unwritten(chunks, asked, journal.records)
                if (earlier := previous.get(chunk.id)) is not None and earlier.fits(chunk, asked)
            )
        )
        _write_missing(unwritten(chunks, asked, journal.records), writer, asked, journal, job)
        records = [journal.records[chunk.id] for chunk in chunks]
    finally:
        journal.close()
    generated = time.perf_counter()
    entries = [
        (chunk, number, question)
        for chunk, record in zip(chunks, records, strict=True)
        for number, question in enumerate(record.questions)
    ]
    _embed_entries(job, QUESTIONS_COLLECTION, entries, with_chunk=False)
    _embed_entries(job, QUESTION_CHUNKS_COLLECTION, entries, with_chunk=True)
    # Records taken from the previous build, this run or an interrupted earlier one, are equal to its own.
    reused = sum(1 for chunk, record in zip(chunks, records, strict=True) if previous.get(chunk.id) == record)
    parse: Counter[str] = Counter()
    for record in records:
        parse.update(record.counts)
    info = QuestionsInfo(
        params=job.params,
        writer=writer.identity,
        chunks=len(chunks),
        questions=len(entries),
        written=len(chunks) - reused,
        reused=reused,
        parse=dict(parse),
        seconds={
            "generate": round(generated - started, 3),
            "embed": round(time.perf_counter() - generated, 3),
        },
    )
    return info, resumed


@dataclass(frozen=True)
class QuestionMatch:
    """A question entry found by a search: the question, the chunk it was written for, its place among
    that chunk's questions, and its cosine similarity to the query."""

    question: str
    chunk_id: str
    number: int
    score: float


@dataclass(frozen=True)
class StoredQuestion:
    """A question as stored alone (the `questions` collection): its entry id, text and source chunk."""

    entry_id: str
    question: str
    chunk_id: str


class QuestionStore:
    """The questions of one build, opened for queries."""

    def __init__(self, collections: BuildCollections, info: QuestionsInfo) -> None:
        self.info = info
        self._questions = collections.get(QUESTIONS_COLLECTION)
        self._entries = collections.get(QUESTION_CHUNKS_COLLECTION)

    def nearest_entries(self, vector: np.ndarray | Sequence[float], n: int) -> list[QuestionMatch]:
        """The `n` QuOTE entries (question with its chunk) nearest to `vector`, best first."""
        return self._nearest(self._entries, vector, n)

    def nearest_questions(self, vector: np.ndarray | Sequence[float], n: int) -> list[QuestionMatch]:
        """The `n` questions (embedded alone) nearest to `vector`, best first: BiQOG's seed questions."""
        return self._nearest(self._questions, vector, n)

    def _nearest(
        self, collection: Collection, vector: np.ndarray | Sequence[float], n: int
    ) -> list[QuestionMatch]:
        if n <= 0 or self.info.questions == 0:
            return []
        # The same question is often written for several chunks ("Who was Esma Sultan?" for each Esma
        # Sultan), and equal texts embed to equal vectors: Chroma returns such ties in no fixed order, which
        # made a run's seeds differ from one process to the next. Ties are ordered by chunk id and number,
        # over a search deep enough that ties at the cut are all seen.
        result = collection.query(
            query_embeddings=np.asarray(vector, dtype=np.float32).reshape(1, -1),
            n_results=min(2 * n + TIE_DEPTH, self.info.questions),
            include=["documents", "metadatas", "distances"],
        )
        found = sorted(
            zip(result["distances"][0], result["metadatas"][0], result["documents"][0], strict=True),
            key=lambda row: (row[0], str(row[1]["chunk_id"]), int(row[1]["number"])),
        )
        return [
            QuestionMatch(question, str(meta["chunk_id"]), int(meta["number"]), 1.0 - float(distance))
            for distance, meta, question in found[:n]
        ]

    def all_questions(self) -> tuple[list[StoredQuestion], np.ndarray]:
        """Every question with its vector (embedded alone), ordered by entry id: what edges are formed for."""
        stored = self._questions.get(include=["documents", "metadatas", "embeddings"])
        order = sorted(range(len(stored["ids"])), key=lambda row: stored["ids"][row])
        questions = [
            StoredQuestion(
                stored["ids"][row], stored["documents"][row], str(stored["metadatas"][row]["chunk_id"])
            )
            for row in order
        ]
        vectors = np.asarray(stored["embeddings"], dtype=np.float32)[order]  # (0,) when there are none
        return questions, vectors


class QuestionsExtra(Extra[QuestionParams, QuestionsInfo, QuestionStore]):
    """Hypothetical questions per chunk, embedded alone and with their chunk (module docstring)."""

    name = "questions"
    description = "hypothetical questions per chunk written by the LLM, for QuOTE and BiQOG"
    params_type = QuestionParams
    directory = "questions"
    models: ClassVar[Mapping[str, str]] = {"question_writer": "an LLM question writer"}
    collections = (QUESTIONS_COLLECTION, QUESTION_CHUNKS_COLLECTION)

    def key(self, params: QuestionParams, models: Mapping[str, Any]) -> Any:
        """Another model or prompt writes other questions, so it makes another build."""
        return [self.name, asdict(params), models["question_writer"].identity]

    def same_models(self, info: QuestionsInfo, models: Mapping[str, Any]) -> bool:
        """Questions another writer wrote are not reused."""
        return info.writer == models["question_writer"].identity

    def build(self, job: ExtraBuild[QuestionParams]) -> tuple[QuestionsInfo, bool]:
        return build_questions(job)

    def open(self, source: ExtraSource[QuestionsInfo]) -> QuestionStore:
        return QuestionStore(source.chroma, source.info)

    def info_from_dict(self, data: dict[str, Any]) -> QuestionsInfo:
        return QuestionsInfo.from_dict(data)


QUESTIONS = QuestionsExtra()
