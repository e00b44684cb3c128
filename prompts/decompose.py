"""Decomposer (ChainRAG, the paper's Figure 8): break a multi-hop question into minimal sub-questions.

Keeps every guideline of the paper's prompt — decompose only when several distinct facts must be
connected; one essential fact per sub-question; no redundancy; impact questions split into the thing and
its impact; comparisons ask the compared attribute of each item separately, with a final comparison only
when complex; parallel / sequential / comparative progressions; usually two sub-questions at most — and
its output format, a JSON array of strings. Wording and examples are ours; the examples sit inside the
rules, on topics of their own, and the output format is described, not shown as a copyable array (the
1.5B model once returned the format example "Who founded Acme Corp?" as a decomposition). A later sub-question refers to
an earlier answer with a pronoun ("it", "that person"), which is exactly what the rewriting step resolves.

Query decomposition (seed 004 §2.4) fixes the number of sub-queries N, so those methods state a count
(`SubQuestionCount`) in the rules and again in the reply's cue: "at most N" replaces the usually-two rule;
"exactly N" also replaces the split-only-when-needed rule (a question needing fewer facts gets
sub-questions for further facts that help). Without a count the prompt is ChainRAG's, byte for byte: every
measured ChainRAG run used it, and the response cache keys on it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from prompts.echo import EchoGuard, normalise
from prompts.structured import UNREAD, ReplyShape

_AIM = "You split questions into the fewest sub-questions needed to answer them."
_SPLIT_WHEN_NEEDED = (
    "Split only when the question needs several separate facts that must be connected; otherwise return the "
    "question itself as the only item."
)
_SHARED_RULES = (
    "Each sub-question asks for one specific fact that is needed.",
    "No two sub-questions may ask for the same thing or overlap.",
    "For a question about the effect or importance of something, ask first what the thing or event was, then "
    "what its effect or importance was.",
    "For a comparison of two items, ask for the compared attribute of each item in its own sub-question; add "
    "a final sub-question that compares the two findings only when the comparison is not trivial.",
    "Use the order the facts depend on:\n"
    '   - parallel: independent facts, e.g. "Were Ada Lovelace and Alan Turing both British?" -> '
    '["What was Ada Lovelace\'s nationality?", "What was Alan Turing\'s nationality?"]\n'
    "   - sequential: each step uses the previous answer, referred to with a pronoun, e.g. "
    '"In which city was the architect of the Sydney Opera House born?" -> '
    '["Who designed the Sydney Opera House?", "In which city was he born?"]\n'
    '   - comparative: e.g. "Which opened first, the Golden Gate Bridge or the Bay Bridge?" -> '
    '["When did the Golden Gate Bridge open?", "When did the Bay Bridge open?"]',
)
_USUALLY_TWO = "Keep the list short: usually two sub-questions at most."
_OUTPUT = (
    "Output only a JSON array of strings, one sub-question per string. Every sub-question must be necessary "
    "and different from the others."
)

_EXACT_AIM = "You split questions into sub-questions whose answers together answer them."
_EXACT_OUTPUT = (
    "Output only a JSON array of strings, one sub-question per string, each different from the others."
)


def _system(aim: str, rules: tuple[str, ...], output: str) -> str:
    numbered = "\n".join(f"{i}. {rule}" for i, rule in enumerate(rules, 1))
    return f"{aim}\n\nRules:\n{numbered}\n\n{output}"


SYSTEM = _system(_AIM, (_SPLIT_WHEN_NEEDED, *_SHARED_RULES, _USUALLY_TWO), _OUTPUT)


@dataclass(frozen=True)
class SubQuestionCount:
    """The count a decomposition prompt states: exactly `n` sub-questions, or at most `n`."""

    n: int
    exactly: bool

    def phrase(self) -> str:
        return "one sub-question" if self.n == 1 else f"{self.n} sub-questions"


def system_text(count: SubQuestionCount | None = None) -> str:
    """ChainRAG's system text without a count; with one, the same rules with the count stated."""
    if count is None:
        return SYSTEM
    if not count.exactly:
        return _system(
            _AIM, (_SPLIT_WHEN_NEEDED, *_SHARED_RULES, f"Write {count.phrase()} at most."), _OUTPUT
        )
    always = (
        f"Always write exactly {count.phrase()}. When the question needs fewer facts than that, ask for "
        "further facts that help to find or confirm its answer."
    )
    return _system(_EXACT_AIM, (always, *_SHARED_RULES), _EXACT_OUTPUT)


def cue(count: SubQuestionCount | None = None) -> str:
    """The reply's start. With a count it repeats the count where a small model heeds it most, right before
    its reply: with "exactly 3" in the rules alone the 1.5B model answered five questions outside the
    evaluated ones (MultiHop-RAG, HotpotQA) with 2, 2, 3, at least 5, and 3 items; with the count in the
    cue as well, with 3 each (of nine such questions, 7 kept 3 distinct sub-questions after parsing)."""
    if count is None:
        return "JSON array:"
    return f"JSON array of {'exactly' if count.exactly else 'at most'} {count.phrase()}:"


