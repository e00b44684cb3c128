"""ChainRAG's LLM-facing nodes with a scripted chat model: rewrite trigger, rewrite, summary fallback,
decomposition parsing, the judge, and both integrations, CxtInt's cut at the reader's window among them
(wiring; the real-LLM run is in test_chainrag)."""

from __future__ import annotations

import pytest
from langgraph.runtime import Runtime

from graphs.chainrag.context import ChainRAGContext
from graphs.chainrag.steps import JudgeGathered, PrepareSubQuestion, needs_rewrite
from nodes.decompose import Decompose
from nodes.generate import follow_up_tokens
from nodes.integrate import Integrate, rerank, word_count
from nodes.llm import LLMGateway, RoleModel
from nodes.state import SubAnswer
from nodes.subanswer import AnswerSubQuestion, DecomposeInTurn
from nodes.window import estimated_tokens
from prompts import answer
from stores.evidence import Evidence
from tests.scripted import ScriptedChatModel, scripted_gateway


def evidence(i: int, text: str, hop: int = 1) -> Evidence:
    return Evidence(
        id=f"d#s{i}", doc_id="d", title="T", text=text, score=0.0, char_start=0, char_end=1, hop=hop
    )


class LengthReranker:
    """Deterministic scorer for tests: longer passages rank higher."""

    def score(
        self, query: str, passages: list[str], vectors: object = None, lexical: object = None
    ) -> list[float]:
        return [float(len(p)) for p in passages]


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("Where was he born?", True),
        ("What is its population?", True),
        ("Who founded that company?", True),
        ("When did they split up?", True),
        ("Which film did these actors share?", True),
        ("Who directed the film Jaws?", False),  # "the" is not a reference
        ("What is the capital of Theresa's country?", False),  # no whole-word match inside names
        ("Whose history is longer?", False),
    ],
)
def test_the_rewrite_trigger_is_a_deliberate_word_list(question: str, expected: bool) -> None:
    assert needs_rewrite(question) is expected


def test_decompose_node_starts_at_the_first_sub_question() -> None:
    llm, model = scripted_gateway(lambda p: '["Who directed Jaws?", "Where was he born?"]')
    question = {"question": "Where was the director of Jaws born?"}
    update = DecomposeInTurn(llm)(question, Runtime(context=None))
    assert update["sub_questions"] == ["Who directed Jaws?", "Where was he born?"] and update["step"] == 0
    assert "JSON array" in model.prompts[0] and update["usage"][0]["role"] == "decomposer"
    assert "step" not in Decompose(llm)(question, Runtime(context=None))  # the cursor is ChainRAG's


def state_after_first(answered: bool) -> dict:
    first = SubAnswer(
        asked="Who directed Jaws?",
        question="Who directed Jaws?",
        answer="Steven Spielberg" if answered else "Insufficient information.",
        answered=answered,
        read=["d#s1"],
    )
    return {
        "question": "Where was the director of Jaws born?",
        "sub_questions": ["Who directed Jaws?", "Where was he born?"],
        "step": 1,
        "solved": [first],
        "evidence": [evidence(1, "Jaws is a 1975 film directed by Steven Spielberg.")],
    }


def test_a_referring_sub_question_is_rewritten_with_the_earlier_answer() -> None:
    llm, model = scripted_gateway(lambda p: "Where was Steven Spielberg born?")
    update = PrepareSubQuestion(llm)(state_after_first(answered=True), Runtime(context=ChainRAGContext()))
    assert update["query"] == "Where was Steven Spielberg born?"
    assert "Q: Who directed Jaws?\nA: Steven Spielberg" in model.prompts[0]
    assert update["gathered"] == [] and update["stop"] == "" and update["notes"] == ""


def test_an_unanswered_earlier_sub_question_is_summarised_instead() -> None:
    llm, model = scripted_gateway(lambda p: "Jaws (1975) was directed by Steven Spielberg.")
    update = PrepareSubQuestion(llm)(state_after_first(answered=False), Runtime(context=ChainRAGContext()))
    assert update["query"] == "Where was he born?"  # nothing to put back, so no rewrite
    assert "Jaws is a 1975 film directed by Steven Spielberg." in model.prompts[0]  # its own context
    assert update["notes"] == "On 'Who directed Jaws?': Jaws (1975) was directed by Steven Spielberg."
    assert update["usage"][0]["role"] == "summarizer"


