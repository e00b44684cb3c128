"""Decompose: split the question into sub-questions (a JSON array), as many as the run's context states."""

from __future__ import annotations

from langchain_core.messages import AIMessage, HumanMessage
from langgraph.runtime import Runtime

from nodes.context import DecompositionContext, context_of
from nodes.llm import LLMGateway
from nodes.state import LLMUsage, QAState
from prompts import decompose

# Room for the reply: 40 tokens per sub-question, never less than the 160 every ChainRAG run was given.
TOKENS_PER_SUB_QUESTION = 40
MIN_TOKENS = 160


class Decompose:
    """The decomposer, role "decomposer"; it reads only the question (hence `QAState`: methods merge
    sub-question answers differently), writes `sub_questions` and knows nothing of what comes next.

    The context states the count (`DecompositionContext.stated_count`): none for ChainRAG (its prompt as
    the paper's), exactly or at most N for query decomposition. `context` is the method's context schema,
    whose defaults apply when a run passes no context. Outcomes of a decomposition the model gets wrong,
    each recorded in `fallbacks`: the parser's (prompts.decompose.parse: no or broken JSON -> the question
    itself, repeats dropped, cut at N); a reply that copied the prompt's rules or examples twice, which the
    gateway's guard blanks -> the question itself; with an exact count, fewer than N usable items -> asked
    once more (reply and nudge appended, so the KV prefix is reused), the longer list kept.
    """

    def __init__(self, llm: LLMGateway, context: type[DecompositionContext] = DecompositionContext) -> None:
        self.llm = llm
        self.context = context

    def __call__(self, state: QAState, runtime: Runtime[DecompositionContext]) -> dict:
        ctx = context_of(runtime.context, self.context)
        question, count = state["question"], ctx.stated_count()
        messages = decompose.messages(question, count)
        guard = decompose.guard(count)
        max_tokens = max(MIN_TOKENS, TOKENS_PER_SUB_QUESTION * ctx.max_sub_questions)
        reply = self.llm.complete("decomposer", messages, max_tokens=max_tokens, guard=guard)
        usage: list[LLMUsage] = [reply.usage]
        subs, fallback = self._parse(reply.text, reply.usage, question, ctx.max_sub_questions)
        fallbacks = [fallback] if fallback else []
        if count is not None and count.exactly and len(subs) < count.n:
            again = [*messages, AIMessage(reply.text), HumanMessage(decompose.count_nudge(count))]
            retry = self.llm.complete("decomposer", again, max_tokens=max_tokens, guard=guard)
            usage.append(retry.usage)
            retry_subs, retry_fallback = self._parse(retry.text, retry.usage, question, count.n)
            outcome = f"{len(subs)} of {count.n} sub-questions: asked again, "
            if len(retry_subs) > len(subs):
                subs = retry_subs
                outcome += f"{len(subs)} given" + (f" ({retry_fallback})" if retry_fallback else "")
            else:
                outcome += "no more given: the first reply's kept"
            fallbacks.append(outcome)
        return {
            "sub_questions": subs,
            "usage": usage,
            "fallbacks": [f"decompose: {note}" for note in fallbacks],
            "stats": {"sub_questions": float(len(subs))},
        }

    @staticmethod
    def _parse(text: str, usage: LLMUsage, question: str, limit: int) -> tuple[list[str], str | None]:
        subs, fallback = decompose.parse(text, question, limit)
        if usage["echoes"] > 1:  # the guard blanked a reply that copied the prompt twice
            return subs, "the reply repeated the prompt's own rules or examples: the question itself"
        return subs, fallback
