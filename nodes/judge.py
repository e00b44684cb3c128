"""Judge: does the gathered evidence suffice to answer the current sub-question? (ChainRAG §3.2)"""

from __future__ import annotations

from nodes.llm import LLMGateway
from nodes.sentence_retrieval import STOP_SUFFICIENT
from nodes.state import ChainRAGState
from prompts import reader


class JudgeSufficiency:
    def __init__(self, llm: LLMGateway) -> None:
        self.llm = llm

    def __call__(self, state: ChainRAGState) -> dict:
        messages = reader.judge_messages(state.get("gathered", []), state["query"], state.get("notes", ""))
        reply = self.llm.complete("judge", messages, max_tokens=3)
        sufficient = reader.verdict(reply.text)
        update = {"stop": STOP_SUFFICIENT if sufficient else "", "usage": [reply.usage]}
        if sufficient is None:  # no Yes/No: keep gathering; the word limit still ends the expansion
            update["fallbacks"] = [f"judge: no Yes/No in {reply.text.strip()[:40]!r}: taken as No"]
        return update
