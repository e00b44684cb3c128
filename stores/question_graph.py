"""BiQOG's bipartite question-chunk graph, as an index extra built on the `questions` extra.

For every question the questions extra stored, the candidates are its source chunk and the `candidates`
chunks nearest to the question (cosine, the build's chunk vectors). An edge judge (an LLM the store never
sees, handed in as `models["edge_judge"]`) says for each (question, candidate) pair whether the chunk
answers the question; only "yes" makes an undirected edge. The extra keeps, in the build being made:

    question_graph/judged.jsonl   one line per judged pair, appended and fsynced as its verdict comes back:
                                  question entry id, chunk id, a digest of the question and chunk texts, and
                                  the verdict ("yes", "no" or "malformed"). Like the questions journal
                                  (stores.journal): a killed build run again judges only the pairs not in
                                  it, and a build for a grown corpus takes every pair still valid from the
                                  previous build's file, so only pairs with a new question or a new (or
                                  changed) chunk are judged.
    question_graph/edges.npz      the graph, written once every pair is judged (atomically, by rename): the
                                  question ids and texts, the chunk ids, and the edges as CSR both ways
                                  (question -> chunks, chunk -> questions), loaded once when queries open it.

The calls are made chunk by chunk (every question judged against a chunk one after another), and the prompt
puts the chunk before the question, so llama.cpp evaluates a chunk once and reuses it from its KV cache for
each further question judged against it.
"""

from __future__ import annotations

import hashlib
import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from stores.chunking import Chunk
from stores.extras import CHUNK_COLLECTION, Extra, ExtraBuild, ExtraSource
from stores.files import write_atomic
from stores.journal import Journal, read_records, run_journaled
from stores.protocols import EdgeJudge
from stores.questions import QUESTIONS, QuestionStore, StoredQuestion, chunk_digest
from stores.sentence_graph.csr import csr, union_rows

JOURNAL = "judged.jsonl"
GRAPH_FILE = "edges.npz"
YES = "yes"
_QUERY_BATCH = 256


@dataclass(frozen=True)
class QuestionGraphParams:
    """How many chunks besides its own each question is judged against.

    Four: each question then costs five judge calls (its own chunk and four more), the whole graph five
    times the number of questions. Fewer gives a question hardly any chance to link to a chunk of another
    document, which is where the multi-hop paths come from; every further candidate adds a call per question
    while its chunk is, by construction, less similar to the question than the ones before it. The paper
    does not give its count; this one is not measured yet (README, BiQOG).
    """

    candidates: int = 4

    def __post_init__(self) -> None:
        if self.candidates < 0:
            raise ValueError(
                f"candidate chunks per question must be 0 (only its own) or more, got {self.candidates}"
            )


@dataclass
class QuestionGraphInfo:
    """The extra's part of the manifest: how it was made, what it holds, what the LLM work was.

    `pairs`: (question, chunk) pairs judged for the graph; `judged`: those the judge answered for this build
    (over all its runs, a resumed one included); `reused`: those taken from the previous build's file;
    `verdicts`: yes / no / malformed counts over every pair; `edges`: the yes pairs.
    """

    params: QuestionGraphParams
    judge: str
    questions: int
    pairs: int
    edges: int
    judged: int
    reused: int
    verdicts: dict[str, int] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> QuestionGraphInfo:
        return cls(**{**data, "params": QuestionGraphParams(**data["params"])})


@dataclass(frozen=True)
class Judgement:
    """One line of the journal: the verdict on whether a chunk answers a question, for these texts."""

    question_id: str
    chunk_id: str
    digest: str
    verdict: str


@dataclass(frozen=True)
class Pair:
    """A question and a candidate chunk to judge it against."""

    question: StoredQuestion
    chunk: Chunk

    @property
    def key(self) -> tuple[str, str]:
        return (self.question.entry_id, self.chunk.id)

    @cached_property
    def digest(self) -> str:
        """What a verdict depends on: the question's text and the chunk's title and text (computed once: a
        build compares every pair with two journals)."""
        texts = f"{self.question.question}\n{chunk_digest(self.chunk)}"
        return hashlib.sha256(texts.encode()).hexdigest()[:16]

    def judged_by(self, record: Judgement | None) -> bool:
        return record is not None and record.digest == self.digest


def _judgement_key(record: Judgement) -> tuple[str, str]:
    return (record.question_id, record.chunk_id)


def read_judgements(path: Path) -> dict[tuple[str, str], Judgement]:
    """The complete lines of an edge journal by (question id, chunk id)."""
    return read_records(path, Judgement, _judgement_key)


