"""Answers the benchmarks can score: the echo guard, prompts with nothing to copy, the refusal-to-span rule,
and every parser's fallback. Scripted chat models here test wiring, never what a model would answer."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from langchain_core.messages import HumanMessage, SystemMessage

from graphs.chainrag.context import ChainRAGContext
from graphs.chainrag.steps import JudgeGathered
from nodes.context import RetrievalContext
from nodes.generate import Generate
from nodes.integrate import Integrate
from prompts import answer, decompose, integrate, metadata, reader, refusal_check, rewrite, summarize
from prompts.echo import EchoGuard
from prompts.structured import UNREAD
from stores.evidence import Evidence
from tests.scripted import scripted_gateway


def passage(text: str, doc: str = "d1") -> Evidence:
    return Evidence(
        id=f"{doc}#0", doc_id=doc, title=doc, text=text, score=1.0, char_start=0, char_end=1, hop=1
    )


EVIDENCE = [passage("The Eiffel Tower was designed by the company of Gustave Eiffel and opened in 1889.")]
QUESTION = "When did the Eiffel Tower open?"


@dataclass
class Runtime:
    """What a node reads from LangGraph's Runtime: the run's context."""

    context: object


# ---- the guard's detection rule


def test_a_reply_copied_from_the_instructions_is_an_echo() -> None:
    guard = EchoGuard(own_text=("Reply with the answer only: a name, date, number, or short phrase.",))
    messages = [HumanMessage(f"Question: {QUESTION}\n{guard.own_text[0]}")]
    assert guard.find("a name", messages) == "a name"
    assert guard.find("Short phrase.", messages) == "short phrase"


def test_a_copied_example_inside_a_longer_reply_is_an_echo() -> None:
    messages = [SystemMessage(decompose.SYSTEM), HumanMessage("Question: Where was the author of Dune born?")]
    copied = '["Who designed the Sydney Opera House?", "Where was the author of Dune born?"]'
    assert decompose.GUARD.find(copied, messages) == "who designed the sydney opera house"


def test_words_that_are_also_in_the_task_are_not_an_echo() -> None:
    guard = EchoGuard(own_text=("Reply with the answer only, in as few words as it takes.",))
    messages = [HumanMessage("Passages: The film 'As Few Words' came out in 1990.\nQuestion: Which film?")]
    assert guard.find("As Few Words", messages) is None
    assert guard.find("1889", [HumanMessage("opened in 1889")]) is None


def test_allowed_replies_and_empty_replies_are_not_echoes() -> None:
    messages = answer.messages("Is the tower in Paris?", EVIDENCE)
    assert answer.GUARD.find("Yes", messages) is None
    assert answer.GUARD.find("", messages) is None
    assert answer.GUARD.find("As briefly as possible.", messages) == "as briefly as possible"


# ---- the gateway retries an echo once, then blanks it


def test_an_echo_is_retried_once_with_the_nudge_and_counted() -> None:
    replies = iter(["just the answer", "1889"])
    gateway, model = scripted_gateway(lambda prompt: next(replies))
    reply = gateway.complete(
        "generator", answer.messages(QUESTION, EVIDENCE), max_tokens=8, guard=answer.GUARD
    )
    assert reply.text == "1889"
    assert (reply.usage["echoes"], reply.usage["calls"]) == (1, 2)
    assert len(model.prompts) == 2
    assert model.prompts[1].startswith(model.prompts[0])  # same prefix: llama.cpp reuses its KV cache
    assert "just the answer" in model.prompts[1] and "repeated the instructions" in model.prompts[1]


def test_an_echo_that_persists_comes_back_empty_and_counted_twice() -> None:
    gateway, model = scripted_gateway(lambda prompt: "Reply with just the answer.")
    reply = gateway.complete(
        "generator", answer.messages(QUESTION, EVIDENCE), max_tokens=8, guard=answer.GUARD
    )
    assert (reply.text, reply.usage["echoes"], reply.usage["calls"]) == ("", 2, 2)
    assert len(model.prompts) == 2


def test_without_an_echo_there_is_one_call() -> None:
    gateway, model = scripted_gateway(lambda prompt: "1889")
    reply = gateway.complete(
        "generator", answer.messages(QUESTION, EVIDENCE), max_tokens=8, guard=answer.GUARD
    )
    assert (reply.text, reply.usage["echoes"], reply.usage["calls"], len(model.prompts)) == ("1889", 0, 1, 1)


# ---- no prompt offers text a model could copy as its answer

# Fragments that earlier prompts offered and the 1.5B model copied, or that could pass as an answer.
COPYABLE = (
    "a name",
    "short phrase",
    "date, number",
    "yes/no",
    "acme",
    "who founded",
    "where was that person born",
    "a few words",
    "e.g. paris",
)


def rendered_prompts() -> dict[str, str]:
    steps = [("Who designed the tower?", "Gustave Eiffel"), ("When was he born?", None)]
    renders = {
        "answer": answer.messages(QUESTION, EVIDENCE),
        "answer, unanswerable": answer.messages(QUESTION, EVIDENCE, unanswerable=True),
        "integrate": integrate.messages(QUESTION, steps),
        "integrate, unanswerable": integrate.messages(QUESTION, steps, unanswerable=True),
        "reader judge": reader.judge_messages(EVIDENCE, QUESTION),
        "reader answer": reader.answer_messages(EVIDENCE, QUESTION, notes="On 'x': y"),
        "decompose": decompose.messages(QUESTION),
        "rewrite": rewrite.messages([("Who designed the tower?", "Gustave Eiffel")], "When was he born?"),
        "summarize": summarize.messages(EVIDENCE, QUESTION),
        "metadata": metadata.messages(QUESTION, ["TechCrunch", "The Verge"]),
    }
    text = {name: "\n".join(str(m.content) for m in msgs) for name, msgs in renders.items()}
    return {**text, "refusal nudge": answer.REFUSAL_NUDGE, "shorten": answer.shorten_request(QUESTION)}


@pytest.mark.parametrize("name", sorted(rendered_prompts()))
def test_no_prompt_offers_copyable_answer_text(name: str) -> None:
    text = rendered_prompts()[name].lower()
    offered = [fragment for fragment in COPYABLE if fragment in text]
    assert not offered, f"the {name} prompt offers {offered}"


def test_an_unanswered_sub_question_is_shown_without_the_refusal_phrase() -> None:
    text = rendered_prompts()["integrate"]
    assert "2. When was he born? -> ?" in text and text.endswith("Answer:")
    assert answer.UNANSWERABLE.lower() not in text.lower()


# ---- answers: cleaning, refusals, the refusal-to-span rule


@pytest.mark.parametrize(
    ("reply", "cleaned"),
    [("Answer: 1889.", "1889"), ("\n  Paris\nbecause ...", "Paris"), ("Final answer: U.S.", "U.S"), ("", "")],
)
def test_clean_trims_only_the_label_and_trailing_punctuation(reply: str, cleaned: str) -> None:
    assert answer.clean(reply) == cleaned


@pytest.mark.parametrize(
    "text", ["Insufficient information.", "no answer.", "Unknown", "", "The passages do not say", "N/A"]
)
def test_refusals_are_recognised(text: str) -> None:
    assert answer.is_refusal(text)


@pytest.mark.parametrize("text", ["Unknown Pleasures", "No Doubt", "1889", "no", "yes", "Nobody Knows"])
def test_answers_are_not_refusals(text: str) -> None:
    assert not answer.is_refusal(text)


def test_a_refusal_with_evidence_is_asked_again_for_the_best_span() -> None:
    replies = iter(["Insufficient information.", "1889"])
    gateway, model = scripted_gateway(lambda prompt: next(replies))
    out = Generate(gateway)({"question": QUESTION, "evidence": EVIDENCE}, Runtime(RetrievalContext()))
    assert (out["answer"], out["answer_outcome"]) == ("1889", "best_span")
    assert answer.REFUSAL_NUDGE in model.prompts[1] and len(out["usage"]) == 2


def test_a_second_refusal_leaves_the_answer_empty_and_says_so() -> None:
    gateway, _ = scripted_gateway(lambda prompt: "Not mentioned.")
    out = Generate(gateway)({"question": QUESTION, "evidence": EVIDENCE}, Runtime(RetrievalContext()))
    assert (out["answer"], out["answer_outcome"]) == ("", "refused")


def test_a_method_that_decides_unanswerability_keeps_the_refusal() -> None:
    gateway, model = scripted_gateway(lambda prompt: "Insufficient information.")
    context = RetrievalContext(unanswerable=True, refusal_check=False)
    out = Generate(gateway)({"question": QUESTION, "evidence": EVIDENCE}, Runtime(context))
    assert (out["answer"], out["answer_outcome"]) == ("Insufficient information", "unanswerable")
    assert len(model.prompts) == 1 and answer.UNANSWERABLE in model.prompts[0]
    assert "refusal_check" not in out


def test_best_last_shows_the_best_passage_beside_the_question_and_keeps_the_read_order() -> None:
    evidence = [passage("Opened in 1889.", "Eiffel Tower"), passage("Built of iron.", "Iron")]
    gateway, model = scripted_gateway(lambda prompt: "1889")
    state = {"question": QUESTION, "evidence": evidence}
    default = Generate(gateway)(state, Runtime(RetrievalContext()))
    reversed_ = Generate(gateway)(state, Runtime(RetrievalContext(passage_order="best_last")))
    first, second = model.prompts
    assert first.index("Eiffel Tower") < first.index("Iron")
    assert second.index("Iron") < second.index("Eiffel Tower") < second.index(QUESTION)
    assert "[2] <passage>\nEiffel Tower" in second
    assert default["read"] == reversed_["read"] == ["Eiffel Tower#0", "Iron#0"]


# ---- the refusal check (unanswerable on): a refusal stands only when a fact the question needs is missing

COMPARISON = "Did the Eiffel Tower open before the Statue of Liberty was dedicated?"


def checked(check_reply: str, question: str = COMPARISON) -> tuple[dict, list[str]]:
    """Generate with `unanswerable` on (the check on by default): the reader refuses, the check replies
    `check_reply`, and any later call (the shortening) replies "yes"."""
    replies = iter(["Insufficient information.", check_reply])
    gateway, model = scripted_gateway(lambda prompt: next(replies, "yes"))
    out = Generate(gateway)(
        {"question": question, "evidence": EVIDENCE}, Runtime(RetrievalContext(unanswerable=True))
    )
    return out, model.prompts


def test_a_refusal_whose_facts_are_all_stated_is_answered_by_the_check() -> None:
    out, prompts = checked(
        '{"facts": [{"fact": "Eiffel Tower opened 1889", "stated": true}, '
        '{"fact": "Statue of Liberty dedicated 1886", "stated": true}], "answer": "No."}'
    )
    assert (out["answer"], out["answer_outcome"]) == ("No", "checked")
    assert out["refusal_check"] == {
        "verdict": "stated",
        "facts": [
            {"fact": "Eiffel Tower opened 1889", "stated": True},
            {"fact": "Statue of Liberty dedicated 1886", "stated": True},
        ],
    }
    # the check is a turn of the reader's conversation: its passages, question and refusal come first
    assert len(prompts) == 2 and prompts[1].startswith(prompts[0])
    assert refusal_check.CHECK in prompts[1] and "Insufficient information." in prompts[1]
    assert len(out["usage"]) == 2 and "fallbacks" not in out


def test_a_refusal_with_a_fact_missing_stands() -> None:
    out, prompts = checked(
        'Here: {"facts": [{"fact": "Eiffel Tower opened 1889", "stated": true}, '
        '{"fact": "Statue of Liberty dedicated", "stated": "false"}], "answer": ""} done'
    )
    assert (out["answer"], out["answer_outcome"]) == ("Insufficient information", "unanswerable")
    assert out["refusal_check"]["verdict"] == "missing"
    assert out["refusal_check"]["facts"][1] == {"fact": "Statue of Liberty dedicated", "stated": False}
    assert len(prompts) == 2 and "fallbacks" not in out


@pytest.mark.parametrize(
    ("reply", "note"),
    [
        ("", "no JSON object"),
        ("Insufficient information.", "no JSON object"),
        ('{"facts": [{"fact": "opened", "stated": tru', "broken JSON object"),
        ('{"answer": "1889"}', "no list of facts"),
        ('{"facts": [], "answer": "1889"}', "no usable fact"),
        ('{"facts": [{"fact": "", "stated": true}, "opened"], "answer": "1889"}', "no usable fact"),
        ("[1, 2]", "no JSON object"),
    ],
)
def test_a_check_reply_without_a_fact_list_keeps_the_refusal_and_says_so(reply: str, note: str) -> None:
    out, _ = checked(reply)
    assert (out["answer"], out["answer_outcome"]) == ("Insufficient information", "unanswerable")
    assert out["refusal_check"] == {"verdict": "unread", "facts": []}
    assert f"refusal check: {note}" in out["fallbacks"]
    assert out["fallbacks"][-1] == "refusal check: reply unread: the refusal kept"


@pytest.mark.parametrize("given", ['""', '"Insufficient information."', "null"])
@pytest.mark.parametrize("best", ["1889", "Not stated."])
def test_every_fact_stated_but_no_answer_asks_once_for_the_best_answer(given: str, best: str) -> None:
    replies = iter(
        [
            "Insufficient information.",
            f'{{"facts": [{{"fact": "opened 1889", "stated": true}}], "answer": {given}}}',
            best,
        ]
    )
    gateway, model = scripted_gateway(lambda prompt: next(replies))
    out = Generate(gateway)(
        {"question": QUESTION, "evidence": EVIDENCE}, Runtime(RetrievalContext(unanswerable=True))
    )
    assert out["refusal_check"]["verdict"] == "stated" and len(model.prompts) == 3
    assert model.prompts[2].rstrip().endswith(answer.REFUSAL_NUDGE) and model.prompts[2].startswith(
        model.prompts[1]
    )
    if best == "1889":
        assert (out["answer"], out["answer_outcome"]) == ("1889", "checked")
        assert out["fallbacks"][-1] == (
            "refusal check: every fact stated but no answer given: asked for the best answer, which answered"
        )
    else:
        assert (out["answer"], out["answer_outcome"]) == ("Insufficient information", "unanswerable")
        assert out["fallbacks"][-1].endswith("which refused again: the refusal kept")


def test_the_check_reads_its_shape_first_and_notes_a_structured_reply_it_could_not_read() -> None:
    shaped = '{"facts": [{"fact": "opened 1889", "stated": true}], "answer": "1889"}'
    found, notes = refusal_check.parse(shaped, structured=True)
    assert found is not None and found.answer == "1889" and found.all_stated and notes == []
    found, notes = refusal_check.parse(f"Sure! {shaped}", structured=True)
    assert found is not None and notes == [UNREAD]


def test_without_evidence_no_check_is_asked() -> None:
    gateway, model = scripted_gateway(lambda prompt: "Insufficient information.")
    out = Generate(gateway)(
        {"question": QUESTION, "evidence": []}, Runtime(RetrievalContext(unanswerable=True))
    )
    assert out["answer_outcome"] == "unanswerable" and len(model.prompts) == 1


def test_without_evidence_a_refusal_is_not_retried() -> None:
    gateway, model = scripted_gateway(lambda prompt: "Unknown")
    out = Generate(gateway)({"question": QUESTION, "evidence": []}, Runtime(RetrievalContext()))
    assert (out["answer"], out["answer_outcome"], len(model.prompts)) == ("", "refused", 1)


# ---- answers as short as the benchmarks score them: the rules, and the model asked as the last resort


@pytest.mark.parametrize(
    ("question", "reply", "expected"),
    [
        ("Were Scott Derrickson and Ed Wood of the same nationality?", "Yes, both are American.", "yes"),
        ("Did the film win an award?", "No. It was nominated only.", "no"),
        ("Is the Nile or the Amazon longer?", "Yes, the Nile", None),  # a choice, not yes / no
        ("Who directed Jaws?", "Yes Man director", None),  # not a yes-no question
        ("Between the first report and the second, was there a change?", "No, none at all.", "no"),
    ],
)
def test_a_yes_no_question_is_answered_by_the_word_its_reply_opens_with(
    question: str, reply: str, expected: str | None
) -> None:
    assert answer.yes_no(question, reply) == expected


@pytest.mark.parametrize(
    ("question", "asks"),
    [
        ("Did the tower open in 1889?", True),
        ("Between the first report on the museum and the second, was there a change in its hours?", True),
        ("After the harbour reopened, did the ferry resume its route?", True),
        ("According to the Lantern, has the hall, rebuilt in 1990, reopened?", True),
        ("Between the two reports, was the museum or the library reopened first?", False),  # a choice
        ("In what region of the country that holds the harbour, is the museum located?", False),
        ("In which town, built on the river, can you see the tower?", False),
        ("After the storm, which bridge reopened?", False),
        ("The library, founded in 1820, is in which town?", False),  # no leading phrase: a subject
        ("Between the two reports on the museum?", False),  # no main clause
    ],
)
def test_a_yes_no_question_asks_it_at_the_start_or_after_a_leading_phrase(question: str, asks: bool) -> None:
    assert answer.is_yes_no_question(question) is asks


@pytest.mark.parametrize(
    ("question", "reply", "expected"),
    [
        (
            "What government position was held by the woman who portrayed Corliss Archer in Kiss and Tell?",
            "The woman who portrayed Corliss Archer in the film Kiss and Tell was Shirley Temple",
            "Shirley Temple",
        ),
        (
            "In which city is the headquarters of the company?",
            "The headquarters of the company is in Paris.",
            "in Paris",
        ),
        ("Where did Ronzalli go for the conclave?", "Ronzalli left Venice for the conclave in Rome", None),
        (
            "Who wrote the novel?",
            "The novel was written over many years by a man who lived in a small town",
            None,
        ),  # too long after the verb to be a span
    ],
)
def test_a_reply_restating_the_question_is_cut_after_its_verb(
    question: str, reply: str, expected: str | None
) -> None:
    assert answer.after_restatement(question, reply) == expected


LONG = "Ronzalli left Venice for the conclave in Rome"
ASKED = "Where did Ronzalli go for the conclave?"


def test_a_long_reply_is_cut_to_the_words_the_model_says_answer_and_the_sentence_kept() -> None:
    replies = iter([LONG, "Rome"])
    gateway, model = scripted_gateway(lambda prompt: next(replies))
    out = Generate(gateway)({"question": ASKED, "evidence": EVIDENCE}, Runtime(RetrievalContext()))
    assert (out["answer"], out["answer_sentence"], out["answer_shortening"]) == ("Rome", LONG, "model")
    assert out["answer_outcome"] == "answered" and len(out["usage"]) == 2
    # the same conversation continued (its KV prefix reused): the first prompt, the reply, the question
    first, second = model.prompts
    assert second.startswith(first) and second.endswith(f"{LONG}\n{answer.shorten_request(ASKED)}")


@pytest.mark.parametrize("shortened", ["Insufficient information.", "", LONG + " in 1958"])
def test_an_unusable_shortening_keeps_the_reply_and_says_so(shortened: str) -> None:
    replies = iter([LONG, shortened])
    gateway, _ = scripted_gateway(lambda prompt: next(replies))
    out = Generate(gateway)({"question": ASKED, "evidence": EVIDENCE}, Runtime(RetrievalContext()))
    assert (out["answer"], out["answer_shortening"]) == (LONG, "kept")
    assert out["fallbacks"][0].startswith("shorten: asked which words answer")


def test_rules_cut_without_a_call_and_short_answers_are_left_alone() -> None:
    for question, reply, expected, how in [
        ("Did the tower open in 1889?", "Yes, it opened in 1889.", "yes", "yes_no"),
        (
            "Which company designed the Eiffel Tower?",
            "The company that designed the Eiffel Tower was Gustave Eiffel's",
            "Gustave Eiffel's",
            "restatement",
        ),
    ]:
        gateway, model = scripted_gateway(lambda prompt, reply=reply: reply)
        out = Generate(gateway)({"question": question, "evidence": EVIDENCE}, Runtime(RetrievalContext()))
        assert (out["answer"], out["answer_shortening"], len(model.prompts)) == (expected, how, 1)
    gateway, model = scripted_gateway(lambda prompt: "Gustave Eiffel's company")
    out = Generate(gateway)({"question": QUESTION, "evidence": EVIDENCE}, Runtime(RetrievalContext()))
    assert out["answer"] == "Gustave Eiffel's company" and "answer_sentence" not in out
    assert len(model.prompts) == 1


YES_NO = "Between the two reports on the museum, was there a change in its opening hours?"


def test_a_yes_no_answer_that_is_neither_word_is_asked_for_one() -> None:
    """Scripted generator (wiring): the reader answers a yes-no question with a word that is neither, then,
    asked in the same conversation, with the word."""
    replies = iter(["Longer hours", "Yes."])
    gateway, model = scripted_gateway(lambda prompt: next(replies))
    out = Generate(gateway)({"question": YES_NO, "evidence": EVIDENCE}, Runtime(RetrievalContext()))
    assert (out["answer"], out["answer_sentence"]) == ("yes", "Longer hours")
    assert out["answer_shortening"] == "choice"
    assert len(out["usage"]) == 2 and "fallbacks" not in out
    first, second = model.prompts
    assert second.startswith(first) and second.endswith(f"Longer hours\n{answer.yes_no_request()}")


def test_a_span_the_model_copies_out_is_cut_to_the_yes_or_no_it_opens_with() -> None:
    sentence = "The museum kept the hours it had announced in the first report, without any change"
    replies = iter([sentence, "No change"])
    gateway, model = scripted_gateway(lambda prompt: next(replies))
    out = Generate(gateway)({"question": YES_NO, "evidence": EVIDENCE}, Runtime(RetrievalContext()))
    assert (out["answer"], out["answer_sentence"], out["answer_shortening"]) == ("no", sentence, "yes_no")
    assert len(model.prompts) == 2


@pytest.mark.parametrize("said", ["Longer hours", "Maybe", ""])
def test_a_yes_no_answer_still_neither_word_when_asked_is_kept_and_says_so(said: str) -> None:
    replies = iter(["Longer hours", said])
    gateway, _ = scripted_gateway(lambda prompt: next(replies))
    out = Generate(gateway)({"question": YES_NO, "evidence": EVIDENCE}, Runtime(RetrievalContext()))
    assert out["answer"] == "Longer hours" and "answer_shortening" not in out
    assert out["fallbacks"] == [
        "choice: the answer was neither yes nor no; asked for one, the model replied "
        f"{said!r}: the answer kept"
    ]


def test_a_yes_or_no_answer_is_not_asked_again() -> None:
    gateway, model = scripted_gateway(lambda prompt: "No")
    out = Generate(gateway)({"question": YES_NO, "evidence": EVIDENCE}, Runtime(RetrievalContext()))
    assert out["answer"] == "No" and len(model.prompts) == 1


CHOICE = "Which library opened first, the Varnholt Library or the Ostrel Reading Room?"
CHOICE_OPTIONS = ("the Varnholt Library", "the Ostrel Reading Room")


@pytest.mark.parametrize(
    ("question", "options"),
    [
        (CHOICE, CHOICE_OPTIONS),
        ("Who was born first, Celia Dunmore or Anton Reyes?", ("Celia Dunmore", "Anton Reyes")),
        ("Is the library or the museum older?", None),  # opens with a verb: can be answered yes or no
        ("Does the first article say the fund grew, or did it shrink?", None),
        ("Which film, by its director's age, came first, Heads Up, Tails Down or Sarah?", None),  # 2 commas
        ("Which is older, the library built by the guild of the northern river towns or the museum?", None),
        ("Which library opened first?", None),
    ],
)
def test_a_choice_question_offers_the_two_options_it_words(question: str, options: tuple | None) -> None:
    assert answer.choices(question) == options


def test_a_reply_names_an_option_by_its_words_or_by_part_of_them() -> None:
    options = ("Emma Bull", "Virginia Woolf")
    assert answer.named_options("Adeline Virginia Woolf", options) == ["Virginia Woolf"]
    assert answer.named_options("Woolf.", options) == ["Virginia Woolf"]
    assert answer.named_options("Emma Bull and Virginia Woolf", options) == list(options)
    assert answer.named_options("Leonard Woolfson", options) == []  # a word, not a part of one
    assert answer.named_options("", options) == []


def test_an_answer_naming_neither_option_is_replaced_by_the_one_the_model_chooses() -> None:
    """Scripted generator (wiring): the reader answers with the person the comparison went through, then,
    asked for one of the options in the same conversation, names one."""
    replies = iter(["Celia Dunmore", "The Ostrel Reading Room."])
    gateway, model = scripted_gateway(lambda prompt: next(replies))
    out = Generate(gateway)({"question": CHOICE, "evidence": EVIDENCE}, Runtime(RetrievalContext()))
    assert (out["answer"], out["answer_sentence"], out["answer_shortening"]) == (
        "the Ostrel Reading Room",
        "Celia Dunmore",
        "choice",
    )
    assert len(out["usage"]) == 2 and "fallbacks" not in out
    first, second = model.prompts
    assert second.startswith(first)
    assert second.endswith(f"Celia Dunmore\n{answer.choice_request(CHOICE_OPTIONS)}")
    assert "the Varnholt Library or the Ostrel Reading Room" in answer.choice_request(CHOICE_OPTIONS)


def test_an_answer_naming_neither_option_becomes_the_option_whose_passage_names_it() -> None:
    """No second call: the passage titled by one option names the answer (the person the comparison went
    through); the other option's passage does not."""
    read = [
        Evidence(
            **{
                **EVIDENCE[0],
                "id": "a#0",
                "title": "Ostrel Reading Room",
                "text": "Designed by Celia Dunmore.",
            }
        ),
        Evidence(
            **{**EVIDENCE[0], "id": "b#0", "title": "Varnholt Library", "text": "Built by the guild in 1820."}
        ),
        Evidence(
            **{**EVIDENCE[0], "id": "c#0", "title": "Celia Dunmore", "text": "Celia Dunmore, an architect."}
        ),
    ]
    gateway, model = scripted_gateway(lambda prompt: "Celia Dunmore")
    out = Generate(gateway)({"question": CHOICE, "evidence": read}, Runtime(RetrievalContext()))
    assert (out["answer"], out["answer_sentence"], out["answer_shortening"]) == (
        "the Ostrel Reading Room",
        "Celia Dunmore",
        "choice",
    )
    assert len(model.prompts) == 1


