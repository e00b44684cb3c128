"""NaiveRAG w/ QD's parameters (paper 000's baseline)."""

from __future__ import annotations

from dataclasses import dataclass

from nodes.context import CountedDecompositionContext, CountMode, IntegrationMode, RetrievalMode, parameter


@dataclass(kw_only=True)
class NaiveQDContext(CountedDecompositionContext):
    """NaiveRAG with question decomposition, ChainRAG's baseline (paper 000, Table 1), as its paper runs it.

    The decomposition is ChainRAG's own (its prompt, cut at 4): the baseline differs from ChainRAG only in
    what it does with the sub-questions (retrieve chunks for each as decomposed, never rewritten), so the
    comparison isolates that, and an evaluation beside ChainRAG reuses its decompositions from the response
    cache. Each sub-question is answered from its own passages alone: the paper's Table 3 shows the
    baseline's second sub-question asked with its pronoun and its own context, no earlier answer. Retrieval is
    dense, with the embedder the paper shares across all its baselines (§4.1).
    """

    retrieval_mode: RetrievalMode = parameter(
        "dense",
        "How each sub-question's passages are searched: dense (Chroma; default, as the paper's baselines "
        "retrieve with its embedder), bm25, or hybrid (reciprocal-rank fusion of both).",
    )
    max_sub_questions: int = parameter(
        4,
        "N: the most sub-questions kept (exactly N or at most N with `count` exactly / up_to).",
        minimum=1,
        maximum=10,
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
        minimum=1,
        maximum=20000,
    )

    def integration_word_limit(self) -> int | None:
        """`word_limit`: the baseline's paper does not say what its integration reads; hopgraph reads its
        reranked chunks up to about the five NaiveRAG reads (then within the reader's window)."""
        return self.word_limit
