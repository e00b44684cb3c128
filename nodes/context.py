"""Per-run parameters (LangGraph `context_schema`): what Studio shows and lets you edit for a run.

Only plain values live here; loaded models and opened indexes are handed to nodes when the graph is built.
Each field carries its description in `field(metadata={"description": ...})`, written
`parameter(default, description)`: pydantic, which builds the JSON schema LangGraph serves to Studio, reads
that (attribute docstrings it does not), so Studio shows what every parameter means. A subclass whose
method counts a field differently redeclares it with its own description (`top_k`: passages for the
question, seed sentences per sub-question ...).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, TypeVar

from prompts.decompose import SubQuestionCount

RetrievalMode = Literal["dense", "bm25", "hybrid"]
C = TypeVar("C")
T = TypeVar("T")


def parameter(default: T, description: str, *, added_later: bool = False) -> T:
    """A context field whose description reaches the JSON schema Studio renders.

    `added_later` marks a switch added to a method that evaluations have already run: at its default the
    evaluation's settings key leaves it out (evals.runner), so those runs' answers, made with what the
    default does, stay resumable and comparable instead of being refused as other settings.
    """
    metadata = {"description": description, **({"added_later": True} if added_later else {})}
    return field(default=default, metadata=metadata)


@dataclass(kw_only=True)
class RetrievalContext:
    """Parameters every retrieve-then-answer method shares."""

    index: str = parameter(
        "default", "Name of the index to search (built by `hopgraph index PATH --name NAME`)."
    )
    top_k: int = parameter(5, "Passages retrieved for the question.")
    retrieval_mode: RetrievalMode = parameter(
        "hybrid",
        "How passages are searched: dense (Chroma), bm25, or hybrid (reciprocal-rank fusion of both).",
    )
    max_answer_tokens: int = parameter(
        32, "Token budget of the final answer: benchmark answers are short spans."
    )
    unanswerable: bool = parameter(
        False,
        "Let the final answer say the passages do not answer (kept, and counted as "
        '"unanswerable"); off, a refusal is asked once more for the best answer from the evidence. '
        "On for corpora with unanswerable questions, such as MultiHop-RAG's null queries (`hopgraph eval` "
        "turns it on there unless told otherwise).",
    )


MetadataExtractor = Literal["llm", "matcher"]


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


@dataclass(kw_only=True)
class MultiMetaContext(MetadataFilterContext):
    """Multi-Meta-RAG's parameters, seed 004's: K = 20 filtered candidates, reranked, the top 10 kept as
    the retrieval result and the top K' = 6 read by the answer."""

    metadata_filter: bool = parameter(
        True,
        "Search only the sources and dates the question names (off: rerank unfiltered candidates, an "
        "ablation). When the filter leaves fewer than answer_k candidates, unfiltered search adds the rest.",
    )
    candidates: int = parameter(20, "K: candidates retrieved through the filter and reranked (seed 004: 20).")
    top_k: int = parameter(10, "Reranked passages kept as the run's evidence, which retrieval metrics score.")
    answer_k: int = parameter(6, "K': the best reranked passages the answer is read from (seed 004: 6).")


def context_of(runtime_context: C | None, schema: type[C]) -> C:
    """The run's context, or the schema's defaults when the caller passed none (plain `graph.invoke(...)`)."""
    return runtime_context if runtime_context is not None else schema()


@dataclass(kw_only=True)
class DecompositionContext(RetrievalContext):
    """Methods that first split the question into sub-questions."""

    top_k: int = parameter(5, "Passages retrieved for each sub-question.")
    max_sub_questions: int = parameter(
        4, "Cap on the decomposer's list of sub-questions (the paper's prompt asks for usually two)."
    )

    def stated_count(self) -> SubQuestionCount | None:
        """The count of sub-questions the decomposer's prompt states; None keeps ChainRAG's prompt as it is
        (usually two), the list only cut at `max_sub_questions`."""
        return None


IntegrationMode = Literal["answers", "contexts"]


