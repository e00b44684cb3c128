"""ReSP's reasoner (paper 001 §4, Table 1 "Judge" and "Plan"), and the memory view every reader of the
memories shares.

What Table 1 asks, in our words:
- judge: relying only on the known information (the two memory queues) and inferring nothing it does not
  say, can the overarching question be answered completely and exactly? "Yes" or "No", one word;
- plan: find the gap between what is known and what the question needs, and write one question for the
  next retrieval: not the whole plan, and none already searched.

The known information is the global evidence memory, then the local pathway memory, each in the order it
grew. Layout for llama.cpp's KV-prefix reuse: the system text, the known information and the question come
first and are the same for the judge, the planner and the generator of the same round (the generator's
prompt, `prompts.resp_generator`, uses this system text and view), so after the judge each of them
re-evaluates only its own instruction. A plan that repeats a searched sub-question is asked again with the
reply and a note naming the repeat appended, which keeps the whole prefix too.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

# pydantic, and so Studio's input and output forms, cannot read typing.TypedDict on Python 3.11
from typing_extensions import TypedDict

from prompts.echo import EchoGuard, normalise
from prompts.structured import ReplyShape


class PathwayStep(TypedDict):
    """One entry of ReSP's local pathway memory: a sub-question searched, and what its passages answered.

    `answered` is False when the summarizer said its passages do not answer it (`answer` is then empty);
    the sub-question stays in the memory either way, so the planner sees every path already taken.
    """

    sub_question: str
    answer: str
    answered: bool


SYSTEM = (
    "You work on a question in steps, with what a search has found so far. Rely only on the known "
    "information you are given."
)

EVIDENCE_HEADER = "Evidence found for the question:"
PATHWAY_HEADER = "Sub-questions already searched, with what their passages answered:"
NOT_ANSWERED = "not answered"
NOTHING_KNOWN = "Nothing has been found yet."

JUDGE_INSTRUCTION = (
    "Relying only on the known information, and without inferring anything it does not say, can you "
    "answer the question completely and exactly? Reply Yes if you can, or No if more information is "
    "needed: one word only."
)

PLAN_INSTRUCTION = (
    "Compare what is known with what the question needs. Write the one question to search for next, to "
    "find what is still missing: a single question, not the whole plan, and not a question already "
    "searched. Reply with that question only."
)
PLAN_CUE = "Next question:"
# The plan's reply for structured output: the one question, as a JSON string
PLAN_REPLY = ReplyShape("next_question", {"type": "string", "minLength": 1})
_REPEAT_BEFORE = "That question was searched already:"
_REPEAT_AFTER = "Write a different question, for information that has not been found yet."

# The prompt's own text around the memories, shared with the generator (prompts.resp_generator).
MEMORY_VIEW_TEXT = (SYSTEM, EVIDENCE_HEADER, PATHWAY_HEADER, NOTHING_KNOWN)

GUARD = EchoGuard(
    own_text=(
        *MEMORY_VIEW_TEXT,
        JUDGE_INSTRUCTION,
        PLAN_INSTRUCTION,
        PLAN_CUE,
        _REPEAT_BEFORE,
        _REPEAT_AFTER,
    ),
    allowed=frozenset({"yes", "no"}),
)

# Labels a small model puts before its question ("Next question:", "[Your Thought]:", "1.", "- "). No two
# runs of spaces meet without a bracket between them ("\s*\[?\s*" would): a long run of spaces after a
# label is then matched one way, not tried in every split (quadratic: a second for 1,000 spaces).
_PLAN_LABEL = re.compile(
    r"^(\s*((\[\s*)?(your\s+)?(next\s+)?(sub-?\s*)?(question|thought|query|search)\s*(\]\s*)?:|\d+[.)](?=\s)|[-*•]))+\s*",
    re.IGNORECASE,
)
_QUOTES = "\"'“”‘’`"


def known_information(global_memory: Sequence[str], local_memory: Sequence[PathwayStep]) -> str:
    """The two memory queues as the reasoner and the generator read them, each in the order it grew."""
    blocks = []
    if global_memory:
        blocks.append("\n".join([EVIDENCE_HEADER, *(f"- {summary}" for summary in global_memory)]))
    if local_memory:
        steps = (
            f"- {s['sub_question']} -> {s['answer'] if s['answered'] else NOT_ANSWERED}" for s in local_memory
        )
        blocks.append("\n".join([PATHWAY_HEADER, *steps]))
    return "\n\n".join(blocks) or NOTHING_KNOWN


def _messages(known: str, question: str, instruction: str) -> list[BaseMessage]:
    return [
        SystemMessage(SYSTEM),
        HumanMessage(f"Known information:\n{known}\n\nQuestion: {question}\n{instruction}"),
    ]


def judge_messages(known: str, question: str) -> list[BaseMessage]:
    return _messages(known, question, JUDGE_INSTRUCTION)


def plan_messages(known: str, question: str) -> list[BaseMessage]:
    return _messages(known, question, f"{PLAN_INSTRUCTION}\n{PLAN_CUE}")


def replan_messages(first: Sequence[BaseMessage], reply: str, repeat: str) -> list[BaseMessage]:
    """The plan prompt asked again after a repeat: the reply, then a note naming the repeated question."""
    return [
        *first,
        AIMessage(reply),
        HumanMessage(f'{_REPEAT_BEFORE} "{repeat}". {_REPEAT_AFTER}\n{PLAN_CUE}'),
    ]


def parse_plan(reply: str, structured: bool = False) -> str:
    """The planned sub-question: the reply's first non-empty line without a label, numbering or quotes
    around it; empty when nothing is left or the reply is only a Yes / No (the judge's task, not a plan).
    A `structured` reply (asked for PLAN_REPLY) is that JSON string's text, cleaned the same way."""
    shaped = PLAN_REPLY.read(reply) if structured else None
    text = shaped if shaped is not None else reply
    line = next((ln.strip() for ln in text.strip().splitlines() if ln.strip()), "")
    plan = _PLAN_LABEL.sub("", line).strip().strip(_QUOTES).strip()
    return "" if normalise(plan) in {"", "yes", "no"} else plan


def is_repeat(plan: str, searched: Sequence[str]) -> bool:
    """True when `plan` asks a searched sub-question again, compared as lower-cased words (punctuation and
    spacing ignored), so "Who makes the Cybertruck?" repeats "who makes the cybertruck"."""
    return normalise(plan) in {normalise(question) for question in searched}
