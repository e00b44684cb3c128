"""BiQOG's edge formation (the `question_graph` extra) over real Chroma and the real MiniLM embedder, with a
scripted chat model in place of the LLM: yes / no / malformed verdicts, the chunk-first call order, resuming
after kill -9 with no judge call made again (counted), and the incremental update for a new document. The
scripted model tests how the build uses the judge, never what an LLM would judge."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from nodes.edge_judge import LLMEdgeJudge
from nodes.llm import LLMGateway, RoleModel
from nodes.questions import LLMQuestionWriter
from prompts import edge_judge
from stores.index import IndexStore
from stores.question_graph import (
    GRAPH_FILE,
    JOURNAL,
    QUESTION_GRAPH,
    QuestionGraphExtra,
    QuestionGraphParams,
    read_judgements,
)
from stores.questions import QUESTIONS, QuestionParams
from tests.embedders import minilm as new_minilm
from tests.scripted import ScriptedChatModel, field_of, killed_run, scripted_gateway, scripted_questions
from tests.test_quote import DOCS, NEW_DOC, PER_CHUNK, SMALL

CANDIDATES = 2
UNSURE_TITLE = "Sourdough"  # the scripted judge answers neither Yes nor No about this document's chunks


def is_judge_call(prompt: str) -> bool:
    return edge_judge.SYSTEM in prompt


def judged_pair(prompt: str) -> tuple[str, str]:
    """(the chunk a judge prompt shows, by its title and first words; the question it asks about)."""
    title = field_of(r"Passage title: (.*)", prompt)
    text = prompt.split(f"Passage title: {title}\n", 1)[1]
    return f"{title}: {text.split()[:6]}", field_of(r"Question: (.*)", prompt)


def scripted_reply(prompt: str) -> str:
    """Questions for the writer (each names its chunk's title); for the judge, "Yes" when the question names
    the chunk's title, a remark that is neither Yes nor No for the Sourdough chunks, "No" otherwise."""
    if not is_judge_call(prompt):
        return scripted_questions(prompt)
    title = field_of(r"Passage title: (.*)", prompt)
    if title == UNSURE_TITLE:
        return "It is hard to say from this passage."
    return "Yes, it does." if title in field_of(r"Question: (.*)", prompt) else "No."


def scripted_models(reply: Any = scripted_reply) -> tuple[dict[str, Any], ScriptedChatModel]:
    llm, model = scripted_gateway(reply)
    return {"question_writer": LLMQuestionWriter(llm, 1), "edge_judge": LLMEdgeJudge(llm, 1)}, model


def build(store: IndexStore, embedder: Any, models: dict[str, Any], docs: list[Any]) -> Any:
    return store.build(
        "tiny",
        docs,
        embedder,
        SMALL,
        extras={
            QUESTIONS.name: QuestionParams(per_chunk=PER_CHUNK),
            QUESTION_GRAPH.name: QuestionGraphParams(candidates=CANDIDATES),
        },
        models=models,
    )


def build_until_killed(root: str, calls_log: str, kill_at: int) -> None:
    """Build DOCS with a judge that logs every judge call it starts and, on judge call `kill_at`, kills its
    own process with SIGKILL, as `kill -9` would, once the call before it is journaled."""

    def reply(prompt: str) -> str:
        if is_judge_call(prompt):
            with open(calls_log, "a", encoding="utf-8") as log:
                log.write(repr(judged_pair(prompt)) + "\n")
            if len(Path(calls_log).read_text(encoding="utf-8").splitlines()) == kill_at:
                os.kill(os.getpid(), signal.SIGKILL)
        return scripted_reply(prompt)

    build(IndexStore(Path(root)), new_minilm(), scripted_models(reply)[0], DOCS)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, minilm: Any) -> tuple[IndexStore, Any, ScriptedChatModel]:
    store = IndexStore(tmp_path_factory.mktemp("indexes"))
    models, model = scripted_models()
    return store, build(store, minilm, models, DOCS), model


def test_verdict_is_the_first_word_and_anything_else_is_malformed() -> None:
    assert [
        edge_judge.verdict(reply) for reply in ("Yes", " yes.", "YES, it does", "No", "no - it does not")
    ] == [
        "yes",
        "yes",
        "yes",
        "no",
        "no",
    ]
    assert {edge_judge.verdict(reply) for reply in ("", "Maybe", "The answer is yes", "Yesterday")} == {
        "malformed"
    }


def test_each_question_is_judged_against_its_chunk_and_its_nearest_and_only_yes_makes_an_edge(
    built: tuple[IndexStore, Any, ScriptedChatModel], minilm: Any
) -> None:
    store, result, model = built
    index = store.open("tiny", minilm)
    chunks = {chunk.id: chunk for chunk in index.all_chunks()}
    info = result.manifest.extras[QUESTION_GRAPH.name]
    questions = result.manifest.extras[QUESTIONS.name].questions
    judge_prompts = [prompt for prompt in model.prompts if is_judge_call(prompt)]
    assert info.questions == questions and info.pairs == questions * (1 + CANDIDATES) == len(judge_prompts)
    assert info.judged == info.pairs and info.reused == 0
    assert info.judge.startswith("scripted|edge-judge-")

    journal = read_judgements(store.root / "tiny" / "current" / "question_graph" / JOURNAL)
    graph = index.extra(QuestionGraphExtra)
    unsure = {chunk_id for chunk_id, chunk in chunks.items() if chunk.title == UNSURE_TITLE}
    assert info.verdicts == {
        "yes": sum(record.verdict == "yes" for record in journal.values()),
        "no": sum(record.verdict == "no" for record in journal.values()),
        "malformed": sum(chunk_id in unsure for _, chunk_id in journal),
    }
    assert info.verdicts["yes"] and info.verdicts["no"] and info.verdicts["malformed"]
    assert info.edges == info.verdicts["yes"]
    for (question_id, chunk_id), record in journal.items():
        question = graph.question(question_id)
        expected = chunks[chunk_id].title in question and chunk_id not in unsure
        assert (chunk_id in graph.chunks_of([question_id])) == expected == (record.verdict == "yes")
        assert (question_id in graph.questions_of([chunk_id])) == expected
    # every question is judged against its own chunk
    assert all((question_id, question_id.split("?")[0]) in journal for question_id, _ in journal)


