"""State shared by every method's graph.

Evidence items keep the corpus ids they came from (document, chunk or sentence id, character span) and
the hop that found them, so retrieval metrics are computed from the final state and never re-derived.
LLM accounting lives in state too, which puts it into every checkpoint and therefore into `history`.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable
from typing import Annotated

# pydantic, and so Studio's input and output forms, cannot read typing.TypedDict on Python 3.11
from typing_extensions import TypedDict

from stores.documents import Span
from stores.questions import QuestionMatch


class Evidence(TypedDict):
    """One retrieved passage, traceable to the corpus.

    `hop` means the same for every method: the retrieval round that first found the passage, 1 being the
    first retrieval for the question. Iterative methods (IR-CoT, Iter-RetGen, ReSP, TreeHop) count their
    rounds. Methods that split the question count a sub-question's retrieval as the round of its 1-based
    position, whether the sub-questions run one after another (ChainRAG: the seeds and every graph
    expansion of sub-question i are hop i) or in parallel `Send` branches (query decomposition). Found
    again later, a passage keeps its smallest hop (`merge_evidence`). Hop-conditioned metrics read it.

    No method needs a separate per-sub-question field yet: where sub-question and round coincide, hop is
    the grouping (ChainRAG's rewrite step finds an unanswered sub-question's evidence by its hop). A method
    with several retrieval rounds per sub-question would add one.
    """

    id: str
    doc_id: str
    title: str
    text: str
    score: float
    char_start: int | None
    char_end: int | None
    hop: int


class LLMUsage(TypedDict):
    """What one node spent on LLM calls in one step.

    Calls and token counts are the method's logical cost, the same whether the response cache answered or
    not (so a resumed evaluation reports what the method costs). `cached_tokens` are prompt tokens the
    model did not have to evaluate (llama.cpp's reused KV prefix, or a provider's prompt cache);
    `cache_hits` are calls answered from hopgraph's own response cache. `echoes` counts replies that
    repeated the prompt's own instructions or examples (prompts.echo): each is asked once more, and a
    second echo is replaced by the parser's fallback.
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


def evidence_from(span: Span, score: float, hop: int) -> Evidence:
    """Evidence for a retrieved chunk or sentence, keeping its corpus ids and character span."""
    return Evidence(
        id=span.id,
        doc_id=span.doc_id,
        title=span.title,
        text=span.text,
        score=round(float(score), 6),
        char_start=span.char_start,
        char_end=span.char_end,
        hop=hop,
    )


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
    """A metadata filter as checked against the index (nodes.metadata): known source names, and inclusive
    ISO days (None: unbounded)."""

    sources: list[str]
    date_from: str | None
    date_to: str | None


class QuestionInput(TypedDict):
    """What a caller (or Studio's input form) provides."""

    question: str


class AnswerOutput(TypedDict, total=False):
    """What a run returns: the answer and the evidence that supported it.

    `answer_outcome` says how the answer came about (nodes.generate.AnswerOutcome); `fallbacks` lists every
    model reply a parser could not use and what it did instead, one "node: what happened" line each.
    `stats` holds what a method measures of its own run and a paper reports, by name (ReSP's iterations
    and compression ratio, IR-CoT's reasoning steps ...): the evaluation report averages each per method;
    `retrieval_rounds`, where a method reports it, is how many rounds of retrieval it ran. `read` holds the
    ids of the passages the final reader read, in the order it read them: the method's own ranking, which
    retrieval is scored in (evals.runner.ranked_evidence) where it differs from `evidence`'s hop order.
    """

    answer: str
    answer_outcome: str
    evidence: list[Evidence]
    read: list[str]
    usage: list[LLMUsage]
    fallbacks: list[str]
    stats: dict[str, float]


class QAState(TypedDict, total=False):
    """The state every method shares; method graphs extend it with their own keys."""

    question: str
    evidence: Annotated[list[Evidence], merge_evidence]
    read: list[str]
    answer: str
    answer_outcome: str
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


class MultiMetaState(MetadataFilterState, total=False):
    """Multi-Meta-RAG's state: `gathered` holds the passages the answer reads (the first K' of the reranked
    candidates), while `evidence` keeps the top_k the retrieval metrics score."""

    gathered: list[Evidence]


