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
        return {"stop": STOP_SUFFICIENT if reader.is_yes(reply.text) else "", "usage": [reply.usage]}
