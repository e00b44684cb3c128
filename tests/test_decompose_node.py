"""The shared decomposer with a scripted chat model: ChainRAG's prompt pinned byte for byte, the count rule
query decomposition states, and the defined outcome of every decomposition a small model gets wrong (each
recorded in `fallbacks`). Scripted replies test what the node does with a reply, never what a model says."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from langgraph.runtime import Runtime

from graphs.chainrag.context import ChainRAGContext
from graphs.decomposition.context import QueryDecompositionContext
from graphs.naive_qd.context import NaiveQDContext
from nodes.context import DecompositionContext
from nodes.decompose import Decompose
from prompts import decompose
from tests.scripted import ScriptedChatModel, scripted_gateway

QUESTION = "Where was the director of Jaws born, and when was Jaws released?"
SUBS = ["Who directed Jaws?", "Where was Steven Spielberg born?", "When was Jaws released?"]
# sha256 of the decomposer's system text as every measured ChainRAG run sent it (commit e506715)
CHAINRAG_SYSTEM_SHA256 = "08ac6fa0d09ed089e4af6bb51018b4a79fdf6eca1b98ccbffa6af9721c583bf5"


def replies(*texts: str) -> Callable[[str], str]:
    """Replies in order, the last one repeated."""
    queue: Iterator[str] = iter(texts)
    last = [texts[-1]]

    def reply(prompt: str) -> str:
        last[0] = next(queue, last[0])
        return last[0]

    return reply


def decompose_with(
    reply: Callable[[str], str], context: DecompositionContext | None, question: str = QUESTION
) -> tuple[dict[str, Any], ScriptedChatModel]:
    llm, model = scripted_gateway(reply)
    schema = type(context) if context is not None else DecompositionContext
    update = Decompose(llm, schema)({"question": question}, Runtime(context=context))
    return update, model


def array(items: list[str]) -> str:
    return json.dumps(items)


# ---- prompts: ChainRAG's unchanged, the count rule for query decomposition


def test_chainrags_prompt_is_byte_for_byte_what_every_measured_run_sent() -> None:
    assert hashlib.sha256(decompose.SYSTEM.encode()).hexdigest() == CHAINRAG_SYSTEM_SHA256
    for context in (DecompositionContext(), ChainRAGContext(), NaiveQDContext()):
        assert context.stated_count() is None
        _, model = decompose_with(replies(array(SUBS[:2])), context)
        assert model.prompts == [f"{decompose.SYSTEM}\nQuestion: {QUESTION}\nJSON array:"]
    assert decompose.guard(None) is decompose.GUARD


def test_an_exact_count_replaces_the_split_only_when_needed_and_usually_two_rules() -> None:
    text = decompose.system_text(QueryDecompositionContext(max_sub_questions=4).stated_count())
    assert "Always write exactly 4 sub-questions." in text
    assert "usually two" not in text and "otherwise return the question itself" not in text
    assert "JSON array of strings" in text and "Were Ada Lovelace and Alan Turing both British?" in text


def test_an_up_to_count_keeps_chainrags_rules_and_states_the_cap_instead_of_usually_two() -> None:
    context = QueryDecompositionContext(max_sub_questions=5, count="up_to")
    text = decompose.system_text(context.stated_count())
    assert text == decompose.SYSTEM.replace(
        "Keep the list short: usually two sub-questions at most.", "Write 5 sub-questions at most."
    )


def test_the_count_reaches_the_decomposer_and_its_reply_budget() -> None:
    _, model = decompose_with(replies(array(SUBS)), QueryDecompositionContext(max_sub_questions=3))
    assert "Always write exactly 3 sub-questions." in model.prompts[0]
    assert model.prompts[0].endswith(f"Question: {QUESTION}\nJSON array of exactly 3 sub-questions:")


# ---- a well-formed decomposition


def test_a_decomposition_of_n_items_is_taken_as_it_is_and_counted() -> None:
    update, model = decompose_with(replies(array(SUBS)), QueryDecompositionContext(max_sub_questions=3))
    assert update["sub_questions"] == SUBS
    assert update["fallbacks"] == [] and update["stats"] == {"sub_questions": 3.0}
    assert len(model.prompts) == 1 and update["usage"][0]["role"] == "decomposer"


# ---- every malformed decomposition has one outcome, recorded


def test_more_than_n_items_keep_the_first_n() -> None:
    update, model = decompose_with(
        replies(array([*SUBS, "Who wrote the novel Jaws?"])), QueryDecompositionContext(max_sub_questions=3)
    )
    assert update["sub_questions"] == SUBS and len(model.prompts) == 1
    assert update["fallbacks"] == ["decompose: 4 sub-questions: the first 3 kept"]


def test_fewer_than_exactly_n_items_are_kept_and_recorded() -> None:
    update, model = decompose_with(replies(array(SUBS[:2])), QueryDecompositionContext(max_sub_questions=3))
    assert update["sub_questions"] == SUBS[:2] and len(model.prompts) == 1
    assert update["fallbacks"] == ["decompose: 2 of 3 sub-questions: kept"]
    assert update["stats"] == {"sub_questions": 2.0}


def test_fewer_than_n_items_are_fine_when_the_count_is_up_to_n() -> None:
    context = QueryDecompositionContext(max_sub_questions=3, count="up_to")
    update, model = decompose_with(replies(array(SUBS[:2])), context)
    assert update["sub_questions"] == SUBS[:2] and update["fallbacks"] == [] and len(model.prompts) == 1


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        ("[Who directed Jaws?, When was Jaws released?]", "broken JSON array"),  # nothing quoted
        ('["", " "]', "empty JSON array"),
        ("", "no JSON array"),  # also what the gateway leaves of a reply it blanked
        ("Who directed Jaws? Then where was he born?", "no JSON array"),
    ],
)
def test_broken_json_gives_the_question_itself(reply: str, reason: str) -> None:
    update, _ = decompose_with(replies(reply), QueryDecompositionContext(max_sub_questions=3, count="up_to"))
    assert update["sub_questions"] == [QUESTION]
    assert update["fallbacks"] == [f"decompose: {reason}: the question itself"]

    exactly, _ = decompose_with(replies(reply), QueryDecompositionContext(max_sub_questions=3))
    assert exactly["sub_questions"] == [QUESTION]
    assert exactly["fallbacks"] == [
        f"decompose: {reason}: the question itself",
        "decompose: 1 of 3 sub-questions: kept",
    ]


@pytest.mark.parametrize(
    "reply",
    [
        '["Who directed Jaws?", "Where was Steven Spielberg born?", "When was',  # cut off at the token limit
        '["Who directed Jaws?", "Where was Steven Spielberg born?",]',  # a trailing comma
    ],
)
def test_an_array_that_does_not_parse_gives_its_complete_quoted_items(reply: str) -> None:
    context = QueryDecompositionContext(max_sub_questions=3, count="up_to")
    update, _ = decompose_with(replies(reply), context)
    assert update["sub_questions"] == SUBS[:2]
    assert update["fallbacks"] == ["decompose: broken JSON array: its 2 quoted item(s) kept"]


def test_text_after_the_array_is_not_read() -> None:
    """The 1.5B model repeated its one-item array nine times; the first array is the decomposition."""
    reply = "\n".join([array(SUBS[:2])] * 5) + '\n["Who directed Ja'
    update, _ = decompose_with(replies(reply), QueryDecompositionContext(max_sub_questions=3, count="up_to"))
    assert update["sub_questions"] == SUBS[:2] and update["fallbacks"] == []


def test_an_item_repeating_the_question_is_dropped_beside_others_and_kept_alone() -> None:
    context = QueryDecompositionContext(max_sub_questions=3, count="up_to")
    repeated = QUESTION.lower().rstrip("?")  # the same words, differently written
    update, _ = decompose_with(replies(array([repeated, *SUBS[:2]])), context)
    assert update["sub_questions"] == SUBS[:2]
    assert update["fallbacks"] == ["decompose: an item repeating the question dropped"]

    alone, _ = decompose_with(replies(array([QUESTION])), context)  # ChainRAG's rule 1: no split needed
    assert alone["sub_questions"] == [QUESTION] and alone["fallbacks"] == []


def test_an_item_asked_twice_is_kept_once() -> None:
    context = QueryDecompositionContext(max_sub_questions=3, count="up_to")
    update, _ = decompose_with(replies(array([SUBS[0], SUBS[1], "who directed JAWS"])), context)
    assert update["sub_questions"] == SUBS[:2]
    assert update["fallbacks"] == ["decompose: 1 repeated sub-question(s) dropped"]


def rule_examples() -> list[str]:
    """Every quoted example in the decomposer's rules: the example questions and their sub-questions."""
    return sorted(set(re.findall(r'"([^"]+)"', decompose.SYSTEM)))


