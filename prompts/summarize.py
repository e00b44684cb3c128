"""Context summariser (ChainRAG §3.3 fallback): when an earlier sub-question went unanswered, its gathered
context is condensed and carried into the next sub-question's context instead of a rewrite."""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from prompts.answer import SHORT_WORDS, is_refusal
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
    """(summary, what went wrong): the reply stripped. Two replies carry no note, and say why: an empty one
    (or one the echo guard blanked), and a short one that only declines ("Insufficient information.",
    "Unknown": the passages said nothing on it), since their "On '...':" line would only add noise to the
    next prompts. A longer reply is kept even when it opens with "not mentioned": the rest may say what
    the passages do say."""
    summary = reply.strip()
    if not summary:
        return "", "the summary was empty, so no notes are carried for it"
    if len(summary.split()) <= SHORT_WORDS and is_refusal(summary):
        return "", f"the summary only declined ({summary!r}), so no notes are carried for it"
    return summary, ""