def test_the_summary_reads_what_its_sub_question_gathered_even_where_an_earlier_one_gathered_it_first() -> (
    None
):
    """`evidence` files a sentence two sub-questions gathered under the first (hop 1): the second's summary
    must still read it, and must not read what only the first gathered."""
    llm, model = scripted_gateway(lambda p: "Spielberg grew up in Ohio.")
    shared, own, other = (
        evidence(1, "Spielberg was born in Cincinnati."),
        evidence(3, "He grew up in Ohio.", 2),
        evidence(4, "Jaws was a 1975 film."),
    )
    state = {
        "question": "Where was the director of Jaws born, and what is its sequel?",
        "sub_questions": ["Who directed Jaws?", "Where was he born?", "What is the sequel of it?"],
        "step": 2,
        "solved": [
            SubAnswer(
                asked="a",
                question="Who directed Jaws?",
                answer="Spielberg",
                answered=True,
                read=["d#s1", "d#s4"],
            ),
            SubAnswer(
                asked="b", question="Where was he born?", answer="", answered=False, read=["d#s1", "d#s3"]
            ),
        ],
        "evidence": [shared, other, own],
    }
    update = PrepareSubQuestion(llm)(state, Runtime(context=ChainRAGContext()))
    [prompt] = model.prompts
    assert shared["text"] in prompt and own["text"] in prompt and other["text"] not in prompt
    assert update["notes"] == "On 'Where was he born?': Spielberg grew up in Ohio."


def test_a_sub_answer_records_the_passages_it_read() -> None:
    llm, _ = scripted_gateway(lambda p: "Cincinnati")
    gathered = [evidence(1, "Spielberg was born in Cincinnati."), evidence(2, "He grew up in Ohio.")]
    state = {
        "question": "q",
        "sub_questions": ["Where was he born?"],
        "query": "Where was he born?",
        "gathered": gathered,
    }
    update = AnswerSubQuestion(llm)(state, Runtime(context=ChainRAGContext()))
    assert update["solved"][0]["read"] == ["d#s1", "d#s2"] and update["evidence"] == gathered


@pytest.mark.parametrize("reply", ["", "  \n "])
def test_an_empty_summary_carries_no_note_and_is_recorded(reply: str) -> None:
    llm, _ = scripted_gateway(lambda p: reply)
    update = PrepareSubQuestion(llm)(state_after_first(answered=False), Runtime(context=ChainRAGContext()))
    assert update["query"] == "Where was he born?" and update["notes"] == ""
    assert update["fallbacks"] == [
        "prepare: sub-question 1: the summary was empty, so no notes are carried for it"
    ]
    assert update["usage"][0]["role"] == "summarizer"


@pytest.mark.parametrize("reply", ["Insufficient information.", "Unknown", "Not mentioned."])
def test_a_summary_that_only_declines_carries_no_note_and_is_recorded(reply: str) -> None:
    llm, _ = scripted_gateway(lambda p: reply)
    update = PrepareSubQuestion(llm)(state_after_first(answered=False), Runtime(context=ChainRAGContext()))
    assert update["query"] == "Where was he born?" and update["notes"] == ""
    assert update["fallbacks"] == [
        f"prepare: sub-question 1: the summary only declined ({reply!r}), so no notes are carried for it"
    ]


def test_a_longer_summary_that_opens_by_declining_is_kept() -> None:
    reply = "Not mentioned directly, but Jaws (1975) was directed by Steven Spielberg."
    llm, _ = scripted_gateway(lambda p: reply)
    update = PrepareSubQuestion(llm)(state_after_first(answered=False), Runtime(context=ChainRAGContext()))
    assert update["notes"] == f"On 'Who directed Jaws?': {reply}" and "fallbacks" not in update


def test_rewriting_can_be_ablated_and_is_skipped_without_a_reference() -> None:
    llm, model = scripted_gateway(lambda p: "never used")
    off = PrepareSubQuestion(llm)(state_after_first(True), Runtime(context=ChainRAGContext(rewrite=False)))
    assert off["query"] == "Where was he born?"
    plain = state_after_first(True) | {"sub_questions": ["Who directed Jaws?", "Where was Spielberg born?"]}
    assert (
        PrepareSubQuestion(llm)(plain, Runtime(context=ChainRAGContext()))["query"]
        == "Where was Spielberg born?"
    )
    assert model.prompts == []


@pytest.mark.parametrize(("reply", "stop"), [("Yes", "sufficient"), ("yes.", "sufficient"), ("No", "")])
def test_the_judge_reads_yes_or_no(reply: str, stop: str) -> None:
    llm, model = scripted_gateway(lambda p: reply)
    state = {"query": "Who directed Jaws?", "gathered": [evidence(1, "Jaws was directed by Spielberg.")]}
    assert JudgeGathered(llm)(state)["stop"] == stop
    assert model.prompts[0].index("Jaws was directed") < model.prompts[0].index(
        "Question: Who directed Jaws?"
    )


def solved_state() -> dict:
    return {
        "question": "Where was the director of Jaws born?",
        "solved": [
            SubAnswer(
                asked="a",
                question="Who directed Jaws?",
                answer="Steven Spielberg",
                answered=True,
                read=["d#s1"],
            ),
            SubAnswer(
                asked="b",
                question="Where was Steven Spielberg born?",
                answer="Cincinnati",
                answered=True,
                read=["d#s2"],
            ),
        ],
        "evidence": [evidence(1, "short"), evidence(2, "a much longer sentence about Cincinnati, Ohio", 2)],
    }


