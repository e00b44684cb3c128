"""Per-run parameters (LangGraph `context_schema`): what Studio shows and lets you edit for a run.

Only plain values live here; loaded models and opened indexes are handed to nodes when the graph is built.
Each field carries its description in `field(metadata={"description": ...})`, written
`parameter(default, description)`: pydantic, which builds the JSON schema LangGraph serves to Studio, reads
that (attribute docstrings it does not), so Studio shows what every parameter means. A subclass whose
method counts a field differently redeclares it with its own description (`top_k`: passages for the
question, seed sentences per sub-question ...).

A count declares its least and greatest values the same way (`parameter(5, "...", minimum=1, maximum=100)`,
read by pydantic as `ge` and `le`, so Studio's form shows them too), and a Literal field its choices:
`parameter_problem` checks all three, for the command line (hopgraph.options, naming `--set` or the variant)
and for every context built (Studio, the Python API), so a k of 0 stops the run instead of answering from
no passages, and a k of a million (from anyone who can reach the Studio server) instead of spending a
provider's credits on it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from functools import cache
from typing import Any, Literal, TypeVar, get_args, get_origin, get_type_hints

from prompts.decompose import SubQuestionCount
from stores.errors import HopgraphError

RetrievalMode = Literal["dense", "bm25", "hybrid"]
# How a chain-of-thought method (IR-CoT, Iter-RetGen) reads its final answer: the shared reader's short
# answer, or its own chain's
ChainReader = Literal["direct", "cot"]
# Where the shared reader shows its best passage: first, in retrieval order, or last, beside the question
PassageOrder = Literal["retrieved", "best_last"]
C = TypeVar("C")
T = TypeVar("T")


class ParameterError(HopgraphError, ValueError):
    """A run parameter its field does not take: a ValueError to the Python API, one line to the CLI."""


def parameter(
    default: T,
    description: str,
    *,
    minimum: int | None = None,
    maximum: int | None = None,
    added_later: bool = False,
) -> T:
    """A context field whose description (and least and greatest values) reaches the JSON schema Studio
    renders.

    `minimum` and `maximum` bound a count (stored under pydantic's names `ge` and `le`); a count gives
    both, since each is spent on passages, LLM calls or tokens. `added_later` marks a
    switch added to a method that evaluations have already run: at its default the evaluation's settings
    key leaves it out (evals.runner), so those runs' answers, made with what the default does, stay
    resumable and comparable instead of being refused as other settings.
    """
    metadata: dict[str, Any] = {"description": description}
    if minimum is not None:
        metadata["ge"] = minimum
    if maximum is not None:
        metadata["le"] = maximum
    if added_later:
        metadata["added_later"] = True
    return field(default=default, metadata=metadata)


@cache
def _accepted(schema: type) -> dict[str, tuple[int | None, int | None, tuple[Any, ...] | None]]:
    """Each field's least and greatest values and Literal choices (None: any), read once per schema: every
    context built asks."""
    hints = get_type_hints(schema)
    accepted: dict[str, tuple[int | None, int | None, tuple[Any, ...] | None]] = {}
    for f in fields(schema):
        hint = hints[f.name]
        choices = get_args(hint) if get_origin(hint) is Literal else None
        accepted[f.name] = (f.metadata.get("ge"), f.metadata.get("le"), choices)
    return accepted


def parameter_problem(schema: type, name: str, value: Any) -> str | None:
    """What `value` of `schema`'s field `name` should be instead ("must be at least 1"), or None when it is
    fine: the one check behind every entry of a run parameter, each caller naming its own input."""
    minimum, maximum, choices = _accepted(schema)[name]
    if minimum is not None and not (isinstance(value, int | float) and value >= minimum):
        return f"must be at least {minimum}"
    if maximum is not None and not (isinstance(value, int | float) and value <= maximum):
        return f"must be at most {maximum}"
    if choices is not None and value not in choices:
        return f"must be one of {', '.join(map(str, choices))}"
    return None


@dataclass(kw_only=True)
class RetrievalContext:
    """Parameters every retrieve-then-answer method shares."""

    index: str = parameter(
        "default", "Name of the index to search (built by `hopgraph index PATH --name NAME`)."
    )
    top_k: int = parameter(5, "Passages retrieved for the question.", minimum=1, maximum=100)
    retrieval_mode: RetrievalMode = parameter(
        "hybrid",
        "How passages are searched: dense (Chroma), bm25, or hybrid (reciprocal-rank fusion of both).",
    )
    max_answer_tokens: int = parameter(
        32, "Token budget of the final answer: benchmark answers are short spans.", minimum=1, maximum=1024
    )
    unanswerable: bool = parameter(
        False,
        "Let the final answer say the passages do not answer (kept, and counted as "
        '"unanswerable"); off, a refusal is asked once more for the best answer from the evidence. '
        "On for corpora with unanswerable questions, such as MultiHop-RAG's null queries (`hopgraph eval` "
        "turns it on there unless told otherwise).",
    )
    refusal_check: bool = parameter(
        True,
        "With unanswerable on: a refusal over passages is checked before it stands. The reader names each "
        "fact the question needs (for a comparison, each side's) and whether a passage states it; the "
        'refusal is kept only when one is missing, else the check\'s answer is given ("checked").',
    )
    passage_order: PassageOrder = parameter(
        "retrieved",
        "How the final answer's prompt orders its passages: retrieved (best first, gathered order) or "
        "best_last (reversed: the best beside the question and the reply; a method whose earlier calls read "
        "the same passages reuses less of their prompt).",
        added_later=True,
    )

    def __post_init__(self) -> None:
        """Refuse a value its field does not take, whoever built the context (Studio, the Python API): a
        method given top_k=0 would otherwise run, read nothing and count its answer as answered."""
        for f in fields(self):
            value = getattr(self, f.name)
            if problem := parameter_problem(type(self), f.name, value):
                raise ParameterError(f"{type(self).__name__}: {f.name} {problem}, got {value!r}.")


@dataclass(kw_only=True)
class ChainOfThoughtContext(RetrievalContext):
    """Methods whose model writes a chain of thought over the passages, shown worked examples first (IR-CoT's
    reasoner and chain-of-thought reader, Iter-RetGen's generation: nodes.chain_of_thought)."""

    demonstrations: int = parameter(
        2,
        "Worked examples (passages, question, whole chain of thought ending in its answer) shown before "
        "each chain of thought, at most 4; 0 = zero-shot.",
        minimum=0,
        maximum=4,
    )
    paragraph_words: int = parameter(
        350,
        "Words of each passage shown with a chain of thought; the rest is cut (IR-CoT's original rule for "
        "Wikipedia paragraphs: a 256-token chunk stays under the default).",
        minimum=1,
        maximum=5000,
    )


MetadataExtractor = Literal["llm", "matcher"]
DateFilter = Literal["days", "range"]


@dataclass(kw_only=True)
class MetadataFilterContext(RetrievalContext):
    """Retrieval that may be restricted to the sources and dates the question names (NaiveRAG's switch;
    on by default in Multi-Meta-RAG). Needs the index's `metadata` extra."""

    metadata_filter: bool = parameter(
        False,
        "Search only the sources and dates the question names (Multi-Meta-RAG's filter; needs the index "
        "built with `--with metadata`). When the filter leaves fewer passages than needed, unfiltered "
        "search adds the rest.",
        added_later=True,
    )
    extractor: MetadataExtractor = parameter(
        "llm",
        "Who reads the filter from the question: llm (the few-shot extractor; the source-name matcher "
        "stands in when its reply is unusable) or matcher (source names found in the question, no LLM).",
        added_later=True,
    )
    dates: DateFilter = parameter(
        "days",
        "How the dates a question names filter: days (each day it names is searched as that day, as "
        "seed 004's published_at list; a range only where it says after, before or between) or range "
        "(every date it names spans one inclusive range, hopgraph's earlier filter).",
        added_later=True,
    )


def context_of(runtime_context: C | None, schema: type[C]) -> C:
    """The run's context, or the schema's defaults when the caller passed none (plain `graph.invoke(...)`)."""
    return runtime_context if runtime_context is not None else schema()


@dataclass(kw_only=True)
class DecompositionContext(RetrievalContext):
    """Methods that first split the question into sub-questions."""

    top_k: int = parameter(5, "Passages retrieved for each sub-question.", minimum=1, maximum=100)
    max_sub_questions: int = parameter(
        4,
        "Cap on the decomposer's list of sub-questions (the paper's prompt asks for usually two).",
        minimum=1,
        maximum=10,
    )

    def stated_count(self) -> SubQuestionCount | None:
        """The count of sub-questions the decomposer's prompt states; None keeps ChainRAG's prompt as it is
        (usually two), the list only cut at `max_sub_questions`."""
        return None


IntegrationMode = Literal["answers", "contexts"]
CountMode = Literal["exactly", "up_to", "as_needed"]


@dataclass(kw_only=True)
class CountedDecompositionContext(DecompositionContext):
    """Decomposition whose prompt may state how many sub-questions to write (query decomposition, NaiveRAG
    w/ QD); each method declares `count` with its own default and description."""

    count: CountMode = parameter(
        "as_needed",
        "exactly = ask for exactly max_sub_questions; up_to = at most that many; as_needed = ChainRAG's own "
        "prompt, stating no count (usually two), cut at max_sub_questions.",
    )

    def stated_count(self) -> SubQuestionCount | None:
        if self.count == "as_needed":
            return None
        return SubQuestionCount(self.max_sub_questions, exactly=self.count == "exactly")
