"""Decompose: split the question into sub-questions (a JSON array), as many as the run's context states."""

from __future__ import annotations

from langgraph.runtime import Runtime

from nodes.context import DecompositionContext, context_of
from nodes.llm import LLMGateway
from nodes.state import QAState
from prompts import decompose

# Room for the reply: 40 tokens per sub-question, never less than the 160 every ChainRAG run was given.
TOKENS_PER_SUB_QUESTION = 40
MIN_TOKENS = 160


class Decompose:
    """The decomposer, role "decomposer"; it reads only the question (hence `QAState`: methods merge
    sub-question answers differently), writes `sub_questions` and knows nothing of what comes next.

    The context states the count (`DecompositionContext.stated_count`): none for ChainRAG (its prompt as
    the paper's), exactly or at most N for query decomposition; `context` is the method's context schema,
    whose defaults apply when a run passes no context. Outcomes of a decomposition the model gets wrong,
    each recorded in `fallbacks`: the parser's (prompts.decompose.parse: no or broken JSON -> the question
    itself; repeats dropped; cut at N); a reply that copied the prompt's rules or examples twice, which the
    gateway's guard blanks -> the question itself; fewer than exactly N -> the sub-questions given. Asking
    again for the missing ones was tried and dropped: the greedy 1.5B model, shown its short list and
    asked for exactly N, gave the same list back (3 of 3 times).
    """

    def __init__(self, llm: LLMGateway, context: type[DecompositionContext] = DecompositionContext) -> None:
        self.llm = llm
        self.context = context

    def __call__(self, state: QAState, runtime: Runtime[DecompositionContext]) -> dict:
        ctx = context_of(runtime.context, self.context)
        question, count = state["question"], ctx.stated_count()
        reply = self.llm.complete(
            "decomposer",
            decompose.messages(question, count),
            max_tokens=max(MIN_TOKENS, TOKENS_PER_SUB_QUESTION * ctx.max_sub_questions),
            guard=decompose.guard(count),
            shape=decompose.REPLY,
        )
        subs, fallback = decompose.parse(reply.text, question, ctx.max_sub_questions, reply.structured)
        if reply.usage["echoes"] > 1:  # the guard blanked a reply that copied the prompt twice
            fallback = "the reply repeated the prompt's own rules or examples: the question itself"
        fallbacks = [fallback] if fallback else []
        if count is not None and count.exactly and len(subs) < count.n:
            fallbacks.append(f"{len(subs)} of {count.n} sub-questions: kept")
        return {
            "sub_questions": subs,
            "usage": [reply.usage],
            "fallbacks": [f"decompose: {note}" for note in fallbacks],
            "stats": {"sub_questions": float(len(subs))},
        }
