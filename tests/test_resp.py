"""ReSP over real retrieval (the bundled sample corpus: real Chroma, MiniLM, BM25, spaCy) with scripted chat
models in place of the LLM: each way the loop stops, the summarizer's two calls and the memories they fill,
the planner's repeat check, per-role routing, every malformed reply's fallback, the prompt layout and the
statistics. The scripted models test how the graph uses the LLM, never what an LLM would say."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import pytest

from graphs import resp
from graphs.registry import METHODS
from graphs.resp.context import ReSPContext
from hopgraph import Settings, build_graph
from hopgraph.api import methods
from nodes.llm import LLMGateway, RoleModel
from nodes.retrieve import search_evidence
from prompts import answer, reader, resp_generator, resp_reasoner, resp_summarizer
from prompts.echo import NUDGE
from stores.evidence import Evidence
from tests.conftest import REPO
from tests.scripted import ScriptedChatModel, ScriptedServices, scripted_gateway, stream_updates
from tests.test_naive_local import QUESTION

SUMMARY = "Tesla's electric pickup truck is the Cybertruck. Elon Musk says it is safer for pedestrians."
PLANS = ["Which company makes the Cybertruck?", "What did The Verge report about pedestrian safety?"]

GLOBAL, LOCAL = resp_summarizer.GLOBAL_INSTRUCTION, resp_summarizer.LOCAL_INSTRUCTION
JUDGE, PLAN = resp_reasoner.JUDGE_INSTRUCTION, resp_reasoner.PLAN_INSTRUCTION
GENERATE = answer.INSTRUCTION  # the generator's (and the shared passage reader's) instruction


def kind(prompt: str) -> str:
    """Which call a prompt is, by the instruction it carries."""
    for name, marker in (("global", GLOBAL), ("local", LOCAL), ("judge", JUDGE), ("plan", PLAN)):
        if marker in prompt:
            return name
    assert GENERATE in prompt, prompt
    return "generate"


class Script:
    """The replies of each kind of call, in order; past the end of a list, that kind's default: a summary,
    "No" from the local pathway and the judge, an empty plan, and the answer "Cybertruck"."""

    def __init__(
        self,
        summaries: Iterable[str] = (),
        pathway: Iterable[str] = (),
        verdicts: Iterable[str] = (),
        plans: Iterable[str] = (),
        answers: Iterable[str] = (),
    ) -> None:
        self.queues = {
            "global": iter(summaries),
            "local": iter(pathway),
            "judge": iter(verdicts),
            "plan": iter(plans),
            "generate": iter(answers),
        }
        self.defaults = {
            "global": f"{SUMMARY} [DONE]",
            "local": "No",
            "judge": "No",
            "plan": "",
            "generate": "Cybertruck",
        }

    def __call__(self, prompt: str) -> str:
        name = kind(prompt)
        return next(self.queues[name], self.defaults[name])


def stream(llm: LLMGateway, services: Any, **context: Any) -> tuple[list[tuple[str, dict]], dict[str, Any]]:
    """(each node's update in the order they ran, the final state)."""
    graph = resp.build(ScriptedServices(services, llm)).compile()
    return stream_updates(graph, QUESTION, ReSPContext(**{"index": "sample", **context}))


def run(services: Any, script: Script, **context: Any) -> tuple[list[str], dict[str, Any], ScriptedChatModel]:
    """(nodes in the order they ran, the final state, the scripted model with every prompt it got)."""
    llm, model = scripted_gateway(script)
    updates, values = stream(llm, services, **context)
    values["updates"] = updates
    return [node for node, _ in updates], values, model


def prompts_of(model: ScriptedChatModel, name: str) -> list[str]:
    return [prompt for prompt in model.prompts if kind(prompt) == name]


def search(services: Any, query: str, k: int, hop: int) -> list[Evidence]:
    return search_evidence(services.indexes.open("sample"), query, k, hop, mode="dense")


def words(texts: Iterable[str]) -> int:
    return sum(len(text.split()) for text in texts)


# ---- how the loop stops


def test_a_yes_from_the_judge_on_round_one_answers_from_the_global_evidence_alone(
    services: Any, sample_index: str
) -> None:
    steps, values, model = run(services, Script(verdicts=["Yes"]), top_k=4)

    assert steps == ["retrieve", "summarize", "judge", "generate"]
    assert values["stop"] == "sufficient" and values["rounds"] == 1
    assert values["global_memory"] == [SUMMARY] and values.get("local_memory", []) == []
    assert values["answer"] == "Cybertruck" and values["answer_outcome"] == "answered"
    assert values["fallbacks"] == []
    # round 1 searched for the question: its top-4 are the evidence, at hop 1
    found = search(services, QUESTION, 4, 1)
    assert values["evidence"] == found
    # the summarizer read them; the generator read the memory, not the passages
    [summary_prompt] = prompts_of(model, "global")
    assert all(item["text"].strip() in summary_prompt for item in found)
    [generate_prompt] = prompts_of(model, "generate")
    assert SUMMARY in generate_prompt and found[0]["text"].strip()[:80] not in generate_prompt
    assert [u["role"] for u in values["usage"]] == ["summarizer", "reasoner", "generator"]
    # statistics: one round; the words read against the words of memory the generator got
    retrieved = words(item["text"] for item in found)
    assert values["stats"] == {
        "iterations": 1.0,
        "retrieval_rounds": 1.0,
        "retrieved_words": float(retrieved),
        "memory_words": float(words([SUMMARY])),
        "compression_ratio": round(retrieved / words([SUMMARY]), 4),
    }


def test_the_iteration_cap_ends_the_loop_without_asking_the_judge_after_the_last_round(
    services: Any, sample_index: str
) -> None:
    script = Script(pathway=["Yes, Tesla.", "No"], plans=PLANS)
    steps, values, model = run(services, script, top_k=3, max_iterations=3)

    assert steps == ["retrieve", "summarize", "judge", "plan"] * 2 + [
        "retrieve",
        "summarize",
        "judge",
        "generate",
    ]
    assert values["stop"] == "cap" and values["rounds"] == 3 and values["stats"]["iterations"] == 3
    assert len(prompts_of(model, "judge")) == 2  # rounds 1 and 2; after round 3 the generator answers
    assert values["local_memory"] == [
        {"sub_question": PLANS[0], "answer": "Tesla", "answered": True},
        {"sub_question": PLANS[1], "answer": "", "answered": False},
    ]
    assert values["global_memory"] == [SUMMARY] * 3
    # round r searched for the question (r = 1), then for plan r - 1; its new passages are hop r
    for hop, query in enumerate([QUESTION, *PLANS], start=1):
        found = {item["id"] for item in search(services, query, 3, hop)}
        assert {item["id"] for item in values["evidence"] if item["hop"] == hop} <= found
    assert {item["hop"] for item in values["evidence"]} >= {1}
    # the generator read both queues, in the order they grew
    [generate_prompt] = prompts_of(model, "generate")
    assert f"- {PLANS[0]} -> Tesla\n- {PLANS[1]} -> {resp_reasoner.NOT_ANSWERED}" in generate_prompt
    assert values["fallbacks"] == []
    retrieved = words(item["text"] for query in [QUESTION, *PLANS] for item in search(services, query, 3, 1))
    assert values["stats"]["retrieved_words"] == retrieved


def test_max_iterations_one_is_single_round_summarise_then_answer(services: Any, sample_index: str) -> None:
    steps, values, model = run(services, Script(), top_k=2, max_iterations=1)
    assert steps == ["retrieve", "summarize", "judge", "generate"]
    assert values["stop"] == "cap" and not prompts_of(model, "judge")


def test_the_first_round_makes_no_local_pathway_call_and_each_later_round_one(
    services: Any, sample_index: str
) -> None:
    script = Script(pathway=["Yes Tesla"], verdicts=["No", "Yes"], plans=PLANS[:1])
    steps, values, model = run(services, script, top_k=3)

    assert steps == ["retrieve", "summarize", "judge", "plan", "retrieve", "summarize", "judge", "generate"]
    assert values["stop"] == "sufficient"
    round_one, round_two = [update for node, update in values["updates"] if node == "summarize"]
    assert "local_memory" not in round_one and len(round_two["local_memory"]) == 1
    # one local call in all, for round 2's sub-question, over round 2's passages (the paper's §4.1)
    [local_prompt] = prompts_of(model, "local")
    assert f"Question: {PLANS[0]}\n" in local_prompt
    round_two_passages = search(services, PLANS[0], 3, 2)
    assert all(item["text"].strip() in local_prompt for item in round_two_passages)
    # the global call of each round asks about the overarching question
    assert all(f"Question: {QUESTION}\n" in prompt for prompt in prompts_of(model, "global"))
    summarize_usage = [u for u in values["usage"] if u["node"] == "summarize"]
    assert [u["role"] for u in summarize_usage] == ["summarizer"] * 3


# ---- the planner never searches a sub-question twice


def test_a_repeated_sub_question_is_planned_again_once_naming_the_repeat(
    services: Any, sample_index: str
) -> None:
    repeat = f"  {QUESTION.upper().rstrip('?')} ?"  # the question again, in other case and spacing
    script = Script(verdicts=["No", "Yes"], plans=[repeat, PLANS[0]])
    steps, values, model = run(services, script, top_k=2)

    assert steps == ["retrieve", "summarize", "judge", "plan", "retrieve", "summarize", "judge", "generate"]
    first, again = prompts_of(model, "plan")
    assert again.startswith(first)  # the reply and a note appended: the KV prefix is kept
    assert repeat.strip() in again.split(first, 1)[1] and "searched already" in again.split(first, 1)[1]
    assert values["local_memory"][0]["sub_question"] == PLANS[0]
    assert values["fallbacks"] == [f"plan: {repeat.strip()!r} was searched already: asked again, naming it"]
    plan_usage = [u for u in values["usage"] if u["node"] == "plan"]
    assert len(plan_usage) == 2 and {u["role"] for u in plan_usage} == {"reasoner"}


def test_a_second_repeat_ends_the_loop_and_the_generator_answers(services: Any, sample_index: str) -> None:
    # round 2 searched PLANS[0]; round 2's planner offers it again, twice
    script = Script(plans=[PLANS[0], f"{PLANS[0].lower()}", f'"{PLANS[0]}"'])
    steps, values, model = run(services, script, top_k=2)

    assert steps == [
        "retrieve",
        "summarize",
        "judge",
        "plan",
        "retrieve",
        "summarize",
        "judge",
        "plan",
        "generate",
    ]
    assert values["stop"] == "repeat" and values["rounds"] == 2
    assert len(prompts_of(model, "plan")) == 3 and values["answer"] == "Cybertruck"
    assert values["fallbacks"] == [
        f"plan: {PLANS[0].lower()!r} was searched already: asked again, naming it",
        f"plan: the new plan {PLANS[0]!r} was searched already too: the generator answers from the memories",
    ]


def test_the_repeat_check_compares_words_not_case_or_punctuation() -> None:
    searched = ["Who makes the Cybertruck?", "When was it unveiled?"]
    assert resp_reasoner.is_repeat("who makes the  cybertruck", searched)
    assert resp_reasoner.is_repeat("When was it unveiled ?!", searched)
    assert not resp_reasoner.is_repeat("Who designed the Cybertruck?", searched)


# ---- per-role models


def test_each_role_is_routed_to_its_own_model(services: Any, sample_index: str) -> None:
    """The reasoner on one model, the summarizer and the generator on the default one (the paper's Table 4
    swaps one module's model at a time)."""
    reasoner = ScriptedChatModel(reply=Script(verdicts=["No", "Yes"], plans=PLANS[:1]))
    default = ScriptedChatModel(reply=Script(pathway=["Yes Tesla"]))
    llm = LLMGateway(
        {"reasoner": RoleModel(reasoner, "reasoner-model", "scripted reasoner")},
        RoleModel(default, "default-model", "scripted default"),
    )
    updates, values = stream(llm, services, top_k=2)

    assert [node for node, _ in updates] == [
        *["retrieve", "summarize", "judge", "plan"],
        *["retrieve", "summarize", "judge", "generate"],
    ]
    assert [kind(p) for p in reasoner.prompts] == ["judge", "plan", "judge"]
    assert [kind(p) for p in default.prompts] == ["global", "global", "local", "generate"]
    assert [(u["node"], u["role"]) for u in values["usage"]] == [
        ("summarize", "summarizer"),
        ("judge", "reasoner"),
        ("plan", "reasoner"),
        ("summarize", "summarizer"),
        ("summarize", "summarizer"),
        ("judge", "reasoner"),
        ("generate", "generator"),
    ]


# ---- malformed replies, each with its defined fallback


def test_a_judge_reply_without_yes_or_no_counts_as_no(services: Any, sample_index: str) -> None:
    script = Script(verdicts=["Probably, the truck is named.", "**Yes**"], plans=PLANS[:1])
    steps, values, _ = run(services, script, top_k=2)
    assert steps == ["retrieve", "summarize", "judge", "plan", "retrieve", "summarize", "judge", "generate"]
    assert values["stop"] == "sufficient"
    assert values["fallbacks"] == ["judge: no Yes/No in 'Probably, the truck is named.': taken as No"]


@pytest.mark.parametrize(
    ("reply", "note"),
    [
        ("The truck.", "no Yes/No in 'The truck.'"),
        ("Yes.", "Yes with no answer in 'Yes.'"),
        ("Yes, unknown", "Yes with no answer in 'Yes, unknown'"),
    ],
)
def test_a_local_pathway_reply_that_is_neither_yes_with_an_answer_nor_no_is_filed_as_not_answered(
    services: Any, sample_index: str, reply: str, note: str
) -> None:
    script = Script(pathway=[reply], verdicts=["No", "Yes"], plans=PLANS[:1])
    _, values, _ = run(services, script, top_k=2)
    assert values["local_memory"] == [{"sub_question": PLANS[0], "answer": "", "answered": False}]
    assert values["fallbacks"] == [f"summarize: local pathway of round 2: {note}: filed as not answered"]


def test_the_local_pathway_answer_follows_the_yes() -> None:
    assert reader.verdict_and_rest("Yes, Tesla Inc.\nmore") == (True, "Tesla Inc.\nmore")
    assert reader.verdict_and_rest("**Yes**: 1990") == (True, "1990")
    assert reader.verdict_and_rest("No.") == (False, "")
    assert reader.verdict_and_rest("Yesterday it was sold.") == (None, "")
    assert reader.verdict_and_rest("") == (None, "")
    assert answer.clean(reader.verdict_and_rest("Yes, Tesla Inc.\nmore")[1]) == "Tesla Inc"


@pytest.mark.parametrize("reply", ["", "  \n ", "Yes", "Next question:"])
def test_an_empty_plan_ends_the_loop(services: Any, sample_index: str, reply: str) -> None:
    steps, values, _ = run(services, Script(plans=[reply]), top_k=2)
    assert steps == ["retrieve", "summarize", "judge", "plan", "generate"]
    assert values["stop"] == "no_plan" and values["answer"] == "Cybertruck"
    assert values["fallbacks"] == [
        "plan: no usable sub-question in the reply: the generator answers from the memories"
    ]


def test_a_plan_is_its_first_line_without_label_numbering_or_quotes() -> None:
    assert resp_reasoner.parse_plan("Next question: Who makes it?\nThen: when?") == "Who makes it?"
    assert resp_reasoner.parse_plan('[Your Thought]: "Who makes it?"') == "Who makes it?"
    assert resp_reasoner.parse_plan("1. Who makes it?") == "Who makes it?"
    assert resp_reasoner.parse_plan("\n- Sub-question: Who makes it?") == "Who makes it?"
    assert resp_reasoner.parse_plan("Who questioned the CEO?") == "Who questioned the CEO?"
    assert resp_reasoner.parse_plan("No.") == ""


def test_an_over_long_summary_is_cut_back_to_whole_sentences_without_repeats(
    services: Any, sample_index: str
) -> None:
    cut_off = "Musk said the truck would be safer for pedestrians than"
    looping = "The Cybertruck is made by Tesla. " * 3 + cut_off
    script = Script(summaries=[looping], verdicts=["Yes"])
    _, values, _ = run(services, script, top_k=2, step_tokens=len(looping.split()))
    assert values["global_memory"] == ["The Cybertruck is made by Tesla."]
    note = "summarize: global evidence of round 1:"
    assert values["fallbacks"] == [
        f"{note} 2 repeated sentence(s) dropped",
        f"{note} it ran into the token cap mid-sentence: cut back to its last whole sentence",
    ]


def test_a_summary_is_cut_at_its_end_mark_and_loses_its_label(services: Any) -> None:
    summary, notes = resp_summarizer.global_evidence(
        "Supporting passage: Tesla makes the Cybertruck. [DONE] Question: next", services.nlp, hit_cap=False
    )
    assert (summary, notes) == ("Tesla makes the Cybertruck.", [])
    # within the cap, or ended by its mark, a last sentence without a full stop is kept
    assert resp_summarizer.global_evidence("It is Tesla. It is big", services.nlp, hit_cap=False)[0] == (
        "It is Tesla. It is big"
    )
    # a single cut-off sentence is kept as written: half a fact is still evidence
    alone = resp_summarizer.global_evidence("Tesla makes the", services.nlp, hit_cap=True)
    assert alone == ("Tesla makes the", [])


def test_an_unusable_summary_adds_nothing_and_with_no_memory_the_generator_reads_the_passages(
    services: Any, sample_index: str
) -> None:
    echo = resp_summarizer.GLOBAL_INSTRUCTION  # copied twice: the guard blanks it
    script = Script(summaries=[echo, echo, "  "], verdicts=["No"], plans=PLANS[:1])
    steps, values, model = run(services, script, top_k=2, max_iterations=2)

    assert steps == ["retrieve", "summarize", "judge", "plan", "retrieve", "summarize", "judge", "generate"]
    assert values.get("global_memory", []) == []
    summarize_usage = [u for u in values["usage"] if u["node"] == "summarize"]
    assert (summarize_usage[0]["echoes"], summarize_usage[0]["calls"]) == (2, 2)
    assert NUDGE in model.prompts[1]
    passages = len(values["evidence"])
    assert values["fallbacks"] == [
        "summarize: global evidence of round 1: the reply repeated the prompt's own text twice: "
        "nothing added to the global evidence memory",
        "summarize: global evidence of round 2: empty: nothing added to the global evidence memory",
        f"generate: no evidence in the memories: answered from the {passages} retrieved passages",
    ]
    [generate_prompt] = prompts_of(model, "generate")
    assert all(item["text"].strip() in generate_prompt for item in values["evidence"])
    assert values["stats"]["memory_words"] == 0 and "compression_ratio" not in values["stats"]


def test_a_refusal_from_the_generator_is_asked_once_more_unless_refusals_are_kept(
    services: Any, sample_index: str
) -> None:
    refusal = answer.UNANSWERABLE
    _, values, model = run(services, Script(verdicts=["Yes"], answers=[refusal, "Cybertruck"]), top_k=2)
    assert (values["answer"], values["answer_outcome"]) == ("Cybertruck", "best_span")
    assert answer.REFUSAL_NUDGE in prompts_of(model, "generate")[-1]

    _, kept, model = run(services, Script(verdicts=["Yes"], answers=[refusal]), top_k=2, unanswerable=True)
    assert (kept["answer"], kept["answer_outcome"]) == ("Insufficient information", "unanswerable")
    assert resp_generator.UNANSWERABLE_INSTRUCTION in prompts_of(model, "generate")[0]


# ---- prompt layout


def test_calls_that_follow_each_other_share_their_prefix_up_to_the_question(
    services: Any, sample_index: str
) -> None:
    script = Script(pathway=["Yes Tesla"], verdicts=["No", "Yes"], plans=PLANS[:1])
    _, values, model = run(services, script, top_k=2)
    prompts = model.prompts
    assert [kind(p) for p in prompts] == ["global", "judge", "plan", "global", "local", "judge", "generate"]

    def before_question(prompt: str) -> str:
        return prompt.split("\nQuestion: ", 1)[0]

    # the summarizer's two calls of round 2 read the same passages; the judge, planner and generator the
    # same memories, which only grew at their end from one round to the next
    assert before_question(prompts[3]) == before_question(prompts[4])
    assert before_question(prompts[1]) == before_question(prompts[2])
    assert before_question(prompts[5]) == before_question(prompts[6])
    known = resp_reasoner.known_information(values["global_memory"], values["local_memory"])
    assert known == (
        f"{resp_reasoner.EVIDENCE_HEADER}\n- {SUMMARY}\n- {SUMMARY}\n\n"
        f"{resp_reasoner.PATHWAY_HEADER}\n- {PLANS[0]} -> Tesla"
    )
    assert prompts[6].endswith(f"Question: {QUESTION}\n{answer.INSTRUCTION}\n{answer.CUE}")
    assert resp_reasoner.known_information([], []) == resp_reasoner.NOTHING_KNOWN


def test_the_local_pathway_can_read_the_memories_as_table_1_shows(services: Any, sample_index: str) -> None:
    round_two = "The Cybertruck maker is Tesla."
    script = Script(summaries=[f"{SUMMARY} [DONE]", round_two], verdicts=["No", "Yes"], plans=PLANS[:1])
    _, values, model = run(services, script, top_k=2, local_pathway_reads="memories")
    [local_prompt] = prompts_of(model, "local")
    assert local_prompt.split("Known information:\n", 1)[1].startswith(
        f"{resp_reasoner.EVIDENCE_HEADER}\n- {SUMMARY}\n- {round_two}\n\nQuestion: {PLANS[0]}\n"
    )
    assert not any(item["text"].strip()[:80] in local_prompt for item in values["evidence"])


class RecordingIndexes:
    """The sample index under any name, recording each text search it is asked for."""

    def __init__(self, index: Any) -> None:
        self.index = index
        self.searches: list[tuple[str, int, str]] = []

    def open(self, name: str) -> RecordingIndexes:
        return self

    def search(self, query: str, k: int, mode: str = "hybrid", where: dict | None = None) -> Any:
        self.searches.append((query, k, mode))
        return self.index.search(query, k, mode=mode, where=where)

    def evidence(self, span: Any, score: float, hop: int) -> Any:
        return self.index.evidence(span, score, hop)


def test_a_run_without_context_retrieves_with_resps_own_defaults(services: Any, sample_index: str) -> None:
    """`graph.invoke(...)` with no context: the shared retrieval node reads ReSP's defaults (dense top-5, the
    paper's retriever), not the plain retrieval defaults (hybrid)."""
    indexes = RecordingIndexes(services.indexes.open("sample"))
    llm, _ = scripted_gateway(Script(verdicts=["Yes"]))
    graph = resp.build(ScriptedServices(services, llm, indexes=indexes)).compile()
    out = graph.invoke({"question": QUESTION})
    assert indexes.searches == [(QUESTION, 5, "dense")]
    assert len(out["evidence"]) == 5 and out["answer"] == "Cybertruck"


# ---- registration


def test_resp_is_registered_everywhere(settings: Settings) -> None:
    assert "resp" in METHODS and "resp" in methods()
    assert json.loads((REPO / "langgraph.json").read_text())["graphs"]["resp"] == "./hopgraph/studio.py:resp"
    graph = build_graph("resp", settings, checkpointer=False)
    context = graph.get_context_jsonschema()["properties"]
    assert "each round" in context["top_k"]["description"] and context["retrieval_mode"]["default"] == "dense"
    defaults = ReSPContext()
    assert (defaults.top_k, defaults.max_iterations, defaults.step_tokens) == (5, 3, 200)
    assert defaults.local_pathway_reads == "documents"