def test_a_passage_naming_the_answer_under_both_options_or_neither_decides_nothing() -> None:
    options = ("the Varnholt Library", "the Ostrel Reading Room")
    both = [
        Evidence(**{**EVIDENCE[0], "title": "Varnholt Library", "text": "Its hall is by Celia Dunmore."}),
        Evidence(**{**EVIDENCE[0], "title": "Ostrel Reading Room", "text": "Celia Dunmore designed it."}),
    ]
    assert answer.option_of("Celia Dunmore", options, both) is None
    assert answer.option_of("Celia Dunmore", options, both[:1]) == "the Varnholt Library"
    assert answer.option_of("Anton Reyes", options, both) is None


@pytest.mark.parametrize(
    "chose", ["Celia Dunmore", "Both of them", "the Varnholt Library and the Ostrel Reading Room"]
)
def test_a_choice_naming_neither_or_both_options_keeps_the_answer_and_says_so(chose: str) -> None:
    replies = iter(["Celia Dunmore", chose])
    gateway, _ = scripted_gateway(lambda prompt: next(replies))
    out = Generate(gateway)({"question": CHOICE, "evidence": EVIDENCE}, Runtime(RetrievalContext()))
    assert out["answer"] == "Celia Dunmore" and "answer_shortening" not in out
    assert out["fallbacks"][0].startswith("choice: the answer named neither option")


