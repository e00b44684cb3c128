"""Reader roles over gathered sentences: the sufficiency judge and the sub-question answerer.

Both put the same system text and the same numbered sentences first and the varying question and
instruction last, so that a judge call and the answer call that follows it share their whole prefix
(llama.cpp re-evaluates only the tail; providers with prompt caching bill it as cached).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from prompts.answer import CUE, INSTRUCTION, UNANSWERABLE, UNANSWERABLE_INSTRUCTION
from prompts.echo import EchoGuard, normalise
from prompts.passages import DATA_RULE, format_passages
from prompts.structured import YES_NO
from stores.evidence import Evidence

SYSTEM = f"You read numbered passages and answer about them. Use only what the passages say. {DATA_RULE}"

JUDGE_INSTRUCTION = (
    "Do these passages contain enough information to answer the question? Reply with Yes or No only."
)

# The judge's reply for structured output: the one word it asks for, as a JSON string
JUDGE_REPLY = YES_NO

ANSWER_INSTRUCTION = f"{INSTRUCTION} {UNANSWERABLE_INSTRUCTION}\n{CUE}"

ANSWER_GUARD = EchoGuard(
    own_text=(SYSTEM, ANSWER_INSTRUCTION), allowed=frozenset({"yes", "no", normalise(UNANSWERABLE)})
)


def _messages(evidence: Sequence[Evidence], notes: str, question: str, instruction: str) -> list[BaseMessage]:
    notes_block = f"Notes from earlier steps:\n{notes}\n\n" if notes else ""
    return [
        SystemMessage(SYSTEM),
        HumanMessage(
            f"Passages:\n{format_passages(evidence)}\n\n{notes_block}Question: {question}\n{instruction}"
        ),
    ]


def judge_messages(evidence: Sequence[Evidence], question: str, notes: str = "") -> list[BaseMessage]:
    return _messages(evidence, notes, question, JUDGE_INSTRUCTION)


def answer_messages(evidence: Sequence[Evidence], question: str, notes: str = "") -> list[BaseMessage]:
    return _messages(evidence, notes, question, ANSWER_INSTRUCTION)


# A reply's first word when it is Yes or No (after any markup such as "**"), and the text that follows it.
# The word is matched with ASCII case folding: under Unicode rules "Yeſ" (a long s) would pass for "yes".
_VERDICT = re.compile(r"^[^\w]*(?a:(yes|no))(?![\w])[^\w\n]*(.*)", re.IGNORECASE | re.DOTALL)


def verdict_and_rest(reply: str) -> tuple[bool | None, str]:
    """(Yes -> True, No -> False, neither -> None; the reply after that first word, as written).

    ReSP's local-pathway summarizer replies "Yes" followed by the answer, or "No": the rest is the answer.
    The punctuation right after the word ("Yes, ...", "Yes: ...", "**Yes**.") is not part of it.
    """
    match = _VERDICT.match(reply)
    if match is None:
        return None, ""
    return match.group(1).lower() == "yes", match.group(2).strip()


def verdict(reply: str, structured: bool = False) -> bool | None:
    """The judge's Yes (True) or No (False); None when the reply starts with neither. A `structured` reply
    (asked for JUDGE_REPLY) is read as that JSON string first."""
    shaped = JUDGE_REPLY.read(reply) if structured else None
    return shaped == "Yes" if shaped is not None else verdict_and_rest(reply)[0]