def test_the_chunk_comes_before_the_question_and_calls_go_chunk_by_chunk(
    built: tuple[IndexStore, Any, ScriptedChatModel],
) -> None:
    _, _, model = built
    judge_prompts = [prompt for prompt in model.prompts if is_judge_call(prompt)]
    assert all(prompt.index("Passage title:") < prompt.index("Question:") for prompt in judge_prompts)
    chunk_order = [judged_pair(prompt)[0] for prompt in judge_prompts]
    runs = [
        chunk for number, chunk in enumerate(chunk_order) if number == 0 or chunk != chunk_order[number - 1]
    ]
    assert len(runs) == len(set(chunk_order))  # each chunk's calls are one unbroken run


def test_the_graph_is_arrays_loaded_from_one_file(built: tuple[IndexStore, Any, ScriptedChatModel]) -> None:
    store, result, _ = built
    with np.load(store.root / "tiny" / "current" / "question_graph" / GRAPH_FILE) as graph:
        assert (
            int(graph["question_indptr"][-1])
            == int(graph["chunk_indptr"][-1])
            == result.manifest.extras[QUESTION_GRAPH.name].edges
        )


def test_resume_after_kill_9_makes_no_judge_call_again(tmp_path: Path, minilm: Any) -> None:
    calls_log = tmp_path / "calls.log"
    kill_at = 7
    killed_run(
        "tests.test_biqog_edges", "build_until_killed", str(tmp_path / "indexes"), str(calls_log), kill_at
    )

    store = IndexStore(tmp_path / "indexes")
    assert not store.exists("tiny")  # nothing half-written is visible to queries
    finished = calls_log.read_text(encoding="utf-8").splitlines()[: kill_at - 1]
    (journal,) = (tmp_path / "indexes" / "tiny" / "builds").glob(f"*/question_graph/{JOURNAL}")
    assert len(read_judgements(journal)) == len(finished)

    models, model = scripted_models()
    result = build(store, minilm, models, DOCS)
    second_run = [repr(judged_pair(prompt)) for prompt in model.prompts if is_judge_call(prompt)]
    info = result.manifest.extras[QUESTION_GRAPH.name]
    assert result.status == "resumed"
    assert len(second_run) == len(model.prompts)  # every question was journaled before the kill
    assert not set(second_run) & set(finished)
    assert len(second_run) == info.pairs - len(finished) and info.judged == info.pairs


def test_a_new_document_is_judged_only_where_it_is_new(tmp_path: Path, minilm: Any) -> None:
    store = IndexStore(tmp_path / "indexes")
    models, model = scripted_models()
    first = build(store, minilm, models, DOCS).manifest.extras[QUESTION_GRAPH.name]
    before = len(model.prompts)

    info = build(store, minilm, models, [*DOCS, NEW_DOC]).manifest.extras[QUESTION_GRAPH.name]
    judged_now = [judged_pair(prompt) for prompt in model.prompts[before:] if is_judge_call(prompt)]
    assert judged_now and len(judged_now) == info.judged
    assert all(
        chunk.startswith(f"{NEW_DOC.title}:") or NEW_DOC.title in question for chunk, question in judged_now
    )
    assert info.reused == info.pairs - info.judged and info.reused <= first.pairs


def test_no_questions_kept_makes_an_empty_graph_not_an_error(tmp_path: Path, minilm: Any) -> None:
    store = IndexStore(tmp_path / "indexes")
    models, model = scripted_models(lambda prompt: "No." if is_judge_call(prompt) else "")
    info = build(store, minilm, models, DOCS).manifest.extras[QUESTION_GRAPH.name]
    assert (info.questions, info.pairs, info.edges) == (0, 0, 0)
    assert not any(is_judge_call(prompt) for prompt in model.prompts)
    assert store.open("tiny", minilm).extra(QuestionGraphExtra).chunks_of([]) == []


def test_a_remote_judge_works_concurrently_and_an_in_process_one_serially(
    tmp_path: Path, minilm: Any
) -> None:
    llm, model = scripted_gateway(scripted_reply)  # a scripted model is not exclusive, as a remote one
    models = {"question_writer": LLMQuestionWriter(llm, 1), "edge_judge": LLMEdgeJudge(llm, concurrency=3)}
    assert models["edge_judge"].concurrency == 3
    store = IndexStore(tmp_path / "indexes")
    info = build(store, minilm, models, DOCS).manifest.extras[QUESTION_GRAPH.name]
    judged = [judged_pair(prompt) for prompt in model.prompts if is_judge_call(prompt)]
    assert len(judged) == len(set(judged)) == info.pairs == info.judged
    assert len(read_judgements(store.root / "tiny" / "current" / "question_graph" / JOURNAL)) == info.pairs

    exclusive = LLMGateway({}, RoleModel(model, "scripted", "scripted chat model", exclusive=True))
    assert LLMEdgeJudge(exclusive, concurrency=3).concurrency == 1
