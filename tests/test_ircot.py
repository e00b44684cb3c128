"""IR-CoT over real retrieval (the bundled sample corpus: real BM25, Chroma, MiniLM, spaCy) with a scripted
chat model in place of the LLM: the loop's stopping rules, the paragraph budget, every malformed reply's
fallback, both readers, the prompt layout, the sentence splitter, and the demonstrations kept out of every
evaluated benchmark. The scripted model tests how the graph uses the LLM, never what an LLM would say."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest

from evals.datasets import DATASETS, load_benchmark
from graphs import ircot
from graphs.ircot.context import IRCoTContext
from graphs.ircot.steps import within_budget
from graphs.registry import METHODS
from hopgraph import Settings, build_graph
from nodes.retrieve import search_evidence
from prompts import demonstrations
from prompts import ircot as prompt
from prompts.demonstrations import DEMONSTRATION_IDS, DEMONSTRATION_QUESTIONS, DEMONSTRATIONS
from prompts.echo import NUDGE
from stores.bm25 import tokenize
from stores.evidence import Evidence
from tests.conftest import REPO, SHARED_DATA
from tests.scripted import ScriptedChatModel, ScriptedServices, scripted_gateway, stream_run
from tests.test_naive_local import QUESTION

READER_CUE = "Reply with just the answer"  # the direct reader's instruction (prompts.answer)


def replies(reasoning: Iterable[str], reader: str = "Cybertruck") -> Callable[[str], str]:
    """The reasoner's replies in order; the direct reader's prompt always gets `reader`. The chain-of-
    thought reader is scripted as the reply after the reasoner's."""
    steps = iter(reasoning)

    def reply(prompt_text: str) -> str:
        return reader if READER_CUE in prompt_text else next(steps, reader)

    return reply


def run(
    services: Any, reply: Callable[[str], str], **context: Any
) -> tuple[list[str], dict[str, Any], ScriptedChatModel]:
    """(nodes in the order they ran, the final state, the scripted model with every prompt it got)."""
    llm, model = scripted_gateway(reply)
    graph = ircot.build(ScriptedServices(services, llm)).compile()
    steps, values = stream_run(graph, QUESTION, IRCoTContext(**{"index": "sample", **context}))
    return steps, values, model


def search(services: Any, query: str, k: int, hop: int) -> list[Evidence]:
    return search_evidence(services.indexes.open("sample"), query, k, hop, mode="bm25")


def task_part(prompt_text: str) -> str:
    """The user message of a reasoner prompt: everything after the system text (and its examples)."""
    return prompt_text.split(prompt.system_text(demonstrations.select(2)), 1)[1]


# ---- stopping rules


def test_reasoning_stops_when_a_sentence_says_the_answer_is(services: Any, sample_index: str) -> None:
    chain = [
        "Tesla's electric pickup truck is the Cybertruck.",
        "The Verge reports that Elon Musk believes the Cybertruck is safer for pedestrians.",
        "So the answer is: Cybertruck.",
    ]
    steps, values, model = run(services, replies(chain), top_k=3)

    assert steps == ["retrieve", "reason"] * 3 + ["generate"]
    assert values["reasoning"] == chain and values["stop"] == "answer"
    assert values["answer"] == "Cybertruck" and values["answer_outcome"] == "answered"
    assert values["stats"]["iterations"] == 3
    # round r searched with the question (r = 1), then with sentence r - 1; its new paragraphs are hop r
    queries = [QUESTION, *chain[:2]]
    for hop, query in enumerate(queries, start=1):
        found = {item["id"] for item in search(services, query, 3, hop)}
        assert {item["id"] for item in values["evidence"] if item["hop"] == hop} <= found
    assert values["rounds"] == 3 and values["stats"]["paragraphs"] == len(values["evidence"])
    # the reader read every kept paragraph; the reasoner saw them as "Wikipedia Title:" blocks
    assert all(item["title"] in model.prompts[-1] for item in values["evidence"])
    assert f"Wikipedia Title: {values['evidence'][0]['title']}\n" in task_part(model.prompts[0])