@pytest.mark.parametrize("example", rule_examples())
@pytest.mark.parametrize(
    "context",
    [ChainRAGContext(), QueryDecompositionContext(max_sub_questions=2, count="up_to")],
    ids=["chainrag", "up_to"],
)
def test_an_item_copied_from_the_rules_examples_is_caught(
    example: str, context: DecompositionContext
) -> None:
    """The gateway's guard finds a copied example beside a real sub-question, asks once more, blanks the
    second copy; the decomposer then falls back to the question itself and says why."""
    copied = array([SUBS[0], example])
    update, model = decompose_with(replies(copied), context)
    assert update["sub_questions"] == [QUESTION]
    assert update["fallbacks"] == [
        "decompose: the reply repeated the prompt's own rules or examples: the question itself"
    ]
    assert update["usage"][0]["echoes"] == 2 and len(model.prompts) == 2


def test_a_copied_example_corrected_on_the_retry_is_used() -> None:
    update, _ = decompose_with(
        replies(array([SUBS[0], "Who designed the Sydney Opera House?"]), array(SUBS[:2])), ChainRAGContext()
    )
    assert update["sub_questions"] == SUBS[:2] and update["fallbacks"] == []
    assert update["usage"][0]["echoes"] == 1


def test_an_example_copied_under_an_exact_count_is_caught_by_that_prompts_guard() -> None:
    copied = array([SUBS[0], "When did the Bay Bridge open?"])
    update, model = decompose_with(replies(copied), QueryDecompositionContext(max_sub_questions=2))
    assert "JSON array of exactly 2 sub-questions:" in model.prompts[0] and len(model.prompts) == 2
    assert update["sub_questions"] == [QUESTION]
    assert update["fallbacks"] == [
        "decompose: the reply repeated the prompt's own rules or examples: the question itself",
        "decompose: 1 of 2 sub-questions: kept",
    ]


def test_an_examples_words_in_the_users_own_question_are_not_an_echo() -> None:
    question = "Who designed the Sydney Opera House, and when did it open?"
    subs = ["Who designed the Sydney Opera House?", "When did the Sydney Opera House open?"]
    update, model = decompose_with(replies(array(subs)), ChainRAGContext(), question=question)
    assert update["sub_questions"] == subs and update["usage"][0]["echoes"] == 0 and len(model.prompts) == 1
