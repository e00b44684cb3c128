"""Prompt echoes: a reply that repeats the prompt's own instructions or examples instead of doing the task.

A 1.5B model copies what a prompt offers: given "a name, date, number ... or short phrase" it answered "a
name" for 7 of 50 MuSiQue questions, and it once returned the decomposer's format example as a
decomposition. Prompts no longer offer such text, but nothing stops a later prompt from doing it again, so
each prompt declares the text that is its own (system text, instruction, worked examples) as an
`EchoGuard`, and the LLM gateway checks every reply against it, retries once with a neutral nudge, and
counts the echoes in the state, so a regression shows in every evaluation report.

What counts as an echo (words compared after lower-casing and dropping punctuation):
- the whole reply is a run of words inside the prompt's own text (a copied phrase such as "a name"), or
- the reply contains a clause of three or more words of the prompt's own text (a copied example),
and in either case that run of words is not also in the task content (question, passages, earlier
answers), where it may be the right answer. Replies listed in `allowed` (Yes / No, a reader's no-answer
phrase) are never echoes.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from langchain_core.messages import BaseMessage

NUDGE = "Your reply repeated the instructions instead of following them. Reply again, following them."
# Clauses: runs of text between punctuation that ends a phrase (a copied example is one of these).
_CLAUSE_BREAK = re.compile(r"[.,;:!?()\[\]\"\n]|\s-\s|->")
_NON_WORD = re.compile(r"[^\w\s]")
_MIN_CLAUSE_WORDS = 3
_BREAK = "echoguardbreak"


def normalise(text: str) -> str:
    """Lower-cased words without punctuation, single-spaced (the unit echoes are compared in)."""
    return " ".join(_NON_WORD.sub(" ", text.lower()).split())


def _contains(haystack: str, needle: str) -> bool:
    """Whole-word containment of normalised texts."""
    return bool(needle) and f" {needle} " in f" {haystack} "


@dataclass(frozen=True)
class EchoGuard:
    """The text of a prompt that is the prompt's own, not the task's, and the replies that are fine anyway."""

    own_text: tuple[str, ...]
    allowed: frozenset[str] = frozenset()

    def clauses(self) -> list[str]:
        """Normalised clauses of three or more words from the prompt's own text."""
        pieces = (normalise(piece) for text in self.own_text for piece in _CLAUSE_BREAK.split(text))
        return [piece for piece in pieces if len(piece.split()) >= _MIN_CLAUSE_WORDS]

    def find(self, reply: str, messages: Sequence[BaseMessage]) -> str | None:
        """The echoed text if `reply` repeats the prompt's own text, else None."""
        said = normalise(reply)
        if not said or said in self.allowed:
            return None
        own_text = (*self.own_text, NUDGE)
        task = _task_text(messages, own_text)
        if any(_contains(normalise(text), said) for text in own_text) and not _contains(task, said):
            return said
        for clause in self.clauses():
            if _contains(said, clause) and not _contains(task, clause):
                return clause
        return None


def _task_text(messages: Sequence[BaseMessage], own_text: Iterable[str]) -> str:
    """Everything the messages say apart from the prompt's own text: the task content, normalised.

    The model's own earlier replies are left out (a retry's prompt holds the echo it is asked to correct),
    and the prompt's own texts are cut out with a break word in their place (so the text around them does
    not join into a run of words that was never there): what remains is the question, the passages and
    earlier answers.
    """
    text = "\n".join(str(m.content) for m in messages if m.type != "ai")
    for own in sorted(own_text, key=len, reverse=True):
        text = text.replace(own, f" {_BREAK} ")
    return normalise(text)
