"""State shared by every method's graph.

Evidence items keep the corpus ids they came from (document, chunk or sentence id, character span) and
the hop that found them, so retrieval metrics are computed from the final state and never re-derived.
LLM accounting lives in state too, which puts it into every checkpoint and therefore into `history`.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Mapping
from typing import Annotated, Any

# pydantic, and so Studio's input and output forms, cannot read typing.TypedDict on Python 3.11
from typing_extensions import TypedDict

from stores.errors import HopgraphError
from stores.evidence import Evidence
from stores.questions import QuestionMatch


class LLMUsage(TypedDict):
    """What one node spent on LLM calls in one step.

    Calls and token counts are the method's logical cost, the same whether the response cache answered or
    not (so a resumed evaluation reports what the method costs). `cached_tokens` are prompt tokens the
    model did not have to evaluate (llama.cpp's reused KV prefix, or a provider's prompt cache);
    `cache_hits` are calls answered from hopgraph's own response cache. `echoes` counts replies that
    repeated the prompt's own instructions or examples (prompts.echo): each is asked once more, and a
    second echo is replaced by the parser's fallback. `structured_refused` counts calls whose provider
    refused the reply shape asked for (structured output) and was asked again without it.
    """

    node: str
    role: str
    calls: int
    prompt_tokens: int
    cached_tokens: int
    completion_tokens: int
    seconds: float
    cache_hits: int
    echoes: int
    structured_refused: int


def merge_evidence(existing: list[Evidence], new: list[Evidence]) -> list[Evidence]:
    """One copy per id, the one with the smallest hop, in hop order; within a hop, in arrival order.

    Methods that retrieve round after round add evidence in hop order, so for them this is appending
    without duplicates (the first copy is kept). Parallel branches (`Send`) finish in any order: a passage
    first reported by a later hop moves to the earlier hop that also found it, and the merged list comes
    out the same whichever branch finished first.
    """
    kept: dict[str, Evidence] = {}
    for item in [*existing, *new]:
        earlier = kept.get(item["id"])
        if earlier is None or item["hop"] < earlier["hop"]:
            kept.pop(item["id"], None)  # re-inserted: the winning copy takes its own arrival position
            kept[item["id"]] = item
    return sorted(kept.values(), key=lambda item: item["hop"])


def merge_stats(existing: dict[str, float], new: dict[str, float]) -> dict[str, float]:
    """A node reports a statistic's value so far; the latest report of each name wins."""
    return {**existing, **new}


class MetadataFilter(TypedDict):
    """A metadata filter as checked against the index (nodes.metadata): known source names, the ISO days
    the question names as publication days (seed 004's `published_at` list), and an inclusive ISO range
    where it says after, before or between (None: unbounded)."""

    sources: list[str]
    days: list[str]
    date_from: str | None
    date_to: str | None


MAX_QUESTION_CHARS = 4000
"""The longest question a graph takes, far above any benchmark's (a few hundred characters). Studio and
the API pass on whatever a caller sends, and every step reads the question (the metadata matcher scans it
once per source name, every prompt holds it)."""


class QuestionTooLongError(HopgraphError, ValueError):
    """A question over MAX_QUESTION_CHARS, or one that is not text: refused before any step runs."""


def bounded_question(_previous: str, question: str) -> str:
    """The `question` channel's reducer: the new question, refused with one line when it is not text or too
    long. A reducer runs wherever a question enters a graph (the CLI, the Python API, Studio's server),
    before any node."""
    if not isinstance(question, str):
        raise QuestionTooLongError(f"The question must be text, got {type(question).__name__}.")
    if len(question) > MAX_QUESTION_CHARS:
        raise QuestionTooLongError(
            f"The question has {len(question):,} characters, more than the {MAX_QUESTION_CHARS:,} a graph "
            "takes: ask it shorter (a question, not a document to search: index that)."
        )
    return question


class QuestionInput(TypedDict):
    """What a caller (or Studio's input form) provides."""

    question: Annotated[str, bounded_question]


class CheckedFact(TypedDict):
    """A fact the question needs, as the refusal check named it, and whether a passage states it."""

    fact: str
    stated: bool


class RefusalCheck(TypedDict):
    """The refusal check's verdict (nodes.generate.checked_refusal): "missing" (a fact is not stated: the
    refusal stands), "stated" (every fact is: the check's answer replaces the refusal, or the refusal stands
    when it gave none) or "unread" (no usable fact list: the refusal stands); and the facts it named."""

    verdict: str
    facts: list[CheckedFact]


class AnswerOutput(TypedDict, total=False):
    """What a run returns: the answer and the evidence that supported it.

    `answer_outcome` says how the answer came about (nodes.generate.AnswerOutcome); where the reader's reply
    was longer than a short span, `answer_sentence` keeps it and `answer_shortening` says how the answer was
    cut from it (nodes.generate.Shortening); where the reader refused and checked that refusal,
    `refusal_check` holds the check (RefusalCheck); `fallbacks` lists every
    model reply a parser could not use and what it did instead, one "node: what happened" line each.
    `stats` holds what a method measures of its own run and a paper reports, by name (ReSP's iterations
    and compression ratio, IR-CoT's reasoning steps ...): the evaluation report averages each per method;
    `retrieval_rounds`, where a method reports it, is how many rounds of retrieval it ran. `read` holds the
    ids of the passages the final reader read, in the order it read them: the method's own ranking, which
    retrieval is scored in (evals.runner.ranked_evidence) where it differs from `evidence`'s hop order.
    """

    answer: str
    answer_outcome: str
    answer_sentence: str
    answer_shortening: str
    refusal_check: RefusalCheck
    evidence: list[Evidence]
    read: list[str]
    usage: list[LLMUsage]
    fallbacks: list[str]
    stats: dict[str, float]


