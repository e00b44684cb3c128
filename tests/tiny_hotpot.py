"""A tiny HotpotQA-format dataset written by the tests that evaluate over a stub LLM: six two-hop questions
over twelve short paragraphs, in the official distractor layout the loader reads."""

from __future__ import annotations

import json
from pathlib import Path

FILE = "hotpot_dev_distractor_v1.json"

# (question, answer, [(title, sentences), (title, sentences)])
QUESTIONS = [
    (
        "Which river flows through the city where the Museum of Lanterns stands?",
        "the Vell",
        [
            ("Museum of Lanterns", ["The Museum of Lanterns stands in Orvik.", "It opened in 1911."]),
            ("Orvik", ["Orvik is a harbour city.", "The river Vell flows through Orvik."]),
        ],
    ),
    (
        "Who founded the company that built the Kestrel glider?",
        "Ada Marrow",
        [
            ("Kestrel glider", ["The Kestrel glider was built by Halden Aero.", "It first flew in 1932."]),
            ("Halden Aero", ["Halden Aero was founded by Ada Marrow.", "It closed in 1960."]),
        ],
    ),
    (
        "In which year was the author of Salt Roads born?",
        "1874",
        [
            ("Salt Roads", ["Salt Roads is a novel by Ilse Varga.", "It tells of traders."]),
            ("Ilse Varga", ["Ilse Varga was born in 1874.", "She wrote six novels."]),
        ],
    ),
    (
        "What instrument did the teacher of Tomas Reyl play?",
        "the cello",
        [
            ("Tomas Reyl", ["Tomas Reyl studied under Marta Oskar.", "He composed songs."]),
            ("Marta Oskar", ["Marta Oskar played the cello.", "She taught in Brno."]),
        ],
    ),
    (
        "Which country is the island where Fennel Lighthouse stands part of?",
        "Norland",
        [
            ("Fennel Lighthouse", ["Fennel Lighthouse stands on the island of Skarra.", "It is white."]),
            ("Skarra", ["Skarra is an island of Norland.", "Few people live there."]),
        ],
    ),
    (
        "What is the capital of the province where Lake Duma lies?",
        "Tessin",
        [
            ("Lake Duma", ["Lake Duma lies in the province of Garr.", "It is deep."]),
            ("Garr", ["Garr is a province whose capital is Tessin.", "It grows wheat."]),
        ],
    ),
]


def write(folder: Path) -> Path:
    """Write the dataset into `folder` (the --data folder of `hopgraph eval --dataset hotpotqa`)."""
    folder.mkdir(parents=True, exist_ok=True)
    records = [
        {
            "_id": f"tiny{i}",
            "question": question,
            "answer": answer,
            "type": "bridge",
            "level": "easy",
            "supporting_facts": [[title, 0] for title, _ in paragraphs],
            "context": [[title, sentences] for title, sentences in paragraphs],
        }
        for i, (question, answer, paragraphs) in enumerate(QUESTIONS)
    ]
    (folder / FILE).write_text(json.dumps(records), encoding="utf-8")
    return folder


def question_in(prompt: str) -> str | None:
    """The dataset question a prompt asks about, if any (the reader's prompt ends with it)."""
    return next((question for question, _, _ in QUESTIONS if question in prompt), None)


def answer(prompt: str) -> str:
    """The gold answer to the question in `prompt`: what a stub LLM replies, so scores are known."""
    asked = question_in(prompt)
    return next((gold for question, gold, _ in QUESTIONS if question == asked), "unknown")