@dataclass(kw_only=True)
class ChainRAGContext(DecompositionContext):
    """ChainRAG's parameters, paper defaults (k=3 seeds, 100 candidates, 3000-word limit) and ablations."""

    top_k: int = parameter(
        3, "Seed sentences per sub-question (the paper's k); chunks per sub-question when use_graph is off."
    )
    candidates: int = parameter(100, "Sentences kept by the embedding pre-filter before reranking.")
    word_limit: int = parameter(3000, "Expansion stops once the gathered sentences reach this many words.")
    integration: IntegrationMode = parameter(
        "answers",
        "answers = AnsInt (sub-questions and their answers); contexts = CxtInt (reranked sentences).",
    )
    rewrite: bool = parameter(True, "Ablation switch: rewrite sub-questions that refer to earlier answers.")
    ec_edges: bool = parameter(True, "Ablation switch: entity co-occurrence (EC) edges.")
    ss_edges: bool = parameter(True, "Ablation switch: semantic similarity (SS) edges.")
    sa_edges: bool = parameter(True, "Ablation switch: structural adjacency (SA) edges.")
    use_graph: bool = parameter(
        True, "Ablation switch: off retrieves chunks (as NaiveRAG) instead of sentences, with no expansion."
    )


CountMode = Literal["exactly", "up_to", "as_needed"]


@dataclass(kw_only=True)
class QueryDecompositionContext(DecompositionContext):
    """Query decomposition (seed 004 §2.4): N sub-queries, top-K passages each, answered from them all.

    Defaults are the seed's best setting: N = 3 (it tests 3, 4 and 5, F1 falling as N grows), top-5 per
    sub-query, and exactly N, since the seed fixes N (its Table 1 is measured at each N).
    """

    top_k: int = parameter(5, "Passages retrieved for each sub-question (seed 004: top-5 per sub-query).")
    max_sub_questions: int = parameter(
        3,
        "N, the number of sub-questions (seed 004 tests 3, 4 and 5); a longer list is cut to its first N.",
    )
    count: CountMode = parameter(
        "exactly",
        "exactly = the decomposer is asked for exactly N sub-questions, as the seed fixes N (fewer distinct "
        "ones given are kept, and recorded); up_to = at most N (fewer when the question needs fewer); "
        "as_needed = ChainRAG's own prompt, stating no count (usually two), cut at N.",
    )

    def stated_count(self) -> SubQuestionCount | None:
        if self.count == "as_needed":
            return None
        return SubQuestionCount(self.max_sub_questions, exactly=self.count == "exactly")


@dataclass(kw_only=True)
class NaiveQDContext(QueryDecompositionContext):
    """NaiveRAG with question decomposition, ChainRAG's baseline (paper 000, Table 1), as its paper runs it.

    The decomposition is ChainRAG's own (its prompt, cut at 4): the baseline differs from ChainRAG only in
    what it does with the sub-questions (retrieve chunks for each as decomposed, never rewritten), so the
    comparison isolates that, and an evaluation beside ChainRAG reuses its decompositions from the response
    cache. Each sub-question is answered from its own passages alone: the paper's Table 3 shows the
    baseline's second sub-question asked with its pronoun and its own context, no earlier answer.
    """

    max_sub_questions: int = parameter(
        4, "N: the most sub-questions kept (exactly N or at most N with `count` exactly / up_to)."
    )
    count: CountMode = parameter(
        "as_needed",
        "as_needed = ChainRAG's own decomposition prompt (usually two), cut at N, as the paper's baseline "
        "decomposes; exactly = ask for exactly N sub-questions; up_to = at most N.",
    )
    earlier_answers: bool = parameter(
        False,
        "Show each sub-question's reader the earlier sub-questions' answers (off as in the paper: each "
        "sub-question is answered from its own passages, so a pronoun stays unresolved).",
    )
    integration: IntegrationMode = parameter(
        "answers",
        "answers = the sub-questions and their answers give the final answer (AnsInt; a refusal falls back "
        "to the passages); contexts = the gathered passages, reranked against the question (CxtInt).",
    )
    word_limit: int = parameter(
        1000,
        "Words of reranked passages read when the final answer comes from the passages (contexts, or the "
        "sub-answers gave none): about the five chunks NaiveRAG reads.",
    )


