"""The question writer's parser on what a small model writes instead of a clean list: each rule, and its
count, on a reply made to break it."""

from __future__ import annotations

from prompts import questions
from prompts.questions import OUTCOMES, parse

CHUNK = (
    "Marie Curie was born in Warsaw in 1867. She moved to Paris in 1891 to study physics at the Sorbonne, "
    "where she later won two Nobel Prizes."
)


def test_numbered_and_bulleted_lists_lose_their_markers() -> None:
    reply = (
        "1. Where was Marie Curie born?\n2) When did Marie Curie move to Paris?\n- What did Curie study?\n"
        "* How many Nobel Prizes did Curie win?\nQ5: Where did Marie Curie study physics?\n"
        "Question 6: In which year was Marie Curie born?"
    )
    parsed = parse(reply, CHUNK, 10)
    assert parsed.questions == [
        "Where was Marie Curie born?",
        "When did Marie Curie move to Paris?",
        "What did Curie study?",
        "How many Nobel Prizes did Curie win?",
        "Where did Marie Curie study physics?",
        "In which year was Marie Curie born?",
    ]
    assert parsed.counts["kept"] == parsed.counts["renumbered"] == 6


def test_a_question_without_its_mark_gets_one_and_other_lines_are_dropped() -> None:
    reply = "Here are the questions:\nWhere was Marie Curie born\nWarsaw, 1867.\nWho won two Nobel Prizes."
    parsed = parse(reply, CHUNK, 10)
    assert parsed.questions == ["Where was Marie Curie born?", "Who won two Nobel Prizes?"]
    assert parsed.counts == {"kept": 2, "question_mark_added": 2, "not_a_question": 2}


def test_duplicates_short_lines_and_copies_of_the_chunk_are_dropped() -> None:
    reply = (
        "Where was Marie Curie born?\n2. where was marie curie born\nWho?\n"
        "She moved to Paris in 1891 to study physics at the Sorbonne?\nWhat did Curie win?"
    )
    parsed = parse(reply, CHUNK, 10)
    assert parsed.questions == ["Where was Marie Curie born?", "What did Curie win?"]
    assert parsed.counts["duplicate"] == 1
    assert parsed.counts["too_short"] == 1
    assert parsed.counts["copied_from_chunk"] == 1


def test_several_questions_on_one_line_are_split_and_the_count_is_kept() -> None:
    reply = "Where was Marie Curie born? When did she move to Paris? What did she study in Paris?"
    parsed = parse(reply, CHUNK, 2)
    assert parsed.questions == ["Where was Marie Curie born?", "When did she move to Paris?"]
    assert parsed.counts["beyond_count"] == 1


def test_an_empty_reply_keeps_nothing_and_is_counted() -> None:
    for reply in ("", "  \n\n "):
        parsed = parse(reply, CHUNK, 10)
        assert parsed.questions == [] and dict(parsed.counts) == {"empty_reply": 1}


def test_every_count_the_parser_makes_is_a_reported_outcome() -> None:
    reply = "1. Where was Curie born\nWho?\nWhere was Curie born?\nNothing here\n" + "What is Warsaw? " * 3
    assert set(parse(reply, CHUNK, 1).counts) <= set(OUTCOMES)


def test_the_chunk_sits_between_the_stable_instructions_and_the_count() -> None:
    system, human = questions.messages("Curie", CHUNK, 7)
    assert system.content == questions.SYSTEM
    assert human.content.index(CHUNK) < human.content.index("Write 7 questions")
    assert human.content.rstrip().endswith("Write 7 questions this passage answers.")