def test_the_stop_pattern_is_answer_is_with_an_optional_colon() -> None:
    assert prompt.says_answer("So the answer is: Paris.")
    assert prompt.says_answer("so the answer is Paris")
    assert prompt.says_answer("Thus the ANSWER IS: yes.")
    assert not prompt.says_answer("The answer lies in the second paragraph.")


def test_the_iteration_cap_stops_reasoning_without_a_last_retrieval(services: Any, sample_index: str) -> None:
    chain = ["The Cybertruck is a pickup.", "Musk talked about pedestrians.", "The truck is big.", "Never."]
    steps, values, _ = run(services, replies(chain), top_k=2, max_iterations=3)
    assert steps == ["retrieve", "reason"] * 3 + ["generate"]
    assert values["reasoning"] == chain[:3] and values["stop"] == "cap"
    assert values["stats"]["iterations"] == 3 and values["rounds"] == 3
    assert values["fallbacks"] == []


def test_a_sentence_that_only_concludes_is_not_searched_with(services: Any, sample_index: str) -> None:
    chain = [
        "Tesla builds the Cybertruck.",
        "Thus the truck in question is the Cybertruck.",
        "So the answer is: it.",
    ]
    steps, values, _ = run(services, replies(chain), top_k=2)
    assert steps == ["retrieve", "reason", "retrieve", "reason", "reason", "generate"]
    assert values["rounds"] == 2 and values["reasoning"] == chain
    assert {item["hop"] for item in values["evidence"]} <= {1, 2}
    for sentence in ("So, it is.", "Therefore it is.", "Hence it is.", "That is, it is."):
        assert prompt.is_conclusion(sentence)
    assert not prompt.is_conclusion("Sony makes it.")


# ---- the paragraph budget


def test_paragraphs_are_kept_first_come_within_the_budget(services: Any, sample_index: str) -> None:
    chain = [
        "OpenAI hosted a developer day.",
        "The US Senate held an AI Insight Forum.",
        "UTSA played Marshall in Frisco.",
        "The ASX followed Wall Street's September slump.",
        "North Texas played SMU.",
        "Marshall University is in West Virginia.",
    ]
    steps, values, model = run(services, replies(chain), top_k=6, paragraph_budget=15, max_iterations=6)

    assert steps == ["retrieve", "reason"] * 6 + ["generate"]  # the cap, 6, ends it: no "answer is"
    expected: list[tuple[str, int]] = []  # the first 15 distinct hits, in the order the rounds found them
    for hop, query in enumerate([QUESTION, *chain], start=1):
        for item in search(services, query, 6, hop):
            if item["id"] not in {found for found, _ in expected} and len(expected) < 15:
                expected.append((item["id"], hop))
    found_anywhere = {item["id"] for query in [QUESTION, *chain] for item in search(services, query, 6, 1)}
    assert len(found_anywhere) > 15  # the budget, not the corpus, is what stops the growth
    assert [(item["id"], item["hop"]) for item in values["evidence"]] == expected
    assert values["stats"]["paragraphs"] == 15
    # once full, later prompts show the same 15 paragraphs: each prompt extends the last one
    last_prompts = [task_part(text) for text in model.prompts[-3:-1]]
    assert all(text.count("Wikipedia Title: ") == 15 for text in last_prompts)
    assert last_prompts[1] == f"{last_prompts[0]} {chain[4]}"


def test_within_budget_drops_duplicates_and_over_long_paragraphs() -> None:
    def item(i: str, text: str, title: str = "T") -> Evidence:
        return Evidence(id=i, doc_id=i, title=title, text=text, score=1.0, char_start=0, char_end=1, hop=1)

    kept = [item("a", "alpha")]
    found = [
        item("a", "alpha"),
        item("b", "alpha"),
        item("c", "word " * 601),
        item("d", "delta"),
        item("e", "e"),
    ]
    assert [x["id"] for x in within_budget(kept, found, budget=3, max_words=600)] == ["d", "e"]
    assert [x["id"] for x in within_budget(kept, found, budget=2, max_words=600)] == ["d"]
    assert within_budget(kept, found, budget=1, max_words=600) == []


