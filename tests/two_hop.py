"""A small two-hop corpus written for the tests, and the questions the real-model tests ask of it.

`tests/fixtures/corpora/two_hop.jsonl`: 33 short paragraphs of an invented world (so the model cannot
answer from memory), each with a source and a date. Around each question sit paragraphs that share its
words but do not answer it, so the document that answers (the second hop) ranks outside the question's
top 10 (dense 11th, BM25 9th, hybrid 9th with MiniLM): a method reaches it only through what it learned
on the first hop (the bridge entity, Celia Dunmore, named only in the first document). Each paragraph is
one chunk at any chunk size, which keeps every prompt to a few hundred tokens and the tests fast.
"""

from __future__ import annotations

import json
from pathlib import Path

CORPUS = Path(__file__).parent / "fixtures" / "corpora" / "two_hop.jsonl"

# bridge: the library names its hall's designer, whose own paragraph names her birthplace. The second
# paragraph shares no title word with the question.
BRIDGE = "In which town was the designer of the Varnholt Library's reading hall born?"
BRIDGE_FIRST, BRIDGE_SECOND, BRIDGE_ANSWER = "varnholt-library", "celia-dunmore", "Ostrel"

# comparison: each side's founding year in its own paragraph, beside paragraphs on an Orsen museum and a
# Halloway school whose years would turn the answer
COMPARISON = "Was the Orsen Botanical Garden founded before the Halloway Observatory?"
COMPARISON_DOCS, COMPARISON_ANSWER = {"orsen-garden", "halloway-observatory"}, "yes"

# a source named in the question: two papers report the reopening differently (the Herald says 2019)
SOURCE_NAMED = "According to the Daily Lantern, in which year did the glass-domed reading hall reopen?"
SOURCE, SOURCE_DOC, SOURCE_ANSWER = "Daily Lantern", "gazette-reopening", "2021"


# the bridge question's two paragraphs and the one that shares most of its words (the Varnholt Museum, across
# the square, designed by another architect): a corpus small enough for the question-graph methods to be
# built at their index-time defaults in the suite, where a method that does not walk reaches the second
# paragraph only by retrieving every chunk
BRIDGE_TRIO = (BRIDGE_FIRST, BRIDGE_SECOND, "varnholt-museum")


def _records() -> dict[str, dict]:
    """The corpus file's records by id."""
    return {record["id"]: record for record in map(json.loads, CORPUS.read_text().splitlines())}


def write_subset(ids: tuple[str, ...], path: Path) -> Path:
    """The corpus's paragraphs `ids`, in that order, as a JSONL corpus at `path`."""
    records = _records()
    path.write_text("".join(json.dumps(records[id_]) + "\n" for id_ in ids), encoding="utf-8")
    return path


def source_of() -> dict[str, str]:
    """Each document's source, read from the corpus file (not restated here)."""
    return {id_: record["source"] for id_, record in _records().items()}


def hops_of(evidence: list[dict], doc_id: str) -> set[int]:
    """The hops at which a run's evidence holds `doc_id`."""
    return {item["hop"] for item in evidence if item["doc_id"] == doc_id}


def bridge_hops(evidence: list[dict]) -> tuple[set[int], set[int]]:
    """The hops at which a run's evidence holds the bridge question's first and second paragraphs: ({1},
    {2}) for a method that found the first by the question and the second only by its own next step."""
    return hops_of(evidence, BRIDGE_FIRST), hops_of(evidence, BRIDGE_SECOND)
