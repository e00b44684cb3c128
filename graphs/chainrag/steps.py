"""ChainRAG's own steps (paper 000): sentence-graph retrieval for one sub-question (§3.2) and the
rewriting of a sub-question that points at an earlier answer (§3.3). The shared steps it also runs
(decompose, the sub-question cursor and reader, the sufficiency judge, integration) live in nodes/.

Sentence-graph retrieval for one sub-question (ChainRAG §3.2): seed sentences, then graph expansion.

Seeds: the embedding pre-filter keeps the `candidates` most similar sentences, the reranker scores them
against the sub-question (with their stored vectors and their BM25 scores among themselves from the
graph's tokens, for a reranker that uses either) and the best `top_k` become seeds. Expansion: every step
adds the neighbours of everything gathered so far (the first step is all 1-hop neighbours of the seeds,
later steps reach higher orders), best first by similarity to the sub-question, until the word limit.
With the graph ablated (`use_graph=False`) the seeds are chunks from the chunk index and nothing is expanded.

Prepare the next sub-question: rewrite it when it points at an earlier answer (ChainRAG §3.3).

The trigger is a deliberate list of pronouns and demonstratives, matched as whole words: "the" and other
articles never trigger it. When every earlier sub-question was answered, the LLM puts the entity back into
the question. When one was not, there is no entity to put back; its gathered context is summarised instead
and carried as notes into the current sub-question's judge and answer prompts.
"""

from __future__ import annotations

import re

import numpy as np
from langchain_core.messages import BaseMessage
from langgraph.runtime import Runtime

from graphs.chainrag.context import ChainRAGContext
from graphs.chainrag.state import ChainRAGState
from nodes.context import context_of
from nodes.integrate import word_count
from nodes.judge import JudgeSufficiency
from nodes.llm import LLMGateway
from nodes.protocols import IndexProvider, Reranker
from nodes.subanswer import current_position
from prompts import reader, rewrite, summarize
from stores.documents import Span
from stores.evidence import Evidence
from stores.index import ChunkIndex
from stores.protocols import Embedder
from stores.sentence_graph.extra import SentenceGraphExtra

STOP_WORD_LIMIT, STOP_EXHAUSTED, STOP_NO_GRAPH = "word_limit", "exhausted", "no_graph"


def enabled_edges(ctx: ChainRAGContext) -> frozenset[str]:
    switches = {"EC": ctx.ec_edges, "SS": ctx.ss_edges, "SA": ctx.sa_edges}
    return frozenset(kind for kind, on in switches.items() if on)


def sentence_evidence(index: ChunkIndex, sentence: Span, score: float, hop: int) -> Evidence:
    """A sentence of the graph as evidence, marked as a sentence: readers show the sentences of one
    document together (`prompts.passages.format_passages`)."""
    item = index.evidence(sentence, score, hop)
    item["sentence"] = True
    return item


class SeedSentences:
    def __init__(self, indexes: IndexProvider, reranker: Reranker) -> None:
        self.indexes = indexes
        self.reranker = reranker

    def __call__(self, state: ChainRAGState, runtime: Runtime[ChainRAGContext]) -> dict:
        ctx = context_of(runtime.context, ChainRAGContext)
        hop = current_position(state)
        index = self.indexes.open(ctx.index)
        if not ctx.use_graph:
            hits = index.search(state["query"], ctx.top_k, mode=ctx.retrieval_mode)
            gathered = [index.evidence(hit.chunk, hit.score, hop) for hit in hits]
            return {"gathered": gathered, "stop": STOP_NO_GRAPH}
        graph = index.extra(SentenceGraphExtra)
        ids = [sentence_id for sentence_id, _ in graph.candidates(state["query"], ctx.candidates)]
        lexical = graph.lexical_scores(state["query"], ids)
        scores = self.reranker.score(state["query"], graph.texts(ids), graph.embeddings(ids), lexical)
        best = sorted(zip(scores, range(len(ids)), strict=True), reverse=True)[: ctx.top_k]
        seeds = graph.spans([ids[i] for _, i in best])
        return {
            "gathered": [
                sentence_evidence(index, seed, score, hop)
                for seed, (score, _) in zip(seeds, best, strict=True)
            ]
        }