def test_an_answer_naming_an_option_is_not_asked_again() -> None:
    gateway, model = scripted_gateway(lambda prompt: "Varnholt Library")
    out = Generate(gateway)({"question": CHOICE, "evidence": EVIDENCE}, Runtime(RetrievalContext()))
    assert out["answer"] == "Varnholt Library" and len(model.prompts) == 1


class FirstIsBest:
    """A reranker that keeps the gathered order (the refusal rule, not the ranking, is under test)."""

    def score(
        self, query: str, passages: list[str], vectors: object = None, lexical: object = None
    ) -> list[float]:
        return [float(-i) for i in range(len(passages))]


def test_ansint_refusal_is_answered_from_the_contexts() -> None:
    def reply(prompt: str) -> str:
        return "Insufficient information" if "Sub-questions and answers" in prompt else "1889"

    gateway, model = scripted_gateway(reply)
    state = {
        "question": QUESTION,
        "evidence": EVIDENCE,
        "solved": [
            {
                "asked": "q",
                "question": "q",
                "answer": "Insufficient information.",
                "answered": False,
                "read": [],
            }
        ],
    }
    out = Integrate(gateway, FirstIsBest(), ChainRAGContext)(state, Runtime(ChainRAGContext(word_limit=300)))
    assert (out["answer"], out["answer_outcome"]) == ("1889", "answered")
    assert out["fallbacks"] == ["integrate: the sub-answers gave no answer; answered from the contexts"]
    assert "Passages:" in model.prompts[1] and len(out["usage"]) == 2


