"""The question writer: the LLM side of the `questions` index extra (stores.questions).

Stores know nothing of LLMs, so index-time question generation lives here: the store hands each chunk's
title and text to this writer and gets plain questions back, which it journals and embeds. Every call goes
through the LLM gateway (role "question_writer", so `[roles.question_writer]` can point it at another
model), with the prompt's echo guard.
"""

from __future__ import annotations

from nodes.llm import IndexTimeCaller, LLMGateway
from prompts import questions

ROLE = "question_writer"


class LLMQuestionWriter(IndexTimeCaller):
    """stores.protocols.QuestionWriter over the gateway (nodes.llm.IndexTimeCaller: identity, how many
    chunks are written at once, what the calls cost)."""

    def __init__(self, llm: LLMGateway, concurrency: int) -> None:
        super().__init__(llm, ROLE, f"questions-{questions.VERSION}", concurrency, questions.ASKED)

    def write(self, title: str, text: str, count: int) -> tuple[list[str], dict[str, int]]:
        messages = questions.messages(title, text, count)
        shape = questions.reply_shape(count)
        reply = self._complete(messages, questions.max_tokens(count), questions.GUARD, shape)
        parsed = questions.parse(reply.text, text, count, reply.structured)
        return parsed.questions, dict(parsed.counts)
