"""The shortening step with the real embedded LLM: fed a reader's sentence (our own examples, no
benchmark's), the generator copies out the span that answers the question; fed an answer to a choice
question that names neither option, it chooses one."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import AIMessage

from evals.metrics import exact_match
from nodes.generate import checked_refusal, shortened
from prompts import answer
from stores.evidence import Evidence
from tests.two_hop import COMPARISON


def passage(text: str, title: str) -> Evidence:
    return Evidence(
        id=f"{title}#0",
        doc_id=title,
        title=title,
        text=text,
        score=1.0,
        char_start=0,
        char_end=len(text),
        hop=1,
    )


CASES = [
    (
        "Where did the cardinal go for the conclave?",
        "Cardinal Ronzalli left Venice in 1958 for the conclave in Rome, where he was elected.",
        "Ronzalli left Venice for the conclave in Rome",
        "Rome",
    ),
    (
        "When did the bridge reopen?",
        "After repairs lasting two years, the Harbour Bridge reopened on 4 March 1931.",
        "The Harbour Bridge reopened after two years of repairs on 4 March 1931",
        "4 March 1931",
    ),
    (
        "Which instrument did the band's founder play?",
        "The Marble Keys were founded by Ana Ruiz, who played the cello in every recording.",
        "Ana Ruiz, the founder, played the cello in every recording",
        "cello",
    ),
]


@pytest.mark.llm
@pytest.mark.parametrize(("question", "text", "sentence", "span"), CASES)
def test_the_real_model_copies_the_span_out_of_its_sentence(
    services: Any, question: str, text: str, sentence: str, span: str
) -> None:
    conversation = [*answer.messages(question, [passage(text, "doc")]), AIMessage(sentence)]
    update = shortened(services.llm, question, conversation, sentence)
    assert update["answer_shortening"] == "model" and update["answer_sentence"] == sentence
    assert exact_match(update["answer"], [span]) == 1.0, update


@pytest.mark.llm
def test_the_real_model_asked_for_one_of_two_options_names_one(services: Any) -> None:
    """The answer a choice question drew from the 1.5B model on benchmark questions of this shape: the
    person the comparison goes through (the director), not one of the two films. With no passage to tell
    which film is his (none read here), the generator is asked; what is pinned is that its answer is then
    one of the two. Which one is a guess here, as nothing read says which film is hers; the director's name
    could never be right (with the films' own passages the rule answers without the model: test_answers)."""
    question = "Which film has the director who died first, The Quiet Harbour or Northern Lights Over Marn?"
    read = [passage("Ilse Varga (1890 - 1952) and Tomas Brandt (1895 - 1979) directed films.", "Directors")]
    conversation = [*answer.messages(question, read), AIMessage("Ilse Varga")]
    update = shortened(services.llm, question, conversation, "Ilse Varga", read)
    assert update.get("answer") in ("The Quiet Harbour", "Northern Lights Over Marn"), update
    assert (update["answer_sentence"], update["answer_shortening"]) == ("Ilse Varga", "choice")


# ---- the refusal check with the real model: our own comparison, its two facts in two passages

GARDEN = passage(
    "The Orsen Botanical Garden was founded in 1872 by the physician Mara Orsen.", "Orsen Garden"
)
OBSERVATORY = passage("The Halloway Observatory was founded in 1894 on a hill outside Marn.", "Halloway")


def refused_over(evidence: list[Evidence]) -> list[Any]:
    """The reader's conversation over `evidence` (unanswerable on), its refusal as the reply."""
    return [*answer.messages(COMPARISON, evidence, unanswerable=True), AIMessage(answer.UNANSWERABLE)]


@pytest.mark.llm
def test_the_real_model_overturns_a_refusal_when_both_sides_are_stated(services: Any) -> None:
    update = checked_refusal(services.llm, refused_over([GARDEN, OBSERVATORY]), max_tokens=32)
    assert update["refusal_check"]["verdict"] == "stated", update
    assert len(update["refusal_check"]["facts"]) >= 2, update  # one fact a side of the comparison
    assert update["answer_outcome"] == "checked", update
    # then cut to its span, as final_answer does with any answer
    span = shortened(services.llm, COMPARISON, update["conversation"], update["answer"]).get("answer")
    assert exact_match(span or update["answer"], ["yes"]) == 1.0, (span, update)


@pytest.mark.llm
def test_the_real_model_keeps_a_refusal_when_one_side_is_missing(services: Any) -> None:
    update = checked_refusal(services.llm, refused_over([GARDEN]), max_tokens=32)
    assert update["refusal_check"]["verdict"] == "missing", update
    assert "answer" not in update and "answer_outcome" not in update


LIBRARY = passage(
    "The Varnholt Library opened in 1820. Its reading hall was added in 1902 by Celia Dunmore, who was born"
    " in Ostrel.",
    "Varnholt Library",
)


@pytest.mark.llm
@pytest.mark.parametrize(
    ("question", "said", "word"),
    [
        ("Did the Varnholt Library open in the nineteenth century?", "1820", "yes"),
        ("Was the designer of the Varnholt Library's reading hall born in Marn?", "Ostrel", "no"),
    ],
)
def test_the_real_model_asked_yes_or_no_answers_with_the_word(
    services: Any, question: str, said: str, word: str
) -> None:
    """A yes-no question answered with neither word (the 1.5B model gave "Positive" and "No inconsistency"
    to MultiHop-RAG's "Between ..., was there ...?"): asked in the same conversation, the generator names
    the word the passage supports. On harder ones (comparing two founding years) it was right in 6 of 8 of
    our own examples, whichever way it was asked (docs/evaluation.md), against none for an answer that is
    neither word."""
    conversation = [*answer.messages(question, [LIBRARY]), AIMessage(said)]
    update = shortened(services.llm, question, conversation, said)
    assert (update.get("answer_sentence"), update.get("answer_shortening")) == (said, "choice"), update
    assert exact_match(update["answer"], [word]) == 1.0, update