def test_ansint_refusal_under_unanswerable_is_read_from_the_contexts_and_checked() -> None:
    check = '{"facts": [{"fact": "Eiffel Tower opened 1889", "stated": true}], "answer": "1889"}'

    def reply(prompt: str) -> str:
        if prompt.rstrip().endswith(refusal_check.CHECK):
            return check
        return "Insufficient information"

    gateway, model = scripted_gateway(reply)
    state = {
        "question": QUESTION,
        "evidence": EVIDENCE,
        "solved": [{"asked": "q", "question": "q", "answer": "", "answered": False, "read": []}],
    }
    context = ChainRAGContext(word_limit=300, unanswerable=True)
    out = Integrate(gateway, FirstIsBest(), ChainRAGContext)(state, Runtime(context))
    assert (out["answer"], out["answer_outcome"]) == ("1889", "checked")
    assert out["refusal_check"]["verdict"] == "stated" and len(model.prompts) == 3
    assert out["fallbacks"] == ["integrate: the sub-answers gave no answer; answered from the contexts"]
    off = Integrate(gateway, FirstIsBest(), ChainRAGContext)(
        state, Runtime(ChainRAGContext(word_limit=300, unanswerable=True, refusal_check=False))
    )
    assert off["answer_outcome"] == "unanswerable" and len(model.prompts) == 4


