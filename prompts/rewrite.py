"""Rewriter (ChainRAG §3.3): put the entity a sub-question points at back into it.

A sub-question such as "Where was he born?" retrieves poorly because the entity it is about is only in an
earlier answer; the rewriter replaces the reference with that entity, changing nothing else.
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from prompts.echo import EchoGuard

SYSTEM = (
    "You rewrite a follow-up question so that it stands on its own. Replace each pronoun or reference "
    "(it, he, she, they, this, that, these, his, her, its, ...) with the entity it refers to, taken from "
    "the earlier questions and answers. Change nothing else. Output only the rewritten question."
)

GUARD = EchoGuard(own_text=(SYSTEM,))


def messages(earlier: Sequence[tuple[str, str]], question: str) -> list[BaseMessage]:
    steps = "\n".join(f"Q: {q}\nA: {a}" for q, a in earlier)
    return [SystemMessage(SYSTEM), HumanMessage(f"Earlier:\n{steps}\n\nFollow-up: {question}\nRewritten:")]


def parse(text: str, question: str) -> tuple[str, str | None]:
    """(query, fallback): the reply's first line; the follow-up unchanged when the reply is empty."""
    line = next((ln.strip() for ln in text.strip().splitlines() if ln.strip()), "")
    line = line.removeprefix("Rewritten:").strip().strip('"').strip()  # '" "' is an empty rewrite too
    return (line, None) if line else (question, "empty rewrite: the sub-question as decomposed")
