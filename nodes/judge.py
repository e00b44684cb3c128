"""Judge sufficiency: does what was gathered answer the question asked? One Yes / No call.

ChainRAG asks it of a sub-question's gathered sentences (paper 000 §3.2), ReSP's reasoner of its two memory
queues (paper 001, Table 1 "Judge"); each graph hands over its own prompt and role. The verdict is the
reply's first word (`prompts.reader.verdict`), so a few tokens hold it. A reply with no clear Yes / No
counts as No, recorded in `fallbacks`: gathering goes on, and each method's own cap (ChainRAG's word
limit, ReSP's rounds) still ends it. With structured output the judge is asked for the JSON string "Yes" or
"No" (prompts.reader.JUDGE_REPLY); a reply that is not one is read as free text, noted in `fallbacks`.

Reads what its prompt reads; writes `stop` ("sufficient", or "" to go on), `usage`, `fallbacks`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from langchain_core.messages import BaseMessage

from nodes.llm import LLMGateway
from prompts import reader
from prompts.echo import EchoGuard
from prompts.structured import UNREAD

STOP_SUFFICIENT = "sufficient"


class JudgeSufficiency:
    def __init__(
        self,
        llm: LLMGateway,
        role: str,
        messages: Callable[[Mapping[str, Any]], list[BaseMessage]],
        *,
        max_tokens: int,
        guard: EchoGuard | None = None,
    ) -> None:
        self.llm, self.role, self.messages = llm, role, messages
        self.max_tokens, self.guard = max_tokens, guard

    def __call__(self, state: Mapping[str, Any]) -> dict:
        reply = self.llm.complete(
            self.role,
            self.messages(state),
            max_tokens=self.max_tokens,
            guard=self.guard,
            shape=reader.JUDGE_REPLY,
        )
        sufficient = reader.verdict(reply.text, reply.structured)
        update: dict[str, Any] = {"stop": STOP_SUFFICIENT if sufficient else "", "usage": [reply.usage]}
        notes = [UNREAD] if reply.unread() else []
        if sufficient is None:
            notes.append(f"no Yes/No in {reply.text.strip()[:60]!r}: taken as No")
        if notes:
            update["fallbacks"] = [f"judge: {note}" for note in notes]
        return update