class QAState(TypedDict, total=False):
    """The state every method shares; method graphs extend it with their own keys."""

    question: Annotated[str, bounded_question]
    evidence: Annotated[list[Evidence], merge_evidence]
    read: list[str]
    answer: str
    answer_outcome: str
    answer_sentence: str
    answer_shortening: str
    refusal_check: RefusalCheck
    usage: Annotated[list[LLMUsage], operator.add]
    fallbacks: Annotated[list[str], operator.add]
    stats: Annotated[dict[str, float], merge_stats]


class MetadataFilterState(QAState, total=False):
    """State of methods that may filter retrieval by metadata (NaiveRAG's `metadata_filter` switch).

    `metadata_filter` is the filter the question's metadata gave, `metadata_where` its Chroma `where` (None:
    search everything), `metadata_extractor` which extractor produced it ("llm"; "matcher", the
    deterministic source-name matcher, used when the LLM's reply was unusable or alone when a run asks;
    "llm+matcher", the reply's dates with the matcher's sources when the reply named none the index holds;
    "none", an index without metadata) and `matched_sources` what the matcher found, whichever was used.
    """

    metadata_filter: MetadataFilter
    metadata_where: dict | None
    metadata_extractor: str
    matched_sources: list[str]


class MetadataFilterOutput(AnswerOutput, total=False):
    """What a run with metadata filtering returns: the answer and its evidence, and the filter behind them."""

    metadata_filter: MetadataFilter
    metadata_extractor: str


class SubAnswer(TypedDict):
    """One finished sub-question: as decomposed, as retrieved with (after rewriting), its answer, and the
    ids of the passages it read (`evidence` files a passage two sub-questions gathered under the first)."""

    asked: str
    question: str
    answer: str
    answered: bool
    read: list[str]


class SubQuestionsState(QAState, total=False):
    """State of methods that split the question and answer the sub-questions one after another.

    `solved` holds the finished sub-questions in the order they were solved, which is their order in
    `sub_questions`. Methods that answer them in parallel branches use `BranchedSubQuestionsState`.
    """

    sub_questions: list[str]
    solved: Annotated[list[SubAnswer], operator.add]


class SubQuestionCursorState(SubQuestionsState, total=False):
    """A cursor over the sub-questions, for methods that take them one at a time (ChainRAG, NaiveRAG w/ QD).

    `step` is the 0-based position of the current sub-question and `query` its text as retrieved with
    (ChainRAG rewrites one that points at an earlier answer); `notes` is what its reader is told of earlier
    steps (ChainRAG: summaries of unanswered ones; NaiveRAG w/ QD: earlier answers, when asked). `gathered`
    is the current sub-question's working set, in the order it was gathered (the order the prompts show it,
    so each addition only appends to the prompt). A finished sub-question's gathered evidence moves into
    `evidence` with hop = its 1-based position.
    """

    step: int
    query: str
    notes: str
    gathered: list[Evidence]


class QuestionHit(TypedDict):
    """A stored hypothetical question that a search matched (QuOTE's entries; BiQOG's seed questions).

    `question` is the question as the LLM wrote it at index time, `chunk_id` the chunk it was written for,
    `score` its cosine similarity to the query, `rank` its 1-based place among all entries the search
    returned, and `hop` the retrieval round it matched in (1: the search with the question).
    """

    question: str
    chunk_id: str
    score: float
    rank: int
    hop: int


def question_hits(matches: Iterable[QuestionMatch], hop: int) -> list[QuestionHit]:
    """The matched questions as the trace shows them, ranked in the order the search returned them."""
    return [
        QuestionHit(
            question=match.question, chunk_id=match.chunk_id, score=round(match.score, 6), rank=rank, hop=hop
        )
        for rank, match in enumerate(matches, start=1)
    ]


class QuestionHitsState(QAState, total=False):
    """State of methods that retrieve through stored questions (QuOTE, BiQOG): `question_hits` are the
    matched questions of the chunks kept, best first (several per chunk when several of a chunk's questions
    matched), so the trace shows why each chunk was retrieved."""

    question_hits: list[QuestionHit]


class QuestionHitsOutput(AnswerOutput, total=False):
    """What a run through stored questions returns: the answer and its evidence, and the questions that
    retrieved it."""

    question_hits: list[QuestionHit]


def next_round(state: Mapping[str, Any]) -> int:
    """The 1-based number of the retrieval round about to run, from the `rounds` finished so far: the hop
    its passages record (IR-CoT, Iter-RetGen, ReSP, TreeHop count rounds this way)."""
    return int(state.get("rounds", 0)) + 1
