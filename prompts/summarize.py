"""Context summariser (ChainRAG §3.3 fallback): when an earlier sub-question went unanswered, its gathered
context is condensed and carried into the next sub-question's context instead of a rewrite."""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from prompts.echo import EchoGuard
from prompts.passages import format_passages
from prompts.reader import SYSTEM  # the readers' system text: a summary call reuses their cached prefix
from stores.evidence import Evidence

INSTRUCTION = (
    "Summarise, in at most three sentences, what these passages say that bears on the question. "
    "Keep names, dates and numbers."
)

GUARD = EchoGuard(own_text=(SYSTEM, INSTRUCTION))


def messages(evidence: Sequence[Evidence], question: str) -> list[BaseMessage]:
    return [
        SystemMessage(SYSTEM),
        HumanMessage(f"Passages:\n{format_passages(evidence)}\n\nQuestion: {question}\n{INSTRUCTION}"),
    ]


def parse(reply: str) -> tuple[str, str]:
    """(summary, what went wrong): the reply stripped; an empty one (or one the echo guard blanked) carries
    no note, and says so, since an empty "On '...':" line would only add noise to the next prompts."""
    summary = reply.strip()
    return (summary, "") if summary else ("", "the summary was empty, so no notes are carried for it")
