"""Question writer (QuOTE, and BiQOG's question nodes): the questions a chunk answers, written at index time.

Layout for llama.cpp's KV reuse: the instructions (identical for every chunk) first, then the chunk, then the
one line that asks for the count. The instructions name no topic and show no example question a small
model could copy into every chunk's list.

A 1.5B model does not keep to a format, so `parse` reads what it writes by fixed rules and counts what each
rule did; the counts are summed over a build and reported (`hopgraph index` prints them, the manifest keeps
them), so a prompt or model change that makes the output worse shows in the numbers.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from prompts.echo import EchoGuard, normalise
from prompts.passages import DATA_RULE, chunk_passage, chunk_prompt_version
from prompts.structured import ReplyShape

SYSTEM = (
    "You read a passage and write questions that the passage itself answers. Each question must make sense "
    "on its own to someone who has not seen the passage: name the people, organisations, places, products "
    "and dates it is about instead of writing 'the passage', 'the article', 'he' or 'it'. Ask about "
    "different facts of the passage, one fact per question. Write one question per line and nothing else. "
    f"{DATA_RULE}"
)

TEMPLATE = "{passage}\n\nWrite {count} questions this passage answers."

GUARD = EchoGuard(own_text=(SYSTEM,))

# The reply's shape for structured output: the prompt's lines, one string each (a grammar cannot say "one per
# line" as surely as an array does; the prompt keeps its wording either way). Read as any such array; asked
# for as exactly the count the call wants (`reply_shape`): held to at least one string, the 1.5B model
# closed most arrays after one or two (2026-11-29, docs/configuration.md). ASKED is that request with its
# count left open: its version names the rule in an index's identity.
REPLY = ReplyShape("questions", {"type": "array", "items": {"type": "string", "minLength": 1}, "minItems": 1})
ASKED = ReplyShape(REPLY.name, {**REPLY.schema, "minItems": "count", "maxItems": "count"})


def reply_shape(count: int) -> ReplyShape:
    """The shape a call asking for `count` questions asks for: an array of exactly `count` strings."""
    return ReplyShape(ASKED.name, {**ASKED.schema, "minItems": count, "maxItems": count})


# Which prompt wrote an index's questions: part of the writer's identity, so a reworded prompt builds anew.
VERSION = chunk_prompt_version(SYSTEM, TEMPLATE)

# The parser's counts, in the order they are reported. `kept` and the drops (from `not_a_question` on) add
# up to the lines read; `renumbered` and `question_mark_added` say how many kept questions were repaired.
OUTCOMES = (
    "kept",
    "renumbered",  # a list marker ("1.", "2)", "-", "Q3:") taken off a kept question
    "question_mark_added",  # a line that opens like a question but lacks its "?"
    "structured_unread",  # a structured reply that is not an array of strings: read line by line (per reply)
    "not_a_question",  # neither a "?" nor a question's opening word: a heading, an answer, a remark
    "duplicate",  # the same words as an earlier question of the chunk
    "copied_from_chunk",  # a run of the chunk's own text, not a question about it
    "too_short",  # fewer than three words
    "beyond_count",  # more questions than asked for: the first ones kept
    "empty_reply",  # a reply with no text at all (or an echo the gateway blanked)
)
REPAIRS = ("renumbered", "question_mark_added")  # kept questions the parser repaired
DROPS = OUTCOMES[OUTCOMES.index("not_a_question") :]  # lines the parser did not keep

_MARKER = re.compile(r"^\s*(?:(?:q(?:uestion)?\s*)?\d+\s*[.):\-]|[-*\u2022]|q(?:uestion)?\s*:)\s*", re.I)
_OPENERS = frozenset(
    (
        *("who", "whom", "whose", "what", "which", "when", "where", "why", "how"),
        *("is", "are", "was", "were", "do", "does", "did", "can", "could", "will", "would", "should"),
        *("has", "have", "had", "in", "on", "at", "for", "from", "by", "to", "of", "according"),
    )
)
_MIN_WORDS = 3
_COPY_WORDS = 8  # a kept line of at least this many words found verbatim in the chunk is a copy


def messages(title: str, text: str, count: int) -> list[BaseMessage]:
    """Instructions, then the chunk (title and text), then the count asked for: stable first, varying last."""
    return [
        SystemMessage(SYSTEM),
        HumanMessage(TEMPLATE.format(passage=chunk_passage(title, text), count=count)),
    ]


def max_tokens(count: int) -> int:
    """Room for `count` questions of up to about 40 tokens each: a cut-off last line is dropped or kept by
    the same rules as any other."""
    return 40 * count


@dataclass
class ParsedQuestions:
    """The questions kept from one reply, in the order written, and what each parsing rule did."""

    questions: list[str] = field(default_factory=list)
    counts: Counter[str] = field(default_factory=Counter)


def _lines(text: str) -> list[str]:
    """Candidate questions: the reply's lines, a line holding several questions split after each "?"."""
    pieces: list[str] = []
    for line in text.splitlines():
        pieces.extend(piece for piece in re.split(r"(?<=\?)\s+", line.strip()) if piece.strip())
    return pieces


def parse(reply: str, chunk_text: str, count: int, structured: bool = False) -> ParsedQuestions:
    """The questions in a question writer's reply, by these rules (each counted under its OUTCOMES name).
    A `structured` reply (asked for `reply_shape(count)`) gives its array's strings as the lines (however
    many: the rules below cut what is beyond the count); one that is not an array of strings is read line
    by line as any reply (`structured_unread`). Then, line by line:

    - list markers ("1.", "2)", "- ", "* ", "Q3:", "Question 4:") are taken off;
    - a line without "?" that opens with a question word gets one; any other line without "?" is dropped;
    - a question of fewer than three words is dropped;
    - a line of eight or more words that is the chunk's own text is dropped (the chunk copied back);
    - a question asked twice (same words, case and punctuation aside) is kept once;
    - beyond `count` questions, the rest are dropped;
    - an empty reply keeps nothing and is counted once.
    """
    parsed = ParsedQuestions()
    shaped = REPLY.read(reply) if structured else None
    if structured and shaped is None:
        parsed.counts["structured_unread"] += 1
    candidates = _lines("\n".join(shaped) if shaped is not None else reply)
    if not candidates:
        parsed.counts["empty_reply"] += 1
        return parsed
    chunk_words = normalise(chunk_text)
    seen: set[str] = set()
    for line in candidates:
        unmarked = _MARKER.sub("", line, count=1).strip().strip('"').strip()
        words = normalise(unmarked)
        if not unmarked.endswith("?"):
            if "?" in unmarked or not words or words.split()[0] not in _OPENERS:
                parsed.counts["not_a_question"] += 1
                continue
            unmarked = unmarked.rstrip(".!:;, ") + "?"
            question_mark_added = True
        else:
            question_mark_added = False
        if len(words.split()) < _MIN_WORDS:
            parsed.counts["too_short"] += 1
        elif len(words.split()) >= _COPY_WORDS and f" {words} " in f" {chunk_words} ":
            parsed.counts["copied_from_chunk"] += 1
        elif words in seen:
            parsed.counts["duplicate"] += 1
        elif len(parsed.questions) >= count:
            parsed.counts["beyond_count"] += 1
        else:
            seen.add(words)
            parsed.questions.append(unmarked)
            parsed.counts["kept"] += 1
            repairs = {
                "renumbered": _MARKER.match(line) is not None,
                "question_mark_added": question_mark_added,
            }
            parsed.counts.update(repair for repair, made in repairs.items() if made)
    return parsed