def test_paragraphs_are_cut_to_the_word_limit_in_the_reasoner_prompt() -> None:
    long = Evidence(
        id="x", doc_id="x", title="Long", text=" ".join(f"w{i}" for i in range(400)), score=1.0,
        char_start=0, char_end=1, hop=1,
    )  # fmt: skip
    [_, task] = prompt.messages("Q?", [long], [], (), paragraph_words=350)
    assert "w349" in task.content and "w350" not in task.content
    assert task.content.startswith("<passage>\nWikipedia Title: Long\nw0 w1")


# ---- malformed replies, each with its defined fallback


def test_an_empty_reply_stops_reasoning_and_the_reader_answers(services: Any, sample_index: str) -> None:
    steps, values, _ = run(services, replies(["  \n"]), top_k=3)
    assert steps == ["retrieve", "reason", "generate"]
    assert values["stop"] == "fallback" and values.get("reasoning", []) == []
    assert values["fallbacks"] == [
        "reason: empty reply: reasoning stopped; the reader answers from the 3 paragraphs kept"
    ]
    assert values["answer"] == "Cybertruck" and values["stats"]["iterations"] == 1


def test_a_reply_restating_the_chain_keeps_its_first_new_sentence_then_stops_when_nothing_is_new(
    services: Any, sample_index: str
) -> None:
    first = "Tesla builds the Cybertruck."
    chain = [
        first,
        f"{first} Musk says it is safe for pedestrians.",
        f"{first} Musk says it is safe for pedestrians.",
    ]
    steps, values, _ = run(services, replies(chain), top_k=2)
    assert steps == ["retrieve", "reason"] * 3 + ["generate"]
    assert values["reasoning"] == [first, "Musk says it is safe for pedestrians."]
    assert values["stop"] == "fallback"
    assert values["fallbacks"] == [
        "reason: the reply restated 1 earlier sentence(s); its first new one kept",
        "reason: the reply only repeated sentences the chain already has: reasoning stopped; "
        f"the reader answers from the {len(values['evidence'])} paragraphs kept",
    ]


def test_a_copied_demonstration_is_retried_then_blanked(services: Any, sample_index: str) -> None:
    copied = DEMONSTRATIONS[0].reasoning[0]
    steps, values, model = run(services, replies([copied, copied]), top_k=2)
    assert steps == ["retrieve", "reason", "generate"]
    assert NUDGE in model.prompts[1] and model.prompts[1].startswith(model.prompts[0])  # asked once more
    reason_usage = next(u for u in values["usage"] if u["node"] == "reason")
    assert (reason_usage["echoes"], reason_usage["calls"]) == (2, 2)
    assert values["fallbacks"] == [
        "reason: the reply repeated the prompt's own text twice and was blanked: reasoning stopped; "
        "the reader answers from the 2 paragraphs kept"
    ]


def test_the_answer_phrase_is_no_echo_but_an_examples_answer_sentence_is() -> None:
    demos = demonstrations.select(2)
    messages = prompt.messages(QUESTION, [], [], demos, 350)
    guard = prompt.guard(demos)
    assert guard.find("So the answer is: Cybertruck.", messages) is None
    assert (
        guard.find(DEMONSTRATIONS[0].reasoning[-1], messages) is not None
    )  # "So the answer is: James Franco."
    assert guard.find("Tesla builds the Cybertruck.", messages) is None


def test_a_reply_that_runs_into_the_prompt_layout_is_cut_there(services: Any) -> None:
    assert prompt.next_sentence("A: Tesla builds it.\nQ: Who?", [], services.nlp) == (
        "Tesla builds it.",
        None,
    )
    assert prompt.next_sentence("Wikipedia Title: Tesla\nTesla builds it.", [], services.nlp) == (
        "",
        "empty reply",
    )


# ---- the readers


def test_the_cot_reader_takes_the_answer_after_answer_is_and_reuses_the_last_prompt(
    services: Any, sample_index: str
) -> None:
    chain = ["So the answer is: Cybertruck.", "Tesla makes it. So the answer is: Tesla Cybertruck.\nQ: next"]
    steps, values, model = run(services, replies(chain), top_k=3, reader="cot")
    assert steps == ["retrieve", "reason", "read_cot"]
    assert values["answer"] == "Tesla Cybertruck" and values["answer_outcome"] == "answered"
    assert model.prompts[1] == model.prompts[0]  # the same paragraphs and an empty chain: a full KV reuse
    assert [u["role"] for u in values["usage"]] == ["reasoner", "generator"]


