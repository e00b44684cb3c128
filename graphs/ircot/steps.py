"""IR-CoT's steps (seed 004 §2.3; StonyBrookNLP/ircot): gather paragraphs for the latest query within the
paragraph budget, write the chain of thought one sentence at a time, and the chain-of-thought reader.

The direct reader is the shared `Generate`; these nodes know IR-CoT's context and state, not its graph.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langgraph.runtime import Runtime

from graphs.ircot.context import IRCoTContext
from graphs.ircot.state import IRCoTState
from nodes.context import context_of
from nodes.generate import answered, final_answer
from nodes.llm import LLMGateway
from nodes.protocols import IndexProvider
from nodes.retrieve import search_evidence
from nodes.state import next_round
from prompts import answer, demonstrations, ircot
from stores.evidence import Evidence

# One sentence of 15-30 tokens, with room to spare: the model runs on after it and only the first is kept
# (a reply that restates earlier sentences first needs the room). 64 tokens are about 2 s on the embedded
# model, and a first sentence cut short by the cap is still a usable query.
REASONING_TOKENS = 64
# A whole chain of thought of three to five sentences, the answer sentence last.
READER_TOKENS = 200


def within_budget(
    kept: Sequence[Evidence], found: Sequence[Evidence], budget: int, max_words: int
) -> list[Evidence]:
    """Which of `found` (one round's hits, best first) join the `kept` paragraphs.

    How the budget is filled, as the original does: first come, first kept. A round's hits are taken best
    first; a hit already kept (the same chunk, or the same title and text under another id) or of more than
    `max_words` words is skipped, and once `budget` paragraphs are kept nothing more joins. So the kept
    paragraphs are the question's own best hits, then each sentence's new ones in the order the sentences
    were written, and a paragraph is never displaced once the reasoner has read it (every prompt of the
    run extends the one before).
    """
    ids = {item["id"] for item in kept}
    contents = {(item["title"], item["text"]) for item in kept}
    joining: list[Evidence] = []
    for item in found:
        if len(kept) + len(joining) >= budget:
            break
        content = (item["title"], item["text"])
        if item["id"] in ids or content in contents or len(item["text"].split()) > max_words:
            continue
        joining.append(item)
        ids.add(item["id"])
        contents.add(content)
    return joining


class GatherParagraphs:
    """Retrieve `top_k` paragraphs for the latest query and keep the new ones within the paragraph budget.

    The query is the question for the first round, then the chain's latest sentence (the graph does not
    come here after a sentence that only concludes: it has nothing new to search for). Each round records
    its paragraphs at hop = its number (1 = the question's).

    Question words: the original strips who / what / when / where / why / which / how / does / is from
    every query before BM25, where they only add noise. hopgraph's BM25 tokenizer drops all of them (they
    are in stores.bm25.STOPWORDS), in bm25 mode and in the BM25 half of hybrid search alike, so the query is
    passed whole: dense search embeds it as the sentence MiniLM was trained on, question words included.
    """

    def __init__(self, indexes: IndexProvider) -> None:
        self.indexes = indexes

    def __call__(self, state: IRCoTState, runtime: Runtime[IRCoTContext]) -> dict:
        ctx = context_of(runtime.context, IRCoTContext)
        reasoning = state.get("reasoning", [])
        query = reasoning[-1] if reasoning else state["question"]
        hop = next_round(state)
        found = search_evidence(self.indexes.open(ctx.index), query, ctx.top_k, hop, mode=ctx.retrieval_mode)
        kept = state.get("evidence", [])
        joining = within_budget(kept, found, ctx.paragraph_budget, ctx.long_paragraph_words)
        stats = {"paragraphs": float(len(kept) + len(joining)), "retrieval_rounds": float(hop)}
        return {"evidence": joining, "rounds": hop, "stats": stats}


class Reason:
    """One reasoning step: the next sentence of the chain of thought over the paragraphs kept so far.

    The reply's first sentence is kept (spaCy's sentence splitter, `prompts.ircot.next_sentence`); the step
    says to stop when that sentence says "answer is" (`stop` = "answer") or when it is the
    `max_iterations`-th (`stop` = "cap"). A reply with no usable sentence (empty, blanked as a repeated
    echo of the prompt, or only repeating the chain) stops the reasoning (`stop` = "fallback") and the
    reader answers from the paragraphs kept so far, as the original stops on an empty sentence: with
    greedy decoding, asking again would give the same reply. Each such case is recorded in `fallbacks`.
    """

    def __init__(self, llm: LLMGateway, nlp: Any) -> None:
        self.llm = llm
        self.nlp = nlp

    def __call__(self, state: IRCoTState, runtime: Runtime[IRCoTContext]) -> dict:
        ctx = context_of(runtime.context, IRCoTContext)
        written = state.get("reasoning", [])
        paragraphs = state.get("evidence", [])
        demos = demonstrations.select(ctx.demonstrations)
        reply = self.llm.complete(
            "reasoner",
            ircot.messages(state["question"], paragraphs, written, demos, ctx.paragraph_words),
            max_tokens=REASONING_TOKENS,
            guard=ircot.guard(demos),
        )
        sentence, problem = ircot.next_sentence(reply.text, written, self.nlp)
        if reply.usage["echoes"] > 1:
            problem = "the reply repeated the prompt's own text twice and was blanked"
        step = len(written) + 1
        update: dict[str, Any] = {"usage": [reply.usage], "stats": {"iterations": float(step)}}
        if not sentence:
            ending = f"reasoning stopped; the reader answers from the {len(paragraphs)} paragraphs kept"
            return {**update, "stop": "fallback", "fallbacks": [f"reason: {problem}: {ending}"]}
        if problem:
            update["fallbacks"] = [f"reason: {problem}"]
        if ircot.says_answer(sentence):
            stop = "answer"
        elif step >= ctx.max_iterations:
            stop = "cap"
        else:
            stop = ""
        return {**update, "reasoning": [sentence], "stop": stop}


class ReadWithReasoning:
    """The chain-of-thought reader ("IRCoT QA" with a CoT reader): the whole chain over the kept
    paragraphs, the answer taken from the sentence that says "answer is".

    Its prompt is the reasoner's with an empty chain, so it reuses the reasoning prompt's KV prefix up to
    the question. When the chain gives no answer (no "answer is", nothing after it, or a refusal), the
    direct reader answers from the same paragraphs (with its own refusal handling), recorded in
    `fallbacks`. The prompt offers no "cannot answer" phrase: for corpora with unanswerable questions
    (`unanswerable`), a refusal after "answer is" is kept, but the direct reader is the one that offers it;
    with `refusal_check` on, such a refusal goes to the direct reader too, whose refusal is checked.
    """

    def __init__(self, llm: LLMGateway, nlp: Any) -> None:
        self.llm = llm
        self.nlp = nlp

    def __call__(self, state: IRCoTState, runtime: Runtime[IRCoTContext]) -> dict:
        ctx = context_of(runtime.context, IRCoTContext)
        question, paragraphs = state["question"], state.get("evidence", [])
        demos = demonstrations.select(ctx.demonstrations)
        asked = ircot.messages(question, paragraphs, [], demos, ctx.paragraph_words)
        reply = self.llm.complete("generator", asked, max_tokens=READER_TOKENS, guard=ircot.guard(demos))
        said = ircot.answer_in(reply.text, self.nlp)
        text = answer.clean(said or "")
        refused = answer.is_refusal(text)
        if refused and text and ctx.unanswerable and not ctx.refusal_check:
            return {"answer": text, "answer_outcome": "unanswerable", "usage": [reply.usage]}
        if not refused:
            return answered(self.llm, question, asked, reply, text)
        why = f"the chain of thought refused ({said!r})" if said else 'no "answer is" in the chain of thought'
        direct = final_answer(
            self.llm,
            question,
            answer.messages(question, paragraphs, unanswerable=ctx.unanswerable),
            max_tokens=ctx.max_answer_tokens,
            guard=answer.GUARD,
            has_evidence=bool(paragraphs),
            unanswerable=ctx.unanswerable,
            check_refusal=ctx.refusal_check,
        )
        return {
            **direct,
            "usage": [reply.usage, *direct["usage"]],
            "fallbacks": [f"read_cot: {why}; answered by the direct reader", *direct.get("fallbacks", [])],
        }