def test_answer_integration_uses_only_sub_questions_and_answers() -> None:
    llm, model = scripted_gateway(lambda p: "Cincinnati\nextra line")
    update = Integrate(llm, LengthReranker(), ChainRAGContext)(
        solved_state(), Runtime(context=ChainRAGContext())
    )
    assert update["answer"] == "Cincinnati"
    assert "2. Where was Steven Spielberg born? -> Cincinnati" in model.prompts[0]
    assert "Cincinnati, Ohio" not in model.prompts[0]


def refuse_when_offered(prompt: str) -> str:
    """A scripted integrator that refuses whenever the prompt offers the refusal."""
    return answer.UNANSWERABLE if answer.UNANSWERABLE in prompt else "Cincinnati"


def test_answer_integration_may_refuse_where_refusals_are_kept() -> None:
    """Under `unanswerable` (MultiHop-RAG's null queries) AnsInt is offered the reader's refusal, and with
    the refusal check off that refusal is the final answer: neither the contexts nor a check are read."""
    llm, model = scripted_gateway(refuse_when_offered)
    ctx = ChainRAGContext(unanswerable=True, refusal_check=False)
    update = Integrate(llm, LengthReranker(), ChainRAGContext)(solved_state(), Runtime(context=ctx))
    assert "2. Where was Steven Spielberg born? -> Cincinnati" in model.prompts[0]
    assert answer.is_refusal(update["answer"]) and update["answer_outcome"] == "unanswerable"
    assert len(model.prompts) == 1


def test_answer_integration_is_not_offered_a_refusal_otherwise() -> None:
    llm, model = scripted_gateway(refuse_when_offered)
    update = Integrate(llm, LengthReranker(), ChainRAGContext)(
        solved_state(), Runtime(context=ChainRAGContext(refusal_check=False))
    )
    assert answer.UNANSWERABLE not in model.prompts[0] and update["answer"] == "Cincinnati"


def test_context_integration_reads_every_item_past_the_word_limit_best_first() -> None:
    """CxtInt as the paper runs it: the word limit bounds each sub-question's expansion, not what CxtInt
    reads; every gathered item goes to the reader, in the reranker's order."""
    texts = {i: f"sentence {i} " + "word " * (10 + 7 * i) for i in (2, 0, 3, 1)}  # longer ranks higher
    state = {**solved_state(), "evidence": [evidence(i, text) for i, text in texts.items()]}
    ctx = ChainRAGContext(integration="contexts", word_limit=20)
    assert word_count(state["evidence"]) > 4 * ctx.word_limit
    llm, model = scripted_gateway(lambda p: "Cincinnati")
    update = Integrate(llm, LengthReranker(), ChainRAGContext)(state, Runtime(context=ctx))
    prompt = model.prompts[0]
    read = [prompt.index(f"sentence {i} ") for i in (3, 2, 1, 0)]  # all four, the longest first
    assert read == sorted(read) and "->" not in prompt
    assert update["stats"] == {"contexts_left_out": 0.0} and update["fallbacks"] == []


def test_context_integration_is_cut_where_the_prompt_would_pass_the_readers_window() -> None:
    """Evidence that would not fit the generator's window (a scripted chat model stated to hold 2,000
    tokens) is read best first up to where the prompt, with room for the reader's later turns, still fits;
    how much was left out is recorded for the report and the explorer."""
    items = [evidence(i, f"fact {i:02d} " + "about the harbour and its ferries " * 10) for i in range(40)]
    model = ScriptedChatModel(reply=lambda p: "Cincinnati")
    llm = LLMGateway({}, RoleModel(model, "scripted", "scripted chat model", context_window=2000))
    ctx = ChainRAGContext(integration="contexts")
    state = {**solved_state(), "evidence": items}
    update = Integrate(llm, LengthReranker(), ChainRAGContext)(state, Runtime(context=ctx))
    prompt = model.prompts[0]
    read = [i for i in range(40) if f"fact {i:02d} " in prompt]
    left_out = 40 - len(read)
    # equal scores: the later-gathered first, so the best are the last gathered
    assert 0 < left_out < 40 and read == list(range(left_out, 40))
    assert sorted(read, key=lambda i: prompt.index(f"fact {i:02d} "), reverse=True) == read
    question, room = state["question"], 2000 - follow_up_tokens(state["question"], ctx.max_answer_tokens)
    ranked = items[::-1]
    assert estimated_tokens(answer.messages(question, ranked[: len(read)])) <= room
    assert estimated_tokens(answer.messages(question, ranked[: len(read) + 1])) > room
    assert update["stats"] == {"contexts_left_out": float(left_out)}
    assert update["fallbacks"] == [
        f"integrate: the reader's 2,000-token window holds the best {len(read)} of the 40 items to read; "
        f"the other {left_out} were left out"
    ]


def test_rerank_orders_best_first_and_puts_the_later_of_equal_scores_first() -> None:
    items = [evidence(1, "tie"), evidence(2, "longest one"), evidence(3, "tie")]
    ranked = rerank(LengthReranker(), "q", items)
    assert [item["id"] for item in ranked] == ["d#s2", "d#s3", "d#s1"]