def test_the_cot_reader_without_an_answer_falls_back_to_the_direct_reader(
    services: Any, sample_index: str
) -> None:
    chain = ["So the answer is: Cybertruck.", "Tesla makes a truck. It is big."]
    steps, values, model = run(services, replies(chain), top_k=3, reader="cot")
    assert steps == ["retrieve", "reason", "read_cot"]
    assert values["answer"] == "Cybertruck"  # the direct reader's
    assert values["fallbacks"] == [
        'cot reader: no "answer is" in the chain of thought; answered by the direct reader'
    ]
    assert READER_CUE in model.prompts[-1] and len(values["usage"]) == 3


def test_a_refusal_after_answer_is_goes_to_the_direct_reader_unless_refusals_are_kept(
    services: Any, sample_index: str
) -> None:
    chain = ["So the answer is: Cybertruck.", "So the answer is: unknown."]
    _, values, _ = run(services, replies(chain), top_k=3, reader="cot")
    assert values["answer"] == "Cybertruck" and values["answer_outcome"] == "answered"
    assert values["fallbacks"] == [
        "cot reader: the chain of thought refused ('unknown.'); answered by the direct reader"
    ]
    kept_as_is = {"reader": "cot", "unanswerable": True, "refusal_check": False}
    _, kept, _ = run(services, replies(chain), top_k=3, **kept_as_is)
    assert (kept["answer"], kept["answer_outcome"], kept["fallbacks"]) == ("unknown", "unanswerable", [])
    # with the refusal check (the default), the chain's refusal goes to the direct reader, whose own refusal
    # would be checked: the scripted direct reader answers
    _, checked, _ = run(services, replies(chain), top_k=3, reader="cot", unanswerable=True)
    assert (checked["answer"], checked["answer_outcome"]) == ("Cybertruck", "answered")
    assert checked["fallbacks"] == values["fallbacks"]


def test_the_answer_is_read_after_answer_is_in_its_own_sentence(services: Any) -> None:
    nlp = services.nlp
    assert (
        prompt.answer_in("It is in Missouri. So the answer is: St. Louis. It has an arch.", nlp)
        == "St. Louis."
    )
    assert prompt.answer_in("The answer is 3.5 km.", nlp) == "3.5 km."
    assert prompt.answer_in("So the answer is:", nlp) is None
    assert prompt.answer_in("No conclusion here.", nlp) is None


# ---- the sentence splitter


@pytest.mark.parametrize(
    ("reply", "first"),
    [
        (
            "Dr. Smith was born in St. Louis in 1950. He moved away later.",
            "Dr. Smith was born in St. Louis in 1950.",
        ),
        (
            "The U.S. Senate passed the bill in 1990. So the answer is: 1990.",
            "The U.S. Senate passed the bill in 1990.",
        ),
        ("The trail is 3.5 km long. Thus it is short.", "The trail is 3.5 km long."),
        ("St. Louis lies on the Mississippi. It has an arch.", "St. Louis lies on the Mississippi."),
        (
            "  A: Jaws was directed by Steven Spielberg.  It came out in 1975.",
            "Jaws was directed by Steven Spielberg.",
        ),
    ],
)
def test_the_first_sentence_survives_abbreviations_decimals_and_titles(
    services: Any, reply: str, first: str
) -> None:
    assert prompt.next_sentence(reply, [], services.nlp) == (first, None)


# ---- prompt layout and demonstrations