# ---- parser fallbacks, recorded


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        ("", "no JSON array"),
        ("[Who designed it?]", "broken JSON array"),
        ("[]", "empty JSON array"),
        ("[1 2]", "broken JSON array"),
    ],
)
def test_decomposition_falls_back_to_the_question(reply: str, reason: str) -> None:
    subs, fallback = decompose.parse(reply, QUESTION, 4)
    assert subs == [QUESTION] and fallback is not None and fallback.startswith(reason)


def test_decomposition_keeps_at_most_the_limit() -> None:
    assert decompose.parse('Sure: ["a?", "b?", "c?"]', QUESTION, 2) == (
        ["a?", "b?"],
        "3 sub-questions: the first 2 kept",
    )


def test_an_empty_rewrite_keeps_the_sub_question() -> None:
    assert rewrite.parse("  \n", "When was he born?") == (
        "When was he born?",
        "empty rewrite: the sub-question as decomposed",
    )
    assert rewrite.parse('Rewritten: "When was Gustave Eiffel born?"', "x") == (
        "When was Gustave Eiffel born?",
        None,
    )


@pytest.mark.parametrize(
    ("reply", "verdict"), [("Yes.", True), ("**No**", False), ("Maybe", None), ("", None)]
)
def test_judge_verdicts(reply: str, verdict: bool | None) -> None:
    assert reader.verdict(reply) is verdict


def test_a_judge_reply_without_yes_or_no_is_taken_as_no_and_recorded() -> None:
    gateway, _ = scripted_gateway(lambda prompt: "The passages")
    out = JudgeGathered(gateway)({"question": QUESTION, "query": QUESTION, "gathered": EVIDENCE})
    assert out["stop"] == ""
    assert out["fallbacks"] == ["judge: no Yes/No in 'The passages': taken as No"]