class SubAnswer(TypedDict):
    """One finished sub-question: as decomposed, as retrieved with (after rewriting), and its answer."""

    asked: str
    question: str
    answer: str
    answered: bool


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


class ChainRAGState(SubQuestionCursorState, total=False):
    """ChainRAG's cursor over its sub-questions, and its graph expansion: `expansions` counts graph
    expansions of the current sub-question and `stop` says why gathering ended."""

    expansions: int
    stop: str


class SubQuestionBranch(TypedDict):
    """What one parallel branch receives through `Send`: its sub-question and its 1-based position, which
    is also the hop its retrieval records."""

    sub_question: str
    position: int


class BranchAnswer(SubAnswer):
    """A sub-question answered in a parallel branch, with the position that orders it among the others."""

    position: int


def merge_by_position(existing: list[BranchAnswer], new: list[BranchAnswer]) -> list[BranchAnswer]:
    """Branch answers in position order, whichever branch finished first (one answer per position: a
    position answered again keeps the newer answer)."""
    by_position = {answer["position"]: answer for answer in [*existing, *new]}
    return [by_position[position] for position in sorted(by_position)]


class BranchedSubQuestionsState(QAState, total=False):
    """State of methods that fan out one `Send` branch per sub-question (query decomposition).

    The keys of `SubQuestionsState`, but branches finish in any order, so `solved` is merged by position;
    evidence from the branches merges by `merge_evidence`, each passage at the smallest hop that found it.
    """

    sub_questions: list[str]
    solved: Annotated[list[BranchAnswer], merge_by_position]


class IRCoTState(QAState, total=False):
    """IR-CoT's reasoning trace and loop position.

    `reasoning` is the chain of thought, one sentence per reasoning step, in order: the trace Studio, the
    streamed updates and `history` show. `rounds` counts retrieval rounds so far (the next one records its
    paragraphs at hop rounds + 1). `stop` says why reasoning ended: "answer" (a sentence said "answer
    is"), "cap" (max_iterations reached) or "fallback" (a reply with no usable sentence, see `fallbacks`);
    empty while it goes on.
    """

    reasoning: Annotated[list[str], operator.add]
    rounds: int
    stop: str


class IRCoTOutput(AnswerOutput, total=False):
    """What an IR-CoT run returns: the answer and its evidence, and the chain of thought behind them."""

    reasoning: list[str]


class IterRetGenState(QAState, total=False):
    """Iter-RetGen's iterations.

    `gathered` is the current iteration's retrieved passages, which its generation reads (that iteration's
    alone, as the original and FlashRAG do); each is also merged into `evidence` at hop = its iteration.
    `generations` holds every iteration's answer in order (the trace of how the query evolved; the last is
    the answer) and `rounds` counts the iterations done. `stop` says why they ended: "iterations" (all T
    ran) or "converged" (an iteration repeated the one before, so every later one would too).
    """

    gathered: list[Evidence]
    generations: Annotated[list[str], operator.add]
    rounds: int
    stop: str


class IterRetGenOutput(AnswerOutput, total=False):
    """What an Iter-RetGen run returns: the answer and its evidence, and every iteration's generation."""

    generations: list[str]


class PathwayStep(TypedDict):
    """One entry of ReSP's local pathway memory: a sub-question searched, and what its passages answered.

    `answered` is False when the summarizer said its passages do not answer it (`answer` is then empty);
    the sub-question stays in the memory either way, so the planner sees every path already taken.
    """

    sub_question: str
    answer: str
    answered: bool