class ExpandSentences:
    def __init__(self, indexes: IndexProvider, embedder: Embedder) -> None:
        self.indexes = indexes
        self.embedder = embedder

    def __call__(self, state: ChainRAGState, runtime: Runtime[ChainRAGContext]) -> dict:
        ctx = context_of(runtime.context, ChainRAGContext)
        index = self.indexes.open(ctx.index)
        graph = index.extra(SentenceGraphExtra)
        gathered = list(state.get("gathered", []))
        expansions = state.get("expansions", 0) + 1
        neighbours = graph.neighbors([item["id"] for item in gathered], enabled_edges(ctx))
        if not neighbours:
            return {"expansions": expansions, "stop": STOP_EXHAUSTED}
        similarity = graph.embeddings(neighbours) @ self.embedder.embed([state["query"]])[0]
        order = np.argsort(-similarity, kind="stable")
        best_first = [neighbours[i] for i in order]
        # Best first until the next sentence would pass the word limit: the longest prefix whose running
        # total fits (counts are never negative, so the totals only grow).
        totals = word_count(gathered) + np.cumsum(graph.word_counts(best_first))
        fits = int(np.searchsorted(totals, ctx.word_limit, side="right"))
        hop, kept = current_position(state), graph.spans(best_first[:fits])
        gathered += [
            sentence_evidence(index, sentence, float(similarity[i]), hop)
            for sentence, i in zip(kept, order[:fits], strict=True)
        ]
        stop = STOP_WORD_LIMIT if fits < len(best_first) else ""
        return {"gathered": gathered, "expansions": expansions, "stop": stop}


REFERRING_WORDS = (
    "it", "its", "it's", "itself", "they", "them", "their", "theirs", "themselves",
    "he", "him", "his", "himself", "she", "her", "hers", "herself",
    "this", "that", "these", "those", "there", "former", "latter", "aforementioned",
)  # fmt: skip
_REFERRING = re.compile(r"\b(" + "|".join(re.escape(w) for w in REFERRING_WORDS) + r")\b", re.IGNORECASE)


def needs_rewrite(question: str) -> bool:
    return _REFERRING.search(question) is not None


class PrepareSubQuestion:
    def __init__(self, llm: LLMGateway) -> None:
        self.llm = llm

    def __call__(self, state: ChainRAGState, runtime: Runtime[ChainRAGContext]) -> dict:
        ctx = context_of(runtime.context, ChainRAGContext)
        step = state.get("step", 0)
        asked = state["sub_questions"][step]
        solved = state.get("solved", [])
        fresh = {"gathered": [], "expansions": 0, "stop": "", "notes": ""}
        if not (ctx.rewrite and solved and needs_rewrite(asked)):
            return {**fresh, "query": asked}
        unanswered = [i for i, sub in enumerate(solved) if not sub["answered"]]
        if not unanswered:
            earlier = [(sub["question"], sub["answer"]) for sub in solved]
            reply = self.llm.complete(
                "rewriter", rewrite.messages(earlier, asked), max_tokens=64, guard=rewrite.GUARD
            )
            query, fallback = rewrite.parse(reply.text, asked)
            update = {**fresh, "query": query, "usage": [reply.usage]}
            return {**update, "fallbacks": [f"prepare: {fallback}"]} if fallback else update
        usages, notes, fallbacks = [], [], []
        for i in unanswered:
            read = set(solved[i]["read"])
            context = [item for item in state.get("evidence", []) if item["id"] in read]
            reply = self.llm.complete(
                "summarizer",
                summarize.messages(context, solved[i]["question"]),
                max_tokens=120,
                guard=summarize.GUARD,
            )
            usages.append(reply.usage)
            summary, problem = summarize.parse(reply.text)
            if summary:
                notes.append(f"On '{solved[i]['question']}': {summary}")
            else:
                fallbacks.append(f"prepare: sub-question {i + 1}: {problem}")
        update = {**fresh, "query": asked, "notes": "\n".join(notes), "usage": usages}
        return {**update, "fallbacks": fallbacks} if fallbacks else update


# The verdict is the reply's first word; three tokens hold "Yes" or "No" and a mark.
JUDGE_TOKENS = 3


class JudgeGathered(JudgeSufficiency):
    """The shared sufficiency judge, role "judge", asked whether the sentences gathered so far (and the
    notes on unanswered earlier sub-questions) answer the current sub-question as retrieved (§3.2). Its
    Yes ends the expansion (`stop` = "sufficient"); a reply with no Yes / No keeps gathering, and the word
    limit still ends it."""

    def __init__(self, llm: LLMGateway) -> None:
        super().__init__(llm, "judge", gathered_judge_messages, max_tokens=JUDGE_TOKENS)


def gathered_judge_messages(state: ChainRAGState) -> list[BaseMessage]:
    return reader.judge_messages(state.get("gathered", []), state["query"], state.get("notes", ""))
