"""Integrate sub-question results into the final answer (ChainRAG §3.4; NaiveRAG w/ QD, its baseline, too).

answers (AnsInt): the original question from the sub-questions and their answers only.
contexts (CxtInt): every gathered passage, deduplicated, reranked against the original question, answered
like NaiveRAG. ChainRAG's paper and its authors' code read every deduplicated sentence of every
sub-question here (the word limit bounds each sub-question's expansion, not this); hopgraph reads them
all too, best first, cut only where the prompt would no longer fit the reader's context window. NaiveRAG
w/ QD's paper does not say how the baseline integrates; hopgraph reads its reranked chunks up to its
own `word_limit` (about the five chunks NaiveRAG reads), then within the window.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Sequence
from typing import Protocol

import numpy as np
from langgraph.runtime import Runtime

from nodes.context import IntegrationMode, context_of
from nodes.generate import answered, follow_up_tokens, read_passages, reader_messages
from nodes.llm import LLMGateway
from nodes.protocols import Reranker
from nodes.state import SubQuestionsState
from prompts import answer, integrate
from stores.evidence import Evidence, passage_text


def word_count(evidence: Sequence[Evidence]) -> int:
    """Words of the passages' text: what the word limits of ChainRAG and its baseline count."""
    return sum(len(item["text"].split()) for item in evidence)


def rerank(
    reranker: Reranker,
    question: str,
    evidence: Sequence[Evidence],
    vectors: np.ndarray | None = None,
) -> list[Evidence]:
    """The evidence in the reranker's order for `question`, best first; of equal scores (rank fusion
    ties) the later-gathered comes first, the order every measured run used. `vectors`, the evidence's
    stored embeddings row for row, spare an embedding reranker from embedding the passages again."""
    scores = reranker.score(question, [passage_text(item) for item in evidence], vectors)
    order = sorted(range(len(evidence)), key=lambda i: (scores[i], i), reverse=True)
    return [evidence[i] for i in order]


def within_words(ranked: Sequence[Evidence], word_limit: int) -> list[Evidence]:
    """`ranked` cut where the next item would pass `word_limit` words (the first is always kept)."""
    kept: list[Evidence] = []
    words = 0
    for item in ranked:
        words += len(item["text"].split())
        if kept and words > word_limit:
            break
        kept.append(item)
    return kept


def within_window(ranked: list[Evidence], fits: Callable[[list[Evidence]], bool]) -> list[Evidence]:
    """The longest start of `ranked` that `fits`, found by bisection: a longer start never makes a shorter
    prompt, and the prompt is estimated a dozen times rather than once per passage."""
    count = bisect.bisect_left(range(1, len(ranked) + 1), True, key=lambda n: not fits(ranked[:n]))
    return ranked[:count]


class IntegrationParameters(Protocol):
    """What integration reads of a run's context (ChainRAG's and NaiveRAG w/ QD's)."""

    integration: IntegrationMode
    max_answer_tokens: int
    unanswerable: bool
    refusal_check: bool

    def integration_word_limit(self) -> int | None:
        """Words of reranked passages the contexts are cut at; None: no word cut, only the window's."""
        ...


class Integrate:
    """AnsInt or CxtInt. An AnsInt answer that refuses (its sub-questions went unanswered) is not final
    while there is evidence: the question is answered from the contexts instead, as CxtInt reads them.
    Where refusals are kept on purpose (`unanswerable`) it is final, unless `refusal_check` is on: then
    the contexts are read and a refusal there is checked fact by fact (nodes.generate.checked_refusal).

    `context` is the method's context schema, whose defaults apply when a run passes no context.
    Reads `question`, `solved` (AnsInt) and `evidence` (CxtInt, and AnsInt's fallback); writes `answer`,
    `answer_outcome`, `usage`, `fallbacks`, and where the contexts are read `stats.contexts_left_out`.
    """

    def __init__(
        self,
        llm: LLMGateway,
        reranker: Reranker,
        context: type[IntegrationParameters],
    ) -> None:
        self.llm = llm
        self.reranker = reranker
        self.context = context

    def __call__(self, state: SubQuestionsState, runtime: Runtime[IntegrationParameters]) -> dict:
        ctx = context_of(runtime.context, self.context)
        question, usage, fallbacks = state["question"], [], []
        if ctx.integration == "answers":
            steps = [
                (sub["question"], sub["answer"] if sub["answered"] else None)
                for sub in state.get("solved", [])
            ]
            asked = integrate.messages(question, steps, unanswerable=ctx.unanswerable)
            reply = self.llm.complete(
                "generator", asked, max_tokens=ctx.max_answer_tokens, guard=integrate.GUARD
            )
            text = answer.clean(reply.text)
            if answer.is_refusal(text) and ctx.unanswerable and not ctx.refusal_check:
                return {"answer": text, "answer_outcome": "unanswerable", "usage": [reply.usage]}
            if not answer.is_refusal(text):
                return answered(self.llm, question, asked, reply, text, state.get("evidence", []))
            usage.append(reply.usage)
            fallbacks.append("integrate: the sub-answers gave no answer; answered from the contexts")
        passages, cut = self.contexts(question, state.get("evidence", []), ctx)
        update = read_passages(self.llm, question, passages, ctx)
        return {
            **update,
            "usage": usage + update["usage"],
            "fallbacks": fallbacks + cut.get("fallbacks", []) + update.get("fallbacks", []),
            "stats": cut["stats"],
        }

    def contexts(
        self, question: str, evidence: Sequence[Evidence], ctx: IntegrationParameters
    ) -> tuple[list[Evidence], dict]:
        """The passages the contexts are read from, and the update that records their cut.

        The evidence reranked against the question, cut at the method's word limit if it has one, then
        where the reader's prompt, with room for `final_answer`'s later turns, would pass the generator's
        context window. The window is the model's own (`local_n_ctx`, `provider_n_ctx`), not a run
        parameter: a default prompt then never overflows the model it runs on, whichever that is, and a
        larger window reads more. The prompt is counted as that model counts it: by a local GGUF's own
        vocabulary, or for a provider's model (whose tokenizer is on its server) estimated on the high side
        (nodes.window). How many items the window left out goes to `stats.contexts_left_out` (0: all read);
        when any were, a line in `fallbacks` says so, which the explorer shows under the answer.
        """
        ranked = rerank(self.reranker, question, evidence)
        word_limit = ctx.integration_word_limit()
        if word_limit is not None:
            ranked = within_words(ranked, word_limit)
        reader = self.llm.model_for("generator")
        window = reader.context_window
        room = window - follow_up_tokens(question, ctx.max_answer_tokens, reader.count_prompt)

        def fits(passages: list[Evidence]) -> bool:
            asked = reader_messages(question, passages, ctx)
            return reader.count_prompt(asked) <= room

        passages = within_window(ranked, fits)
        left_out = len(ranked) - len(passages)
        cut: dict = {"stats": {"contexts_left_out": float(left_out)}}
        if left_out:
            cut["fallbacks"] = [
                f"integrate: the reader's {window:,}-token window holds the best {len(passages)} of the "
                f"{len(ranked)} items to read; the other {left_out} were left out"
            ]
        return passages, cut