IRCoTReader = Literal["direct", "cot"]


@dataclass(kw_only=True)
class IRCoTContext(RetrievalContext):
    """IR-CoT's parameters, with the defaults of the original code (StonyBrookNLP/ircot) and seed 004 §2.3.

    The 350-word cut and the 600-word drop are the original's rules for Wikipedia paragraphs; with the
    default 256-token chunks no chunk reaches either, so they matter only for indexes built with larger
    chunks.
    """

    top_k: int = parameter(
        6,
        "Paragraphs retrieved per step: for the question, then for each chain-of-thought sentence (the "
        "original searched 2-8 and defaults to 6; seed 004's best run used 10).",
    )
    retrieval_mode: RetrievalMode = parameter(
        "bm25",
        "How paragraphs are searched: bm25 (the original's retriever, default), dense (Chroma), or hybrid "
        "(reciprocal-rank fusion of both).",
    )
    max_iterations: int = parameter(
        8, "Cap on reasoning steps (chain-of-thought sentences, at least 1) before the reader answers."
    )
    paragraph_budget: int = parameter(
        15,
        "Most paragraphs kept: the first ones found, in the order found (each round's best first); "
        "once the budget is full, later rounds add none.",
    )
    demonstrations: int = parameter(
        2,
        "Worked examples (paragraphs, question, whole chain of thought) shown to the reasoner, at most 4; "
        "0 = zero-shot.",
    )
    reader: IRCoTReader = parameter(
        "direct",
        "How the final answer is read from the kept paragraphs: direct (a short answer, as NaiveRAG "
        'reads) or cot (a chain of thought, the answer taken after "answer is"; it offers no "cannot '
        'answer" phrase, so use direct with unanswerable).',
    )
    paragraph_words: int = parameter(350, "Words of each paragraph shown to the reasoner; the rest is cut.")
    long_paragraph_words: int = parameter(
        600, "A retrieved paragraph of more words than this is dropped, as the original does."
    )


@dataclass(kw_only=True)
class IterRetGenContext(RetrievalContext):
    """Iter-RetGen's parameters (Shao et al. 2023, as ChainRAG's and ReSP's papers run it): T = 3 iterations
    of top-5 retrieval, each with the question and the previous iteration's generation."""

    top_k: int = parameter(
        5, "Passages retrieved in each iteration (the question joined with the previous generation)."
    )
    iterations: int = parameter(
        3,
        "T, the number of retrieve-then-generate iterations (at least 1; 1 is NaiveRAG). They end sooner "
        "only when an iteration's generation repeats the previous one, which fixes every later one.",
    )


LocalPathwayReads = Literal["documents", "memories"]


@dataclass(kw_only=True)
class ReSPContext(RetrievalContext):
    """ReSP's parameters, the paper's defaults (paper 001 §5.2): top-5 dense retrieval, at most 3
    iterations, 200 output tokens for the intermediate calls."""

    top_k: int = parameter(
        5,
        "Passages retrieved each round: for the question on the first, then for the sub-question the "
        "reasoner planned (the paper's top-5).",
    )
    retrieval_mode: RetrievalMode = parameter(
        "dense",
        "How passages are searched: dense (Chroma; the paper's vector retriever, default), bm25, or "
        "hybrid (reciprocal-rank fusion of both).",
    )
    max_iterations: int = parameter(
        3,
        "Most retrieval rounds (the paper's 3, at least 1); after the last one the generator answers from "
        "the memories without asking the reasoner.",
    )
    step_tokens: int = parameter(
        200,
        "Output-token cap of the summarizer's and the planner's calls (the paper's 200); the judge's "
        "verdict is its first word, so it gets a few tokens.",
    )
    local_pathway_reads: LocalPathwayReads = parameter(
        "documents",
        "What the summarizer answers the current sub-question from: documents = the round's retrieved "
        "passages (the paper's §4.1, default); memories = the two memory queues (the paper's Table 1 "
        "prompt), this round's global evidence included.",
    )


