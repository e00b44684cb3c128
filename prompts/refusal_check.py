"""The refusal check: after the reader says the passages do not answer, it lists the facts the question
needs and whether a passage states each, and the refusal stands only when one is missing.

Under `unanswerable` (MultiHop-RAG's null queries) the 1.5B reader refused 26 of the 42 answerable queries
among the first 50 dev ones, and every comparison and temporal question (docs/methods/multimeta.md): it
takes the offered way out whenever a question has two sides. The check asks it to decide the refusal as a
verdict over what it has read — for a comparison, each side's fact stated or not, then the comparison — as
issue 34 asks. It is a turn of the same conversation (passages, question, the refusal, then this), so
llama.cpp reuses the whole prompt as its prefix and evaluates only this turn.

The reply is a JSON object (REPLY: asked as that shape with structured output on; read by `parse` either
way). The instruction names the keys and what goes in them but shows no filled-in example, which the
small model would copy.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from langchain_core.messages import HumanMessage

from prompts.echo import EchoGuard
from prompts.structured import ReplyShape, json_object

CHECK = (
    "Check that against the passages before you decide. Name each fact the question depends on (for a "
    "comparison, the fact on each side of it) and say whether a passage states it. Reply with a JSON "
    'object only: "facts", a list with one object per fact, each with "fact" (the fact in a few words) and '
    '"stated" (true or false); and "answer", the answer those facts give, as briefly as possible, or an '
    "empty string when a fact is not stated."
)

GUARD = EchoGuard(own_text=(CHECK,))

REPLY = ReplyShape(
    "refusal_check",
    {
        "type": "object",
        "properties": {
            "facts": {
                "type": "array",
                "minItems": 1,
                "items": {
                    "type": "object",
                    "properties": {"fact": {"type": "string", "minLength": 1}, "stated": {"type": "boolean"}},
                    "required": ["fact", "stated"],
                    "additionalProperties": False,
                },
            },
            "answer": {"type": "string"},
        },
        "required": ["facts", "answer"],
        "additionalProperties": False,
    },
)

# A reply's "stated" written as a string, as small models sometimes do
_TRUTH = {"true": True, "yes": True, "false": False, "no": False}


def request() -> HumanMessage:
    """The turn appended after the reader's refusal."""
    return HumanMessage(CHECK)


@dataclass(frozen=True)
class Checked:
    """What the check found: each fact with whether a passage states it, and the answer they give."""

    facts: tuple[tuple[str, bool], ...]
    answer: str

    @property
    def all_stated(self) -> bool:
        return bool(self.facts) and all(stated for _, stated in self.facts)

    def record(self) -> list[dict[str, Any]]:
        """The facts as the state keeps them (`refusal_check`)."""
        return [{"fact": fact, "stated": stated} for fact, stated in self.facts]


def parse(text: str, structured: bool = False) -> tuple[Checked | None, list[str]]:
    """(what the reply found, notes on what was wrong with it); None when it holds no usable fact list.

    A `structured` reply (asked for REPLY) is read as that object when it is one; otherwise the first JSON
    object in the reply is read (text around it ignored), noted as prompts.structured.UNREAD when it was
    asked structured. Each defect has one outcome, named in the notes:
    - no JSON object, a broken one, or no list under "facts": None (the caller keeps the refusal);
    - a fact that is not an object with a non-empty "fact" and a true / false "stated" (the strings
      "true", "false", "yes", "no" read as such): dropped, noted; none left: None;
    - "answer" missing or not a string: an empty answer, noted.
    """
    data, notes = json_object(text, REPLY, structured)
    if data is None:
        return None, notes
    raw_facts = data.get("facts") if isinstance(data, dict) else None
    if not isinstance(raw_facts, list):
        return None, [*notes, "no list of facts"]
    facts = []
    for item in raw_facts:
        fact = item.get("fact") if isinstance(item, dict) else None
        stated = item.get("stated") if isinstance(item, dict) else None
        if isinstance(stated, str):
            stated = _TRUTH.get(stated.strip().lower())
        if isinstance(fact, str) and fact.strip() and isinstance(stated, bool):
            facts.append((fact.strip(), stated))
        else:
            notes.append(f"a fact that is not a fact with true or false dropped: {item!r}"[:200])
    if not facts:
        return None, [*notes, "no usable fact"]
    answer = data.get("answer")
    if not isinstance(answer, str):
        notes.append(f"answer was {type(answer).__name__}, not a string: no answer")
        answer = ""
    return Checked(tuple(facts), answer.strip()), notes