def unjudged(pairs: Sequence[Pair], *journals: Mapping[tuple[str, str], Judgement]) -> list[Pair]:
    """The pairs none of `journals` holds a verdict for (on these texts): the judge calls still to make."""
    return [pair for pair in pairs if not any(pair.judged_by(journal.get(pair.key)) for journal in journals)]


def candidate_pairs(
    questions: Sequence[StoredQuestion],
    vectors: np.ndarray,
    chunks: Sequence[Chunk],
    job: ExtraBuild[QuestionGraphParams],
) -> list[Pair]:
    """Every question with its own chunk and its `candidates` nearest others, in judging order: chunk by
    chunk in corpus order (the chunk is the shared prompt prefix of consecutive calls), then by question."""
    by_id = {chunk.id: chunk for chunk in chunks}
    wanted = job.params.candidates
    collection = job.collection(CHUNK_COLLECTION)
    pairs: list[Pair] = []
    for start in range(0, len(questions), _QUERY_BATCH):
        batch = questions[start : start + _QUERY_BATCH]
        nearest = (
            collection.query(
                query_embeddings=vectors[start : start + len(batch)],
                n_results=min(wanted + 1, len(chunks)),
                include=[],
            )["ids"]
            if wanted
            else [[] for _ in batch]
        )
        for question, found in zip(batch, nearest, strict=True):
            others = [chunk_id for chunk_id in found if chunk_id != question.chunk_id][:wanted]
            pairs.extend(Pair(question, by_id[chunk_id]) for chunk_id in (question.chunk_id, *others))
    return in_judging_order(pairs, chunks)


def in_judging_order(pairs: Iterable[Pair], chunks: Sequence[Chunk]) -> list[Pair]:
    """Chunk by chunk in the order of `chunks` (corpus order), then by question: consecutive calls share
    the chunk as their prompt prefix, which llama.cpp keeps (benchmarks/edge_judge_order.py measures it)."""
    position = {chunk.id: number for number, chunk in enumerate(chunks)}
    return sorted(pairs, key=lambda pair: (position[pair.chunk.id], pair.question.entry_id))


def _judge_missing(
    todo: Sequence[Pair], judge: EdgeJudge, journal: Journal[Judgement], job: ExtraBuild[Any]
) -> None:
    """Ask the judge about every pair of `todo`, `judge.concurrency` at a time, each journaled on return."""
    total = len(journal.records) + len(todo)
    job.report("edges", len(journal.records), total)

    def ask(pair: Pair) -> Judgement:
        verdict = judge.judge(pair.chunk.title, pair.chunk.text, pair.question.question)
        return Judgement(pair.question.entry_id, pair.chunk.id, pair.digest, verdict)

    run_journaled(
        todo, ask, journal, judge.concurrency, lambda: job.report("edges", len(journal.records), total)
    )


def write_graph(
    directory: Path,
    questions: Sequence[StoredQuestion],
    chunk_ids: Sequence[str],
    edges: Iterable[tuple[str, str]],
) -> int:
    """Write the (question id, chunk id) edges as CSR both ways (module docstring), by rename so no half
    file is ever read; returns the number of edges."""
    question_row = {question.entry_id: row for row, question in enumerate(questions)}
    chunk_row = {chunk_id: row for row, chunk_id in enumerate(chunk_ids)}
    pairs = np.array(
        [(question_row[question_id], chunk_row[chunk_id]) for question_id, chunk_id in edges], dtype=np.int64
    ).reshape(-1, 2)
    by_question = pairs[np.lexsort((pairs[:, 1], pairs[:, 0]))]
    by_chunk = pairs[np.lexsort((pairs[:, 0], pairs[:, 1]))]
    question_indptr, question_indices = csr(by_question[:, 0], by_question[:, 1], len(questions))
    chunk_indptr, chunk_indices = csr(by_chunk[:, 1], by_chunk[:, 0], len(chunk_ids))
    arrays = {
        "question_ids": np.array([question.entry_id for question in questions], dtype=str),
        "question_texts": np.array([question.question for question in questions], dtype=str),
        "chunk_ids": np.array(list(chunk_ids), dtype=str),
        "question_indptr": question_indptr,
        "question_indices": question_indices,
        "chunk_indptr": chunk_indptr,
        "chunk_indices": chunk_indices,
    }
    write_atomic(directory / GRAPH_FILE, lambda handle: np.savez(handle, **arrays))
    return len(pairs)


