"""NaiveRAG w/ QD over real retrieval (the sample index) with a scripted chat model: the sub-questions taken
in order, each answered from its own top-k chunks at its own hop, the earlier-answers switch, and the
integrations."""

from __future__ import annotations

from typing import Any

from graphs import naive_qd
from graphs.naive_qd.context import NaiveQDContext
from prompts import answer, reader
from stores.evidence import Evidence
from tests.scripted import ScriptedChatModel, ScriptedServices, scripted_gateway, stream_updates

QUESTION = "Which electric pickup did TechCrunch write about, and is it deadly for pedestrians?"
SUBS = ["Which electric pickup did TechCrunch write about?", "Is it deadly for pedestrians?"]
SUB_ANSWERS = {SUBS[0]: "The Tesla Cybertruck", SUBS[1]: "No more than other large trucks"}


def script(final: str = "Cybertruck", sub_answers: dict[str, str] = SUB_ANSWERS) -> Any:
    """Replies by prompt kind: the decomposition, each sub-question's answer, then the final answer."""

    def reply(prompt: str) -> str:
        if "JSON array" in prompt:
            return '["Which electric pickup did TechCrunch write about?", "Is it deadly for pedestrians?"]'
        asked = prompt.rsplit("Question: ", 1)[-1].split("\n", 1)[0]
        return sub_answers.get(asked, final)

    return reply


def run(
    services: Any, index: str, reply: Any = None, **context: Any
) -> tuple[list[tuple[str, dict]], dict, ScriptedChatModel]:
    llm, model = scripted_gateway(reply or script())
    graph = naive_qd.build(ScriptedServices(services, llm)).compile()
    updates, final = stream_updates(graph, QUESTION, {"index": index, **context})
    return updates, final, model


def rendered(messages: list) -> str:
    return "\n".join(str(m.content) for m in messages)


def test_each_sub_question_in_turn_is_answered_from_its_own_top_k_at_its_hop(
    services: Any, sample_index: str
) -> None:
    updates, final, model = run(services, sample_index, top_k=3)
    assert [node for node, _ in updates] == [
        "decompose",
        *["prepare", "retrieve", "answer_sub"] * 2,
        "integrate",
    ]
    index = services.indexes.open(sample_index)
    own: list[list[Evidence]] = []
    for position, sub in enumerate(SUBS, start=1):
        retrieved = [update["gathered"] for node, update in updates if node == "retrieve"][position - 1]
        dense = index.search(sub, 3, mode="dense")  # the method's default, as the paper's baselines search
        assert [item["id"] for item in retrieved] == [hit.chunk.id for hit in dense]
        assert {item["hop"] for item in retrieved} == {position}
        own.append(retrieved)
        # its reader: its own chunks and the sub-question exactly as decomposed, pronoun and all
        assert model.prompts[position] == rendered(reader.answer_messages(retrieved, sub))

    assert [(s["asked"], s["question"], s["answer"]) for s in final["solved"]] == [
        (sub, sub, SUB_ANSWERS[sub]) for sub in SUBS
    ]
    merged: dict[str, int] = {}
    for position, retrieved in enumerate(own, start=1):
        for item in retrieved:
            merged.setdefault(item["id"], position)
    assert [(item["id"], item["hop"]) for item in final["evidence"]] == list(merged.items())

    # AnsInt: the final answer from the sub-questions and their answers, no passages
    assert "1. Which electric pickup did TechCrunch write about? -> The Tesla Cybertruck" in model.prompts[-1]
    assert "2. Is it deadly for pedestrians? -> No more than other large trucks" in model.prompts[-1]
    assert "Passages:" not in model.prompts[-1]
    assert final["answer_outcome"] == "answered" and final["stats"] == {"sub_questions": 2.0}


def test_earlier_answers_reach_a_later_reader_only_when_switched_on(services: Any, sample_index: str) -> None:
    _, _, model = run(services, sample_index, top_k=2)
    assert not any("Notes from earlier steps" in prompt for prompt in model.prompts)  # the paper's baseline

    updates, _, model = run(services, sample_index, top_k=2, earlier_answers=True)
    first_reader, second_reader = model.prompts[1], model.prompts[2]
    assert "Notes from earlier steps" not in first_reader
    second_gathered = [update["gathered"] for node, update in updates if node == "retrieve"][1]
    notes = "On 'Which electric pickup did TechCrunch write about?': The Tesla Cybertruck"
    assert second_reader == rendered(reader.answer_messages(second_gathered, SUBS[1], notes))


def test_an_unanswered_sub_question_is_not_offered_as_an_earlier_answer(
    services: Any, sample_index: str
) -> None:
    refusing = script(sub_answers={SUBS[0]: "Insufficient information.", SUBS[1]: "No"})
    _, final, model = run(services, sample_index, refusing, top_k=2, earlier_answers=True)
    assert "Notes from earlier steps" not in model.prompts[2]
    assert [s["answered"] for s in final["solved"]] == [False, True]
    assert "1. Which electric pickup did TechCrunch write about? -> ?" in model.prompts[-1]


def test_a_refused_integration_is_answered_from_the_reranked_chunks_within_the_word_limit(
    services: Any, sample_index: str
) -> None:
    _, final, model = run(services, sample_index, script(final="Insufficient information."), top_k=8)
    assert sum(len(item["text"].split()) for item in final["evidence"]) > 1000  # more than the limit to cut
    # AnsInt refused, then the reader over the chunks refused, then it was asked for its best span
    assert final["fallbacks"] == ["integrate: the sub-answers gave no answer; answered from the contexts"]
    passages_prompt = model.prompts[-2]
    read = [item["text"] for item in final["evidence"] if item["text"].strip() in passages_prompt]
    assert 0 < sum(len(text.split()) for text in read) <= 1000  # the default word limit
    assert len(read) < len(final["evidence"])  # not every chunk: cut where the next would pass the limit
    assert model.prompts[-1].endswith(answer.REFUSAL_NUDGE)
    assert final["answer_outcome"] == "refused" and final["answer"] == ""


def test_context_integration_reads_the_chunks_not_the_sub_answers(services: Any, sample_index: str) -> None:
    _, final, model = run(services, sample_index, top_k=2, integration="contexts", word_limit=5000)
    final_prompt = model.prompts[-1]
    assert "Sub-questions and answers" not in final_prompt and "->" not in final_prompt
    assert final_prompt.count("\n\n[") + 1 == len(final["evidence"])  # all of them, within 5000 words
    assert f"Question: {QUESTION}" in final_prompt


def test_sub_questions_are_searched_dense_by_default_and_hybrid_on_request(
    services: Any, sample_index: str
) -> None:
    """The paper's baselines share its embedder (000 §4.1); hybrid search stays a named option."""
    assert NaiveQDContext().retrieval_mode == "dense"
    index = services.indexes.open(sample_index)
    searched = {
        mode: [[hit.chunk.id for hit in index.search(sub, 3, mode=mode)] for sub in SUBS]
        for mode in ("dense", "hybrid")
    }
    assert searched["dense"] != searched["hybrid"]  # the sample tells the two apart
    by_default, _, _ = run(services, sample_index, top_k=3)
    on_request, _, _ = run(services, sample_index, top_k=3, retrieval_mode="hybrid")
    for mode, updates in (("dense", by_default), ("hybrid", on_request)):
        gathered = [update["gathered"] for node, update in updates if node == "retrieve"]
        assert [[item["id"] for item in hits] for hits in gathered] == searched[mode], mode