class ReSPState(QAState, total=False):
    """ReSP's two memory queues and its loop position (paper 001 §4).

    `global_memory` is the global evidence memory: per round, the summarizer's passage of what the round's
    passages say in support of the overarching question, in the order the rounds ran (a round whose summary
    was unusable adds none, see `fallbacks`). `local_memory` is the local pathway memory: each planned
    sub-question with its answer or "not answered", from round 2 on (round 1's sub-question is the
    question itself, which the summarizer does not answer). Together they are everything the reasoner and
    the generator read, so the trace, Studio and `history` show how the question was decomposed and what
    the answer rests on.

    `sub_question` is the planned sub-question the next round searches for (empty before the first plan:
    round 1 searches for the question); `gathered` is the current round's passages, which the summarizer
    reads and then files into `evidence` at hop = the round; `rounds` counts finished rounds. `stop` says
    why the loop ended: "sufficient" (the reasoner judged the memories enough), "cap" (max_iterations
    rounds ran), "repeat" (the planner repeated a searched sub-question twice) or "no_plan" (the planner
    gave no usable sub-question); empty while it goes on.
    """

    global_memory: Annotated[list[str], operator.add]
    local_memory: Annotated[list[PathwayStep], operator.add]
    sub_question: str
    gathered: list[Evidence]
    rounds: int
    stop: str


class ReSPOutput(AnswerOutput, total=False):
    """What a ReSP run returns: the answer and its evidence, and the two memories the answer was read from."""

    global_memory: list[str]
    local_memory: list[PathwayStep]


class TreeNode(TypedDict):
    """One chunk the TreeHop search retrieved, as a node of its retrieval tree.

    `id` is the node's path from the root, the 1-based rank of each chunk among its parent query's hits
    ("2" is hop 1's second hit, "2.4" the fourth hit of the query "2" led to); `parent` is the parent's id
    ("" for hop 1, whose parent is the question). `score` is the chunk's cosine similarity to its parent's
    query embedding, the score layer-wise pruning ranks by. `status` says what became of the node:
    "expanded" (kept, and its updated query searched the next hop), "last_hop" (kept; the search ended),
    "redundant" (the chunk was already in the tree, so neither kept again nor expanded) or "layer_top_k"
    (not among the K best new chunks of its hop).
    """

    id: str
    parent: str
    hop: int
    chunk_id: str
    title: str
    score: float
    status: str


class Branch(TypedDict):
    """A query embedding waiting to search the next hop: the tree node it came from ("" = the question)."""

    node: str
    vector: list[float]


class TreeHopState(QAState, total=False):
    """TreeHop's search: the retrieval tree, every node with its score and what ended it (`tree`, in the
    order the hops built it), the queries the next hop searches (`frontier`), the hops done (`rounds`),
    and the passages the answer reads (`gathered`: the kept chunks, ordered and cut as the context says).
    Kept chunks join `evidence` at their hop."""

    tree: Annotated[list[TreeNode], operator.add]
    frontier: list[Branch]
    rounds: int
    gathered: list[Evidence]


class TreeHopOutput(AnswerOutput, total=False):
    """What a TreeHop run returns: the answer and its evidence, and the retrieval tree behind them."""

    tree: list[TreeNode]


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


class QuoteState(QAState, total=False):
    """QuOTE's retrieval trace: `question_hits` are the matched questions of the chunks it kept, best first
    (several per chunk when several of a chunk's questions matched), so the trace shows why each chunk
    was retrieved."""

    question_hits: list[QuestionHit]


class QuoteOutput(AnswerOutput, total=False):
    """What a QuOTE run returns: the answer and its evidence, and the questions that retrieved it."""

    question_hits: list[QuestionHit]


class TraversalHop(TypedDict):
    """One hop of BiQOG's traversal: the questions it started from (their texts), the chunks adjacent to
    them that no earlier hop collected (ids, reranked, best first), and the `width` of those it kept, whose
    questions the next hop starts from."""

    hop: int
    questions: list[str]
    chunks: list[str]
    kept: list[str]


class BiqogState(QuoteState, total=False):
    """BiQOG's retrieval trace: `question_hits` are the seed questions (hop 1) and `traversal` the path from
    them, hop by hop (chunks collected and kept, the questions moved to). `ranked` is the final rerank's top
    k, best first, which the reader reads (`evidence` holds the same passages in hop order)."""

    traversal: list[TraversalHop]
    ranked: list[Evidence]


class BiqogOutput(QuoteOutput, total=False):
    """What a BiQOG run returns: the answer and its evidence, the seed questions and the traversal."""

    traversal: list[TraversalHop]
