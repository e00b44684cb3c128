"""Metadata extractor (Multi-Meta-RAG, seed 004 §2.2): which sources and dates a question restricts itself to.

The original asks for a Mongo-style filter dict of source and `published_at` lists (seed 004: Filter(q) =
{source: [s1..sm], published_at: [t1..tn]}) and lists its corpus's sources in the prompt. Ours asks for a
flat JSON object of four keys, which a 1.5B model writes more reliably than nested operators and a parser
can check field by field:

    {"sources": [names as listed], "days": ["YYYY-MM-DD", ...], "from": "YYYY-MM-DD" or null, "to": ...}

`days` is the paper's list: each day the question names as an article's publication day, searched as that
day. `from` / `to` are inclusive days for what the paper's list cannot say, a question bounding the dates
("after D" gives from = D, "before D" to = D, "between D1 and D2" both, a month its first and last day);
turning them into timestamps is the node's job. The sources the index holds are listed in the user
message (they are task content, not the prompt's own text). The worked examples name invented
publications and 2021 dates — none of them is a MultiHop-RAG query or source — and are part of the
prompt's own text, so a reply copying one is caught as an echo (three-word source names make a copied
source a three-word clause). An empty filter is a legitimate reply for a question naming nothing, so it is
`allowed` even though an example shows it.
"""

from __future__ import annotations

from dataclasses import dataclass

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from prompts.echo import EchoGuard, normalise
from prompts.structured import ReplyShape, json_object

EMPTY_REPLY = '{"sources": [], "days": [], "from": null, "to": null}'
# The 1.5B model writes JSON's null as a string ("from": "null"); these mean no date, not a bad one.
_NO_DATE = frozenset({"", "null", "none", "n/a"})

SYSTEM = (
    "You read a question and write down which publications and which publication dates it restricts the "
    "search to, so that only matching articles are searched.\n\n"
    "Rules:\n"
    "1. sources: every publication the question names, spelled exactly as in the list of available "
    "sources; none named or none in the list: an empty list.\n"
    "2. days: every date the question gives as the day an article was published or reported, as "
    "YYYY-MM-DD; none: an empty list.\n"
    "3. from and to: only when the question bounds the dates, as YYYY-MM-DD, both inclusive. Published "
    "after or since a date: from is that date. Before or until a date: to is that date. Between two dates: "
    "from the first to the second. In a month: its first and its last day. Otherwise null.\n"
    "4. Only what the question states; never guess a source or a date from the topic.\n\n"
    "Examples:\n"
    "Question: Did the article by The Copper Valley Courier on March 4, 2021 and the one on March 9, 2021 "
    "give the same cause for the harbour bridge closure?\n"
    '{"sources": ["The Copper Valley Courier"], "days": ["2021-03-04", "2021-03-09"], "from": null, '
    '"to": null}\n'
    "Question: Do Orbit Wire Weekly and the Lantern Street Journal agree on the cause of the outage?\n"
    '{"sources": ["Orbit Wire Weekly", "Lantern Street Journal"], "days": [], "from": null, "to": null}\n'
    "Question: Which chess club won the regional final, according to articles published between June 1, "
    "2021 and June 20, 2021?\n"
    '{"sources": [], "days": [], "from": "2021-06-01", "to": "2021-06-20"}\n'
    "Question: What is the boiling point of water at sea level?\n"
    f"{EMPTY_REPLY}\n\n"
    "Reply with the JSON object only."
)

GUARD = EchoGuard(own_text=(SYSTEM,), allowed=frozenset({normalise(EMPTY_REPLY)}))

# The reply's shape for structured output: the object the prompt asks for, its four keys and no other
_DATE = {"type": ["string", "null"]}
REPLY = ReplyShape(
    "metadata_filter",
    {
        "type": "object",
        "properties": {
            "sources": {"type": "array", "items": {"type": "string"}},
            "days": {"type": "array", "items": {"type": "string"}},
            "from": _DATE,
            "to": _DATE,
        },
        "required": ["sources", "days", "from", "to"],
        "additionalProperties": False,
    },
)


def messages(question: str, sources: list[str]) -> list[BaseMessage]:
    """The system text, then the index's sources (one per line) and the question."""
    listed = "\n".join(f"- {source}" for source in sources) or "(none)"
    return [
        SystemMessage(SYSTEM),
        HumanMessage(f"Available sources:\n{listed}\n\nQuestion: {question}\nJSON object:"),
    ]


@dataclass(frozen=True)
class ExtractedFilter:
    """What the reply said, unchecked: source names as written and dates as strings (the node validates
    them against the index)."""

    sources: tuple[str, ...] = ()
    date_from: str | None = None
    date_to: str | None = None
    days: tuple[str, ...] = ()


def parse(text: str, structured: bool = False) -> tuple[ExtractedFilter | None, list[str]]:
    """(the reply's filter, notes on what was wrong with it); None when nothing in it is usable.

    A `structured` reply (asked for REPLY) is read as that object when it is one; when it is not, the
    object is looked for as in any reply, noted (prompts.structured.UNREAD). Each defect has one outcome,
    named in the notes the node records in `fallbacks`:
    - no JSON object, or one that does not parse (cut off, Mongo operators written as Python, nested too
      deep or a number too long for the decoder): None, so the node falls back to the source matcher;
    - text around the object: ignored, the first object is read;
    - `sources` or `days` a single string: read as a one-item list; not a list or a string: empty, noted;
      items that are not non-empty strings: dropped, noted; no `days` key (the earlier three-key form):
      no days;
    - a date that is not a string or null (a number, a dict): no date, noted (parsing the string itself is
      the node's, which knows the accepted formats); the strings "null" and "none": no date, as meant.
    """
    data, notes = json_object(text, REPLY, structured)
    if data is None:
        return None, notes
    sources = _strings(data, "sources", notes)
    days = tuple(day for day in _strings(data, "days", notes) if day.lower() not in _NO_DATE)
    dates: list[str | None] = []
    for key in ("from", "to"):
        value = data.get(key)
        if value is not None and not isinstance(value, str):
            notes.append(f"{key} was a {type(value).__name__}, not a date: no {key} date")
            value = None
        text = value.strip() if isinstance(value, str) else ""
        dates.append(None if text.lower() in _NO_DATE else text)
    return ExtractedFilter(sources, dates[0], dates[1], days), notes


def _strings(data: dict, key: str, notes: list[str]) -> tuple[str, ...]:
    """The reply's list under `key` as stripped non-empty strings, a lone string read as a list of one;
    what was dropped is noted."""
    raw = data.get(key) or []
    if isinstance(raw, str):
        raw = [raw]
    if not isinstance(raw, list):
        notes.append(f"{key} was a {type(raw).__name__}, not a list: no {key}")
        return ()
    items = tuple(item.strip() for item in raw if isinstance(item, str) and item.strip())
    if len(items) < len(raw):
        notes.append(f"{len(raw) - len(items)} item(s) of {key} that are not strings dropped")
    return items
