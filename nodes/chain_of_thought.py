"""The chain-of-thought reader: a whole chain of thought over the passages, the answer read from the sentence
that says "answer is" (prompts.ircot: IR-CoT's reasoner prompt with an empty chain, and its worked examples).

Two methods read this way: IR-CoT's `cot` reader (once, over the paragraphs it kept) and Iter-RetGen, whose
every generation is such a chain (the whole chain is its next query) and whose last one gives the answer.
Writing a chain and answering from it are two steps, so a method can write chains and answer from the last.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import BaseMessage
from langgraph.runtime import Runtime

from nodes.context import ChainOfThoughtContext, context_of
from nodes.generate import answered, read_passages
from nodes.llm import LLMGateway, LLMReply
from prompts import answer, demonstrations, ircot
from stores.evidence import Evidence

# A whole chain of thought of three to five sentences, the answer sentence last.
CHAIN_TOKENS = 200


@dataclass(frozen=True)
class Chain:
    """One chain of thought as written: the prompt, the reply, and the reply's chain on one line (the prompt's
    layout cut off, `prompts.ircot.chain_text`; empty when the reply was, or was blanked as an echo)."""

    asked: list[BaseMessage]
    reply: LLMReply
    text: str


class ChainOfThoughtReader:
    """Reads `evidence` with a chain of thought (IR-CoT's "IRCoT QA" with a CoT reader), role "generator".

    Its prompt is IR-CoT's reasoning prompt with an empty chain, so after IR-CoT's reasoning it reuses that
    prompt's KV prefix up to the question. When the chain gives no answer (no "answer is", nothing after it,
    or a refusal), the direct reader answers from the same passages (with its own refusal handling),
    recorded in `fallbacks`. (Asking the chain for its answer in its own conversation would reuse its
    prompt, but a chain that stops short stops at the bridge entity, and asked what it concluded, the
    model names that entity: on 30 HotpotQA questions it lost 5 answers the direct reader got and gained
    none, docs/methods/iter_retgen.md.) The prompt offers no "cannot answer" phrase: with `unanswerable`,
    a refusal after "answer is" is kept as the chain's own, and with `refusal_check` on it goes to the
    direct reader, which offers the phrase and whose refusal is checked.
    """

    def __init__(self, llm: LLMGateway, nlp: Any) -> None:
        self.llm = llm
        self.nlp = nlp

    def __call__(self, state: Mapping[str, Any], runtime: Runtime[ChainOfThoughtContext]) -> dict:
        ctx = context_of(runtime.context, ChainOfThoughtContext)
        question, paragraphs = state["question"], state.get("evidence", [])
        return self.answer(question, paragraphs, ctx, self.write(question, paragraphs, ctx))

    def write(self, question: str, paragraphs: Sequence[Evidence], ctx: ChainOfThoughtContext) -> Chain:
        """A whole chain of thought for `question` over `paragraphs`."""
        demos = demonstrations.select(ctx.demonstrations)
        asked = ircot.messages(question, paragraphs, [], demos, ctx.paragraph_words)
        reply = self.llm.complete("generator", asked, max_tokens=CHAIN_TOKENS, guard=ircot.guard(demos))
        return Chain(asked, reply, ircot.chain_text(reply.text))

    def answer(
        self, question: str, paragraphs: Sequence[Evidence], ctx: ChainOfThoughtContext, chain: Chain
    ) -> dict:
        """The final answer from `chain` (written over `paragraphs`): what follows "answer is", cut to its
        span; else the direct reader's. The update's usage holds the chain's call too."""
        said = ircot.answer_in(chain.reply.text, self.nlp)
        text = answer.clean(said or "")
        refused = answer.is_refusal(text)
        if refused and text and ctx.unanswerable and not ctx.refusal_check:
            return {"answer": text, "answer_outcome": "unanswerable", "usage": [chain.reply.usage]}
        if not refused:
            return answered(self.llm, question, chain.asked, chain.reply, text, paragraphs)
        why = f"the chain of thought refused ({said!r})" if said else 'no "answer is" in the chain of thought'
        direct = read_passages(self.llm, question, paragraphs, ctx)
        return {
            **direct,
            "usage": [chain.reply.usage, *direct["usage"]],
            "fallbacks": [f"cot reader: {why}; answered by the direct reader", *direct.get("fallbacks", [])],
        }
