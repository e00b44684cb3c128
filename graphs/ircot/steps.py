"""IR-CoT's steps (seed 004 §2.3; StonyBrookNLP/ircot): gather paragraphs for the latest query within the
paragraph budget, and write the chain of thought one sentence at a time.

Both readers are shared: the direct one is `nodes.generate.Generate`, the chain-of-thought one
`nodes.chain_of_thought.ChainOfThoughtReader` (Iter-RetGen writes its generations with it). These nodes know
IR-CoT's context and state, not its graph.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langgraph.runtime import Runtime

from graphs.ircot.context import IRCoTContext
from graphs.ircot.state import IRCoTState
from nodes.context import context_of
from nodes.llm import LLMGateway
from nodes.protocols import IndexProvider
from nodes.retrieve import search_evidence
from nodes.state import next_round
from prompts import demonstrations, ircot
from stores.evidence import Evidence

# One sentence of 15-30 tokens, with room to spare: the model runs on after it and only the first is kept
# (a reply that restates earlier sentences first needs the room). 64 tokens are about 2 s on the embedded
# model, and a first sentence cut short by the cap is still a usable query.
REASONING_TOKENS = 64


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
