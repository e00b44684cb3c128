"""Prepare the next sub-question: rewrite it when it points at an earlier answer (ChainRAG §3.3).

The trigger is a deliberate list of pronouns and demonstratives, matched as whole words: "the" and other
articles never trigger it. When every earlier sub-question was answered, the LLM puts the entity back into
the question. When one was not, there is no entity to put back; its gathered context is summarised instead
and carried as notes into the current sub-question's judge and answer prompts.
"""

from __future__ import annotations

import re

from langgraph.runtime import Runtime

from nodes.context import ChainRAGContext, context_of
from nodes.llm import LLMGateway
from nodes.state import ChainRAGState
from prompts import rewrite, summarize

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
            context = [item for item in state.get("evidence", []) if item["hop"] == i + 1]
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