@dataclass(kw_only=True)
class BiqogContext(RetrievalContext):
    """BiQOG's traversal of the question-chunk graph (the index's `question_graph` extra). Seed 002 names
    these parameters but not the values it used, so the defaults are this implementation's (README, BiQOG)."""

    top_k: int = parameter(
        5,
        "k: chunks of all the traversal saw, best by the final rerank, read by the answer (seed 002 reports "
        "k = 5 and 20).",
    )
    retrieval_mode: RetrievalMode = parameter(
        "dense",
        "BiQOG finds its seed questions by searching the embedded questions, which only dense search can "
        "do; other modes are not used.",
    )
    seeds: int = parameter(
        5,
        "Questions nearest to the query that the traversal starts from: as many as the passages read, so "
        "each needed fact has a chance of a question of its own.",
    )
    hops: int = parameter(
        2,
        "Hops: each collects the chunks adjacent to the current questions and moves to the questions "
        "adjacent to the kept ones (at least 1; 2 reaches the chunks that share a question with a chunk of "
        "the seeds': one link beyond what the seeds alone find).",
    )
    width: int = parameter(
        5,
        "Chunks kept per hop by the reranker, whose questions the next hop starts from: a hop's frontier "
        "stays the size of what the answer reads, so the reranker's calls grow linearly with the hops.",
    )

    def __post_init__(self) -> None:
        for name in ("seeds", "hops", "width", "top_k"):
            if getattr(self, name) < 1:
                raise ValueError(f"BiQOG's {name} must be at least 1, got {getattr(self, name)}")


TreeHopUpdateRule = Literal["learned", "delta"]
PassageOrder = Literal["hop", "score"]


@dataclass(kw_only=True)
class TreeHopContext(RetrievalContext):
    """TreeHop's parameters: the public code's K = 5 chunks per hop, 3 hops (seed 004 reports 1 to 5)."""

    top_k: int = parameter(
        5,
        "K: chunks retrieved per query embedding, and new branches kept per hop by layer-wise pruning.",
    )
    retrieval_mode: RetrievalMode = parameter(
        "dense", "TreeHop searches with query embeddings it computes, which only dense search can take."
    )
    hops: int = parameter(3, "Retrieval hops (at least 1; 1 is dense NaiveRAG; seed 004 reports 1 to 5).")
    update: TreeHopUpdateRule = parameter(
        "learned",
        "How a hop's query becomes the next: learned (the checkpoint's gate) or delta (q - c normalised, no "
        "learned gate: the ablation that shows what training adds).",
    )
    checkpoint: str = parameter(
        "",
        "Path of a checkpoint made by `hopgraph train treehop`; empty = the configured default (the one "
        "shipped for the default embedder unless treehop_checkpoint is set).",
    )
    answer_k: int = parameter(8, "Kept chunks the answer reads, taken in answer_order.")
    answer_order: PassageOrder = parameter(
        "hop",
        "Order of the chunks the answer reads: hop (hop 1 first, best first within a hop) or score "
        "(by similarity to the query that retrieved them).",
    )


@dataclass(kw_only=True)
class QuoteContext(RetrievalContext):
    """QuOTE's parameters: top-k chunks found through their hypothetical questions (the index's
    `questions` extra), over-retrieving k x M question entries to find k distinct chunks."""

    top_k: int = parameter(5, "k: distinct passages found through their questions and read by the answer.")
    retrieval_mode: RetrievalMode = parameter(
        "dense",
        "QuOTE searches the embedded question entries, which only dense search can do; other modes are "
        "not used.",
    )
    over_retrieve: int = parameter(
        10,
        "M: question entries searched per passage wanted (k x M). Each chunk has up to 10 questions (the "
        "index default), so a chunk whose every question outranks the next chunk's still leaves room for "
        "k distinct chunks; when fewer turn up, the search is widened until k are found.",
    )