def build_question_graph(job: ExtraBuild[QuestionGraphParams]) -> tuple[QuestionGraphInfo, bool]:
    """Judge the pairs the journals lack, then write the graph of the yes pairs (module docstring)."""
    judge: EdgeJudge = job.models["edge_judge"]
    started = time.perf_counter()
    questions, vectors = job.dependencies[QUESTIONS.name].all_questions()
    chunks = job.chunks()
    pairs = candidate_pairs(questions, vectors, chunks, job)
    journal = Journal(job.directory / JOURNAL, Judgement, _judgement_key)
    try:
        resumed = bool(journal.records)
        previous = read_judgements(job.previous / JOURNAL) if job.previous is not None else {}
        journal.add(
            *(
                previous[pair.key]
                for pair in unjudged(pairs, journal.records)
                if pair.judged_by(previous.get(pair.key))
            )
        )
        _judge_missing(unjudged(pairs, journal.records), judge, journal, job)
        verdicts = [journal.records[pair.key] for pair in pairs]
    finally:
        journal.close()
    judged = time.perf_counter()
    edges = write_graph(
        job.directory,
        questions,
        [chunk.id for chunk in chunks],
        (pair.key for pair, record in zip(pairs, verdicts, strict=True) if record.verdict == YES),
    )
    reused = sum(1 for pair, record in zip(pairs, verdicts, strict=True) if previous.get(pair.key) == record)
    info = QuestionGraphInfo(
        params=job.params,
        judge=judge.identity,
        questions=len(questions),
        pairs=len(pairs),
        edges=edges,
        judged=len(pairs) - reused,
        reused=reused,
        verdicts=dict(Counter(record.verdict for record in verdicts)),
        seconds={"judge": round(judged - started, 3), "write": round(time.perf_counter() - judged, 3)},
    )
    return info, resumed


class QuestionGraph:
    """The question-chunk graph of one build, loaded once, with the questions store it was built on (whose
    question search finds the seed questions)."""

    def __init__(self, directory: Path, info: QuestionGraphInfo, questions: QuestionStore) -> None:
        self.info = info
        self.questions = questions
        with np.load(directory / GRAPH_FILE) as graph:
            self._question_ids: list[str] = graph["question_ids"].tolist()
            self._question_texts: list[str] = graph["question_texts"].tolist()
            self._chunk_ids: list[str] = graph["chunk_ids"].tolist()
            self._question_indptr = graph["question_indptr"]
            self._question_indices = graph["question_indices"]
            self._chunk_indptr = graph["chunk_indptr"]
            self._chunk_indices = graph["chunk_indices"]
        self._question_row = {entry_id: row for row, entry_id in enumerate(self._question_ids)}
        self._chunk_row = {chunk_id: row for row, chunk_id in enumerate(self._chunk_ids)}

    def chunks_of(self, question_ids: Iterable[str]) -> list[str]:
        """The chunks adjacent to any of the questions (each once, in corpus order)."""
        rows = np.array([self._question_row[entry_id] for entry_id in question_ids], dtype=np.int64)
        return [
            self._chunk_ids[row] for row in union_rows(self._question_indptr, self._question_indices, rows)
        ]

    def questions_of(self, chunk_ids: Iterable[str]) -> list[str]:
        """The questions adjacent to any of the chunks (each once, by entry id)."""
        rows = np.array([self._chunk_row[chunk_id] for chunk_id in chunk_ids], dtype=np.int64)
        return [self._question_ids[row] for row in union_rows(self._chunk_indptr, self._chunk_indices, rows)]

    def question(self, entry_id: str) -> str:
        """The text of the question stored under `entry_id`."""
        return self._question_texts[self._question_row[entry_id]]


class QuestionGraphExtra(Extra[QuestionGraphParams, QuestionGraphInfo, QuestionGraph]):
    """BiQOG's bipartite question-chunk graph (module docstring)."""

    name = "question_graph"
    description = "BiQOG's question-chunk graph: the LLM's yes verdicts on whether a chunk answers a question"
    params_type = QuestionGraphParams
    directory = "question_graph"
    depends_on = (QUESTIONS.name,)
    models: ClassVar[Mapping[str, str]] = {"edge_judge": "an LLM edge judge"}

    def key(self, params: QuestionGraphParams, models: Mapping[str, Any]) -> Any:
        """Another model or prompt judges otherwise, so it makes another build."""
        return [self.name, asdict(params), models["edge_judge"].identity]

    def same_models(self, info: QuestionGraphInfo, models: Mapping[str, Any]) -> bool:
        """Verdicts of another judge are not reused."""
        return info.judge == models["edge_judge"].identity

    def build(self, job: ExtraBuild[QuestionGraphParams]) -> tuple[QuestionGraphInfo, bool]:
        return build_question_graph(job)

    def open(self, source: ExtraSource[QuestionGraphInfo]) -> QuestionGraph:
        return QuestionGraph(source.directory, source.info, source.dependencies[QUESTIONS.name])

    def info_from_dict(self, data: dict[str, Any]) -> QuestionGraphInfo:
        return QuestionGraphInfo.from_dict(data)


QUESTION_GRAPH = QuestionGraphExtra()