def guard(count: SubQuestionCount | None = None) -> EchoGuard:
    """The prompt's own text for this count: its rules (with their worked examples) and its cue."""
    if count is None:
        return GUARD
    return EchoGuard(own_text=(system_text(count), cue(count)))


GUARD = EchoGuard(own_text=(SYSTEM,))

# The reply's shape as the prompt states it, for structured output: a non-empty array of questions
REPLY = ReplyShape(
    "sub_questions", {"type": "array", "items": {"type": "string", "minLength": 1}, "minItems": 1}
)


def messages(question: str, count: SubQuestionCount | None = None) -> list[BaseMessage]:
    return [SystemMessage(system_text(count)), HumanMessage(f"Question: {question}\n{cue(count)}")]


_QUOTED = re.compile(r'"((?:[^"\\]|\\.)*)"')


def _unquote(body: str) -> str:
    """A JSON string's body with its escapes resolved; as written when an escape is not JSON's."""
    try:
        return str(json.loads(f'"{body}"'))
    except json.JSONDecodeError:
        return body


def _array_items(text: str) -> tuple[list[str], str | None]:
    """The strings of the reply's first JSON array, and what was wrong with it (None: nothing).

    The array is read from its "[" to where it ends, so text after it is ignored (the 1.5B model wrote the
    same one-item array nine times over, a "[...]" search across them all reads broken JSON). An array that
    does not parse (cut off at the token limit, a trailing comma) gives its complete quoted strings; one
    nested too deep for the decoder ("[[[[..."), or holding a number too long to convert, is as broken.
    Items that are not strings (numbers, null, objects) are no sub-questions: dropped, and noted."""
    start = text.find("[")
    if start < 0:
        return [], "no JSON array"
    try:
        items, _ = json.JSONDecoder().raw_decode(text, start)
    except (ValueError, RecursionError):  # JSONDecodeError is a ValueError, as is a too-long integer
        strings = [item.strip() for item in map(_unquote, _QUOTED.findall(text, start)) if item.strip()]
        return (
            strings,
            f"broken JSON array: its {len(strings)} quoted item(s) kept" if strings else "broken JSON array",
        )
    strings = [item.strip() for item in items if isinstance(item, str) and item.strip()]
    others = sum(not isinstance(item, str) for item in items)
    if not strings:
        return [], "JSON array of no strings" if others else "empty JSON array"
    return strings, f"{others} item(s) that are not strings dropped" if others else None


def parse(text: str, question: str, limit: int, structured: bool = False) -> tuple[list[str], str | None]:
    """(sub-questions, fallback): the JSON array in the reply, cleaned, at most `limit` items (at least one).

    A `structured` reply (asked for REPLY) is read as that array when it is one; when it is not, the array
    is looked for as in any reply, and `fallback` says so (prompts.structured.UNREAD). Every defect has one
    outcome, named in `fallback` ("; "-joined when several) so the state records it:
    - no array, or one with no strings (empty, an echo the gateway blanked, unquoted items): the question
      itself as the only item;
    - an array that does not parse (cut off, a trailing comma): its complete quoted strings;
    - items that are not strings (numbers, null, objects): dropped;
    - an item asked twice (compared as lower-cased words): the later copy dropped;
    - an item repeating the question beside others: dropped, since its retrieval is the question's own and
      it answers nothing the others do not (alone, it is the decomposer's "no split needed");
    - more items than `limit`: the first `limit` kept (the decomposer lists the facts a question depends on
      first).
    """
    shaped = REPLY.read(text) if structured else None
    if shaped is not None:
        subs, problem = [item.strip() for item in shaped], None
    else:
        subs, problem = _array_items(text)
        problem = "; ".join(note for note in (UNREAD if structured else None, problem) if note) or None
    if not subs:
        return [question], f"{problem}: the question itself"
    notes = [problem] if problem else []
    seen: set[str] = set()
    unique: list[str] = []
    for sub in subs:
        if normalise(sub) not in seen:
            seen.add(normalise(sub))
            unique.append(sub)
    if len(unique) < len(subs):
        notes.append(f"{len(subs) - len(unique)} repeated sub-question(s) dropped")
    beside = [sub for sub in unique if normalise(sub) != normalise(question)]
    if beside and len(beside) < len(unique):
        notes.append("an item repeating the question dropped")
        unique = beside
    keep = max(1, limit)
    if len(unique) > keep:
        notes.append(f"{len(unique)} sub-questions: the first {keep} kept")
    return unique[:keep], "; ".join(notes) or None
