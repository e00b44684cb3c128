"""The question writer: the LLM side of the `questions` index extra (stores.questions).

Stores know nothing of LLMs, so index-time question generation lives here: the store hands each chunk's
title and text to this writer and gets plain questions back, which it journals and embeds. Every call goes
through the LLM gateway (role "question_writer", so `[roles.question_writer]` can point it at another
model), with the prompt's echo guard.
"""

from __future__ import annotations

import threading
from collections import Counter

from nodes.llm import LLMGateway
from prompts import questions

ROLE = "question_writer"


class LLMQuestionWriter:
    """stores.protocols.QuestionWriter over the gateway.

    `concurrency` chunks are written at once against a remote provider; an in-process model (which the
    gateway serialises anyway) takes one at a time, so a second worker would only wait. `spent` sums what
    the calls cost (calls, prompt / reused / completion tokens, seconds) for the index command's report.
    """

    def __init__(self, llm: LLMGateway, concurrency: int) -> None:
        chosen = llm.model_for(ROLE)
        self.llm = llm
        self.identity = f"{chosen.model_id}|questions-{questions.VERSION}"
        self.concurrency = 1 if chosen.exclusive else max(1, concurrency)
        self.spent: Counter[str] = Counter()
        self._lock = threading.Lock()

    def write(self, title: str, text: str, count: int) -> tuple[list[str], dict[str, int]]:
        reply = self.llm.complete(
            ROLE,
            questions.messages(title, text, count),
            max_tokens=questions.max_tokens(count),
            guard=questions.GUARD,
        )
        with self._lock:
            for key in ("calls", "prompt_tokens", "cached_tokens", "completion_tokens", "seconds"):
                self.spent[key] += reply.usage[key]
        parsed = questions.parse(reply.text, text, count)
        return parsed.questions, dict(parsed.counts)
