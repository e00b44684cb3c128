"""The edge judge: the LLM side of the `question_graph` index extra (stores.question_graph).

Stores know nothing of LLMs, so BiQOG's edge formation asks through this judge: the store hands it a chunk's
title and text and one question, and gets back a verdict (prompts.edge_judge.VERDICTS), which it journals.
Every call goes through the LLM gateway (role "edge_judge", so `[roles.edge_judge]` can point it at another
model), with the prompt's echo guard.
"""

from __future__ import annotations

from nodes.llm import IndexTimeCaller, LLMGateway
from prompts import edge_judge

ROLE = "edge_judge"


class LLMEdgeJudge(IndexTimeCaller):
    """stores.protocols.EdgeJudge over the gateway (nodes.llm.IndexTimeCaller: identity, concurrency,
    cost)."""

    def __init__(self, llm: LLMGateway, concurrency: int) -> None:
        super().__init__(llm, ROLE, f"edge-judge-{edge_judge.VERSION}", concurrency, edge_judge.REPLY)

    def judge(self, title: str, text: str, question: str) -> str:
        messages = edge_judge.messages(title, text, question)
        reply = self._complete(messages, edge_judge.MAX_TOKENS, edge_judge.GUARD, edge_judge.REPLY)
        return edge_judge.verdict(reply.text, reply.structured)
