"""IR-CoT's in-context demonstrations: worked questions with their paragraphs and a full chain of thought,
shown to every model that writes a chain of thought (IR-CoT's reasoner, its CoT reader, Iter-RetGen).

The original (StonyBrookNLP/ircot) shows its reasoner hand-written examples, each with the gold supporting
paragraphs and one to three distractors among them, and a small model leans on them to keep the
one-fact-per-sentence form and the closing "So the answer is:". Ours are data (ircot_demonstrations.json),
built from dev questions of the shared HotpotQA and 2WikiMultihopQA slices, with short excerpts of their
gold paragraphs and one distractor each (short, so that two demonstrations and 15 paragraphs fit the
local model's 8,192-token context) and reasoning written by us.

They are taken from the END of each slice (HotpotQA records 280 and 285, 2Wiki dev_97 and dev_99), and
`evals.datasets` leaves every question listed here out of every benchmark it loads (by id within its
dataset and by question text in any), so no demonstration is ever an evaluated question and `--limit N`
still selects the same first N questions.

Order matters: `select(n)` takes the first n, so the default two are one bridge and one comparison
question, the two kinds HotpotQA and 2Wiki mostly ask.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

_DATA = Path(__file__).with_name("ircot_demonstrations.json")


@dataclass(frozen=True)
class DemoParagraph:
    title: str
    text: str
    gold: bool


@dataclass(frozen=True)
class Demonstration:
    """One worked example: a dev question, its paragraphs (gold and distractors, in the order shown) and
    the chain of thought, one sentence per step, the last one giving the answer."""

    dataset: str
    id: str
    question: str
    answer: str
    paragraphs: tuple[DemoParagraph, ...]
    reasoning: tuple[str, ...]


def _load() -> tuple[Demonstration, ...]:
    records = json.loads(_DATA.read_text(encoding="utf-8"))
    return tuple(
        Demonstration(
            dataset=record["dataset"],
            id=record["id"],
            question=record["question"],
            answer=record["answer"],
            paragraphs=tuple(DemoParagraph(**paragraph) for paragraph in record["paragraphs"]),
            reasoning=tuple(record["reasoning"]),
        )
        for record in records
    )


DEMONSTRATIONS: tuple[Demonstration, ...] = _load()

#: dataset name (as evals.datasets names it) -> ids of the questions the demonstrations were built from.
DEMONSTRATION_IDS: dict[str, frozenset[str]] = {
    dataset: frozenset(demo.id for demo in DEMONSTRATIONS if demo.dataset == dataset)
    for dataset in {demo.dataset for demo in DEMONSTRATIONS}
}
DEMONSTRATION_QUESTIONS: frozenset[str] = frozenset(demo.question for demo in DEMONSTRATIONS)


def select(count: int) -> tuple[Demonstration, ...]:
    """The first `count` demonstrations (0 or less: none, zero-shot; more than there are: all)."""
    return DEMONSTRATIONS[: max(0, count)]