def test_the_prompt_puts_examples_first_and_the_chain_last() -> None:
    demos = demonstrations.select(2)
    system, task = prompt.messages("Who?", [], ["Fact one.", "Fact two."], demos, 350)
    assert task.content == "Q: Who?\nA: Fact one. Fact two."
    assert system.content.index(prompt.STOP_RULE) < system.content.index(DEMONSTRATIONS[0].question)
    assert system.content.index(DEMONSTRATIONS[0].question) < system.content.index(DEMONSTRATIONS[1].question)
    assert DEMONSTRATIONS[2].question not in system.content
    zero_shot, _ = prompt.messages("Who?", [], [], demonstrations.select(0), 350)
    assert zero_shot.content == f"{prompt.SYSTEM}\n{prompt.STOP_RULE}"
    assert demonstrations.select(99) == DEMONSTRATIONS and demonstrations.select(-1) == ()


def test_demonstrations_hold_gold_and_distractor_paragraphs_and_end_with_the_answer() -> None:
    assert len(DEMONSTRATIONS) == 4
    for demo in DEMONSTRATIONS:
        golds = [p for p in demo.paragraphs if p.gold]
        assert len(golds) == 2 and len(demo.paragraphs) > len(golds)
        assert demo.reasoning[-1] == f"{prompt.ANSWER_PHRASE} {demo.answer}."
        assert not any(prompt.says_answer(s) for s in demo.reasoning[:-1])


def test_demonstrations_come_from_the_end_of_the_dev_slices_and_are_never_evaluated() -> None:
    hotpot_raw = json.loads((SHARED_DATA / "hotpotqa" / DATASETS["hotpotqa"]).read_text())
    hotpot_positions = [i for i, r in enumerate(hotpot_raw) if r["_id"] in DEMONSTRATION_IDS["hotpotqa"]]
    assert hotpot_positions and min(hotpot_positions) >= 280
    assert all(int(i.removeprefix("dev_")) >= 95 for i in DEMONSTRATION_IDS["2wikimultihopqa"])

    for name in ("hotpotqa", "2wikimultihopqa"):
        bench = load_benchmark(name, SHARED_DATA / name)
        assert not {ex.id for ex in bench.examples} & DEMONSTRATION_IDS[name]
        assert not {ex.question for ex in bench.examples} & DEMONSTRATION_QUESTIONS
    first_50 = load_benchmark("hotpotqa", SHARED_DATA / "hotpotqa", limit=50)
    assert [ex.id for ex in first_50.examples] == [r["_id"] for r in hotpot_raw[:50]]
    # ids are per dataset: MuSiQue's FlashRAG "dev_97" is not the 2Wiki demonstration "dev_97"
    musique = load_benchmark("musique", SHARED_DATA / "musique" / "musique_dev_200.jsonl", limit=100)
    assert "dev_97" in {ex.id for ex in musique.examples}


def test_a_demonstration_question_is_skipped_before_the_limit_counts(tmp_path: Path) -> None:
    demo = DEMONSTRATIONS[0]

    def record(qid: str, question: str) -> dict[str, Any]:
        return {"_id": qid, "question": question, "answer": "a", "type": "bridge",
                "context": [["P", ["Alpha."]]], "supporting_facts": [["P", 0]]}  # fmt: skip

    path = tmp_path / "hotpot.json"
    path.write_text(
        json.dumps(
            [record(demo.id, "other words"), record("x", demo.question), record("1", "q1"), record("2", "q2")]
        )
    )
    assert [ex.id for ex in load_benchmark("hotpotqa", path, limit=2).examples] == ["1", "2"]


# ---- retrieval details, registration


def test_bm25_already_drops_the_question_words_the_original_strips() -> None:
    assert tokenize("who what when where why which how does is") == []


def test_ircot_is_registered_everywhere(settings: Settings) -> None:
    assert "ircot" in METHODS
    assert (
        json.loads((REPO / "langgraph.json").read_text())["graphs"]["ircot"] == "./hopgraph/studio.py:ircot"
    )
    graph = build_graph("ircot", settings, checkpointer=False)
    context = graph.get_context_jsonschema()["properties"]
    assert "per step" in context["top_k"]["description"] and context["retrieval_mode"]["default"] == "bm25"
    defaults = IRCoTContext()
    assert (defaults.top_k, defaults.max_iterations, defaults.paragraph_budget) == (6, 8, 15)
    assert (defaults.demonstrations, defaults.reader, defaults.paragraph_words) == (2, "direct", 350)
    assert defaults.long_paragraph_words == 600
