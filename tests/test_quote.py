"""QuOTE's index extra and graph over real Chroma and the real MiniLM embedder, with a scripted chat model in
place of the LLM: the questions written per chunk, resuming after kill -9 with no finished call made again
(counted), incremental builds for new documents, `--max-chunks`, the dry run's cost, and the graph's
wiring. The scripted model tests how the build and the graph use the LLM, never what an LLM would write."""

from __future__ import annotations

import json
import os
import re
import signal
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from graphs import quote
from graphs.quote.context import QuoteContext
from hopgraph import Settings
from hopgraph.api import question_cost, services_for
from hopgraph.cli import app
from nodes.llm import LLMGateway, ProviderError, RoleModel
from nodes.questions import LLMQuestionWriter
from stores.documents import Document
from stores.extras import ExtraMissingError
from stores.index import IndexParams, IndexStore
from stores.questions import (
    JOURNAL,
    QUESTIONS,
    QuestionJournal,
    QuestionParams,
    QuestionsExtra,
    WrittenChunk,
    read_journal,
)
from tests.embedders import minilm as new_minilm
from tests.scripted import (
    ScriptedChatModel,
    fail_from_call,
    field_of,
    killed_run,
    run_over_store,
    scripted_gateway,
    scripted_questions,
    scripted_writer,
)

SMALL = IndexParams(chunk_size=64, chunk_overlap=16)
PER_CHUNK = 3
DOCS = [
    Document(
        "curie",
        "Marie Curie",
        "Marie Curie was born in Warsaw in 1867. She moved to Paris in 1891 to study physics and "
        "mathematics at the Sorbonne. She discovered polonium and radium with her husband Pierre Curie in "
        "1898. She won the Nobel Prize in Physics in 1903 and the Nobel Prize in Chemistry in 1911, the "
        "first person to win two Nobel Prizes in different sciences.",
    ),
    Document(
        "bread",
        "Sourdough",
        "Sourdough bread is leavened by wild yeast and lactic acid bacteria instead of baker's yeast. A "
        "starter of flour and water ferments for days before it can raise a loaf. The acid gives the bread "
        "its sour taste and keeps it fresh for longer.",
    ),
    Document(
        "volcano",
        "Mount Etna",
        "Mount Etna on the east coast of Sicily is the tallest active volcano in Europe outside the "
        "Caucasus. Its eruptions have been recorded since 1500 BC, and the town of Catania at its foot was "
        "destroyed by lava in 1669.",
    ),
]
NEW_DOC = Document(
    "glacier",
    "Aletsch Glacier",
    "The Aletsch Glacier in the Bernese Alps of Switzerland is the largest glacier in the Alps, about 20 "
    "kilometres long, and it has retreated by more than three kilometres since 1870.",
)


def chunk_of(prompt: str) -> str:
    """The chunk a question writer's prompt asks about (its title and first words), to count calls by."""
    title = field_of(r"Passage title: (.*)", prompt)
    text = prompt.split(f"Passage title: {title}\n", 1)[1]
    return f"{title}: {text.split()[:6]}"


def build(
    store: IndexStore, embedder: Any, writer: LLMQuestionWriter, docs: list[Document], **params: Any
) -> Any:
    return store.build(
        "tiny",
        docs,
        embedder,
        SMALL,
        extras={QUESTIONS.name: QuestionParams(**{"per_chunk": PER_CHUNK, **params})},
        models={"question_writer": writer},
    )


def build_until_killed(root: str, calls_log: str, kill_at: int) -> None:
    """Build DOCS with a question writer that logs every call it starts and, on call `kill_at`, kills its
    own process with SIGKILL, as `kill -9` would, once the call before it is journaled."""
    store = IndexStore(Path(root))

    def reply(prompt: str) -> str:
        with open(calls_log, "a", encoding="utf-8") as log:
            log.write(chunk_of(prompt) + "\n")
        if len(Path(calls_log).read_text(encoding="utf-8").splitlines()) == kill_at:
            os.kill(os.getpid(), signal.SIGKILL)
        return scripted_questions(prompt)

    llm, _ = scripted_gateway(reply)
    build(store, new_minilm(), LLMQuestionWriter(llm, concurrency=1), DOCS)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, minilm: Any) -> tuple[IndexStore, Any, ScriptedChatModel]:
    """DOCS with questions, shared by the read-only tests: (store, build result, the scripted model)."""
    store = IndexStore(tmp_path_factory.mktemp("indexes"))
    writer, model = scripted_writer()
    return store, build(store, minilm, writer, DOCS), model


def test_one_call_per_chunk_and_every_question_stored_both_ways(
    built: tuple[IndexStore, Any, ScriptedChatModel], minilm: Any
) -> None:
    store, result, model = built
    info = result.manifest.extras[QUESTIONS.name]
    chunks = store.open("tiny", minilm).all_chunks()
    assert len(model.prompts) == info.chunks == info.written == len(chunks) > len(DOCS)
    assert info.reused == 0 and info.questions == PER_CHUNK * len(chunks)
    assert info.parse == {"kept": info.questions, "renumbered": info.questions}
    assert info.writer.startswith("scripted|questions-")

    build_dir = store.root / "tiny" / "current"
    journal = read_journal(build_dir / "questions" / JOURNAL)
    assert list(journal) == [chunk.id for chunk in chunks]
    with store.chroma.open("tiny", result.manifest.build_id, build_dir.resolve()) as collections:
        for name in ("questions", "question_chunks"):
            stored = collections.get(name).get(include=["documents", "metadatas"])
            assert sorted(stored["ids"]) == sorted(
                f"{chunk.id}?{n}" for chunk in chunks for n in range(PER_CHUNK)
            )
            by_id = dict(
                zip(stored["ids"], zip(stored["documents"], stored["metadatas"], strict=True), strict=True)
            )
            question, meta = by_id[f"{chunks[0].id}?1"]
            assert question == journal[chunks[0].id].questions[1] and meta == {
                "chunk_id": chunks[0].id,
                "number": 1,
            }


def test_an_entry_is_its_question_embedded_with_its_chunk(
    built: tuple[IndexStore, Any, ScriptedChatModel], minilm: Any
) -> None:
    store, _, _ = built
    index = store.open("tiny", minilm)
    chunk = index.all_chunks()[0]
    question = read_journal(store.root / "tiny" / "current" / "questions" / JOURNAL)[chunk.id].questions[0]
    vector = minilm.embed([f"{question}\n{chunk.indexed_text}"])[0]
    best = index.extra(QuestionsExtra).nearest_entries(vector, 1)[0]
    assert (best.chunk_id, best.question, best.number) == (chunk.id, question, 0)
    assert best.score == pytest.approx(1.0, abs=1e-4)


def test_resume_after_kill_9_makes_no_finished_call_again(tmp_path: Path, minilm: Any) -> None:
    calls_log = tmp_path / "calls.log"
    kill_at = 4
    root = str(tmp_path / "indexes")
    killed_run("tests.test_quote", "build_until_killed", root, str(calls_log), kill_at)

    store = IndexStore(tmp_path / "indexes")
    assert not store.exists("tiny")  # nothing half-written is visible to queries
    first_run = calls_log.read_text(encoding="utf-8").splitlines()
    finished = first_run[: kill_at - 1]
    (journal,) = (tmp_path / "indexes" / "tiny" / "builds").glob(f"*/questions/{JOURNAL}")
    assert len(read_journal(journal)) == len(finished)

    writer, model = scripted_writer()
    result = build(store, minilm, writer, DOCS)
    second_run = [chunk_of(prompt) for prompt in model.prompts]
    info = result.manifest.extras[QUESTIONS.name]
    assert result.status == "resumed"
    assert not set(second_run) & set(finished)
    assert len(second_run) == info.chunks - len(finished)
    assert info.written == info.chunks and info.questions == PER_CHUNK * info.chunks


def test_a_line_cut_by_a_kill_is_dropped_and_the_next_record_starts_clean(tmp_path: Path) -> None:
    path = tmp_path / JOURNAL
    whole = WrittenChunk("a#0", "d", 3, ["What is a?"], {"kept": 1})
    path.write_text(json.dumps(whole.__dict__) + "\n" + '{"chunk_id": "b#0", "dig', encoding="utf-8")
    journal = QuestionJournal(path)
    assert list(journal.records) == ["a#0"]
    journal.add(WrittenChunk("c#0", "e", 3, ["What is c?"], {"kept": 1}))
    journal.close()
    assert list(read_journal(path)) == ["a#0", "c#0"]


def test_a_new_document_is_the_only_one_asked_about(tmp_path: Path, minilm: Any) -> None:
    store = IndexStore(tmp_path / "indexes")
    writer, model = scripted_writer()
    first = build(store, minilm, writer, DOCS).manifest.extras[QUESTIONS.name]
    asked_before = len(model.prompts)

    result = build(store, minilm, writer, [*DOCS, NEW_DOC])
    info = result.manifest.extras[QUESTIONS.name]
    new_chunks = [chunk for chunk in store.open("tiny", minilm).all_chunks() if chunk.doc_id == "glacier"]
    asked_now = [chunk_of(prompt) for prompt in model.prompts[asked_before:]]
    assert asked_now and all(call.startswith("Aletsch Glacier:") for call in asked_now)
    assert len(asked_now) == len(new_chunks) == info.written
    assert info.reused == first.chunks and info.chunks == first.chunks + len(new_chunks)

    edited = [DOCS[0], DOCS[1], Document("volcano", "Mount Etna", DOCS[2].text + " It last erupted in 2024.")]
    before_edit = len(model.prompts)
    build(store, minilm, writer, edited)
    assert {chunk_of(p).split(":")[0] for p in model.prompts[before_edit:]} == {"Mount Etna"}


def test_max_chunks_asks_about_the_first_chunks_and_a_full_build_reuses_them(
    tmp_path: Path, minilm: Any
) -> None:
    store = IndexStore(tmp_path / "indexes")
    writer, model = scripted_writer()
    trial = build(store, minilm, writer, DOCS, max_chunks=2).manifest.extras[QUESTIONS.name]
    assert len(model.prompts) == trial.chunks == 2 and trial.questions == 2 * PER_CHUNK
    full = build(store, minilm, writer, DOCS).manifest.extras[QUESTIONS.name]
    assert len(model.prompts) == full.chunks and full.reused == 2


def run_quote(
    store: IndexStore, services: Any, question: str, **context: Any
) -> tuple[list[str], dict[str, Any], ScriptedChatModel]:
    """(nodes in the order they ran, the final state, the scripted reader) of a `quote` run over `store`."""
    return run_over_store(quote.build, store, services, question, QuoteContext(index="tiny", **context))


def test_quote_reads_the_top_k_distinct_chunks_its_questions_lead_to(
    built: tuple[IndexStore, Any, ScriptedChatModel], services: Any
) -> None:
    store, _, _ = built
    steps, out, reader = run_quote(
        store, services, "What did Marie Curie discover with her husband?", top_k=2
    )
    assert steps == ["retrieve", "generate"] and out["answer"] == "radium"
    evidence, hits = out["evidence"], out["question_hits"]
    assert len(evidence) == 2 == len({item["id"] for item in evidence})
    assert all(item["doc_id"] == "curie" and item["hop"] == 1 for item in evidence)
    # each chunk scores as its best question, and every hit shown belongs to a kept chunk, in rank order
    best = {
        item["id"]: max(hit["score"] for hit in hits if hit["chunk_id"] == item["id"]) for item in evidence
    }
    assert [item["score"] for item in evidence] == [best[item["id"]] for item in evidence]
    assert {hit["chunk_id"] for hit in hits} == set(best)
    assert [hit["rank"] for hit in hits] == sorted(hit["rank"] for hit in hits)
    assert max(hit["rank"] for hit in hits) <= 2 * 10  # k x M entries searched
    assert all(item["text"] in reader.prompts[0] for item in evidence)


def test_quote_widens_its_search_until_k_distinct_chunks_are_found(
    built: tuple[IndexStore, Any, ScriptedChatModel], services: Any
) -> None:
    store, result, _ = built
    chunks = result.manifest.extras[QUESTIONS.name].chunks
    _, out, _ = run_quote(store, services, "Where is Mount Etna?", top_k=chunks, over_retrieve=1)
    assert len({item["id"] for item in out["evidence"]}) == chunks


def test_quote_on_an_index_without_questions_names_the_command_that_adds_them(
    tmp_path: Path, services: Any, minilm: Any
) -> None:
    store = IndexStore(tmp_path / "indexes")
    store.build("tiny", DOCS, minilm, SMALL)
    with pytest.raises(ExtraMissingError, match="--with questions"):
        run_quote(store, services, "Where is Mount Etna?")


def corpus_folder(tmp_path: Path, docs: list[Document]) -> Path:
    folder = tmp_path / "corpus"
    folder.mkdir(exist_ok=True)
    for doc in docs:
        (folder / f"{doc.id}.md").write_text(f"# {doc.title}\n\n{doc.text}\n", encoding="utf-8")
    return folder


def test_dry_run_counts_the_calls_times_a_warm_up_and_builds_nothing(
    tmp_path: Path, settings: Settings, scripted_cli: ScriptedChatModel
) -> None:
    corpus = corpus_folder(tmp_path, DOCS)
    args = [
        "index",
        str(corpus),
        "--name",
        "quote-dry",
        "--method",
        "quote",
        "--dry-run",
        "--max-chunks",
        "3",
    ]
    shown = CliRunner().invoke(app, args)
    assert shown.exit_code == 0, shown.output
    assert re.search(
        r"dry run: questions for 3 of \d+ chunks \(--max-chunks 3\); 0 of them already", shown.output
    )
    assert "LLM calls: 3 (one per chunk), questions: up to 30 (10 per chunk)" in shown.output
    assert "warm-up: 2 call(s)" in shown.output and "for the 3 calls, 1 at a time" in shown.output
    assert len(scripted_cli.prompts) == 2
    assert not services_for(settings).indexes.store.exists("quote-dry")

    cost = question_cost(corpus, "quote-dry", settings, method="quote", warmup=0)
    assert cost.calls == cost.asked_about == cost.chunks and cost.estimate_seconds is None


def test_dry_run_after_an_interrupted_build_counts_only_the_calls_it_has_left(
    tmp_path: Path, settings: Settings, scripted_cli: ScriptedChatModel
) -> None:
    corpus = corpus_folder(tmp_path, DOCS)
    args = ["index", str(corpus), "--name", "quote-interrupted", "--method", "quote"]
    before = question_cost(corpus, "quote-interrupted", settings, method="quote", warmup=0)
    fail_from_call(scripted_cli, 3, scripted_questions)
    stopped = CliRunner().invoke(app, args)
    assert stopped.exit_code != 0 and not services_for(settings).indexes.store.exists("quote-interrupted")

    after = question_cost(corpus, "quote-interrupted", settings, method="quote", warmup=0)
    assert (before.reused, before.calls) == (0, before.asked_about)
    assert (after.reused, after.calls) == (2, before.calls - 2)
    scripted_cli.reply = scripted_questions
    resumed = CliRunner().invoke(app, args)
    assert resumed.exit_code == 0, resumed.output
    assert len(scripted_cli.prompts) == 3 + after.calls  # the failed call is asked again, no written one


def test_index_method_quote_prints_questions_parser_counts_and_llm_cost(
    tmp_path: Path, settings: Settings, scripted_cli: ScriptedChatModel
) -> None:
    corpus = corpus_folder(tmp_path, DOCS)
    args = ["index", str(corpus), "--name", "quote-cli", "--method", "quote", "--questions-per-chunk", "4"]
    shown = CliRunner().invoke(app, [*args, "--max-chunks", "2"])
    assert shown.exit_code == 0, shown.output
    assert (
        "questions: 8 for 2 chunks (the first 2), 4 asked per chunk; 2 chunks written by the LLM"
        in shown.output
    )
    assert "parser: kept 8, renumbered 8" in shown.output
    assert "LLM this run: 2 calls" in shown.output

    again = CliRunner().invoke(app, args)
    assert again.exit_code == 0, again.output
    manifest = services_for(settings).indexes.store.current_manifest("quote-cli")
    info = manifest.extras[QUESTIONS.name]
    assert info.reused == 2 and len(scripted_cli.prompts) == info.chunks == manifest.chunks


def test_ask_shows_the_questions_that_retrieved_each_passage(
    tmp_path: Path, settings: Settings, scripted_cli: ScriptedChatModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    corpus = corpus_folder(tmp_path, DOCS)
    built = CliRunner().invoke(app, ["index", str(corpus), "--name", "quote-ask", "--method", "quote"])
    assert built.exit_code == 0, built.output
    reader, _ = scripted_gateway(lambda _prompt: "Warsaw")
    monkeypatch.setitem(services_for(settings)._built, "llm", reader)
    asked = CliRunner().invoke(
        app, ["ask", "Where was Marie Curie born?", "--index", "quote-ask", "--method", "quote", "--k", "2"]
    )
    assert asked.exit_code == 0, asked.output
    shown = re.findall(r"question #(\d+)\s+hop 1 [\d.]+ (What does .*?) (curie\.md#\d)", asked.output)
    assert shown and all(title.startswith("What does Marie Curie say about") for _, title, _ in shown)
    assert "Answer: Warsaw" in asked.output


def test_question_options_without_the_questions_extra_say_how_to_add_it(
    tmp_path: Path, scripted_cli: ScriptedChatModel
) -> None:
    corpus = corpus_folder(tmp_path, DOCS)
    shown = CliRunner().invoke(
        app, ["index", str(corpus), "--name", "plain", "--method", "naive", "--max-chunks", "2"]
    )
    assert shown.exit_code != 0 and "--with questions" in str(shown.exception)


def test_a_remote_writer_works_concurrently_and_an_in_process_one_serially(
    tmp_path: Path, minilm: Any
) -> None:
    llm, model = scripted_gateway(scripted_questions)  # a scripted model is not exclusive, as a remote one
    writer = LLMQuestionWriter(llm, concurrency=3)
    assert writer.concurrency == 3
    store = IndexStore(tmp_path / "indexes")
    info = build(store, minilm, writer, DOCS).manifest.extras[QUESTIONS.name]
    assert len(model.prompts) == len(set(model.prompts)) == info.chunks == info.written
    journal = read_journal(store.root / "tiny" / "current" / "questions" / JOURNAL)
    assert sorted(journal) == sorted(chunk.id for chunk in store.open("tiny", minilm).all_chunks())

    exclusive = LLMGateway({}, RoleModel(model, "scripted", "scripted chat model", exclusive=True))
    assert LLMQuestionWriter(exclusive, concurrency=3).concurrency == 1


def test_a_provider_failure_keeps_the_finished_chunks_for_the_next_run(tmp_path: Path, minilm: Any) -> None:
    def fail_on_third(prompt: str) -> str:
        if len(failing_model.prompts) == 3:
            raise ConnectionError("server went away")
        return scripted_questions(prompt)

    llm, failing_model = scripted_gateway(fail_on_third)
    store = IndexStore(tmp_path / "indexes")
    with pytest.raises(ProviderError, match="question_writer"):
        build(store, minilm, LLMQuestionWriter(llm, concurrency=1), DOCS)
    assert not store.exists("tiny")
    (journal,) = (store.root / "tiny" / "builds").glob(f"*/questions/{JOURNAL}")
    finished = read_journal(journal)  # the calls before the failure, and any the worker had already begun
    failed = chunk_of(failing_model.prompts[2])
    assert len(finished) >= 2 and len(failing_model.prompts) == len(finished) + 1

    writer, model = scripted_writer()
    info = build(store, minilm, writer, DOCS).manifest.extras[QUESTIONS.name]
    asked_again = [chunk_of(prompt) for prompt in model.prompts]
    assert failed in asked_again and len(asked_again) == info.chunks - len(finished)


def test_another_model_writes_every_question_again(tmp_path: Path, minilm: Any) -> None:
    store = IndexStore(tmp_path / "indexes")
    writer, _ = scripted_writer()
    first = build(store, minilm, writer, DOCS).manifest
    _, other_model = scripted_gateway(scripted_questions)
    other = LLMGateway({}, RoleModel(other_model, "another-model", "another scripted chat model"))
    second = build(store, minilm, LLMQuestionWriter(other, concurrency=1), DOCS).manifest
    assert second.build_id != first.build_id
    assert len(other_model.prompts) == second.extras[QUESTIONS.name].written == first.chunks


def test_questions_written_for_several_chunks_come_back_in_chunk_order_every_time(
    tmp_path: Path, minilm: Any
) -> None:
    """The same question written for several chunks embeds to the same vector; Chroma returns such ties in
    no fixed order, which once made BiQOG's seeds differ between two runs of one question. Ties come back
    ordered by chunk id, the same in every process (a reopened store included)."""

    def same_first_question(prompt: str) -> str:
        return "1. Who was it?\n" + scripted_questions(prompt).split("\n", 1)[1]

    llm, _ = scripted_gateway(same_first_question)
    build(IndexStore(tmp_path), minilm, LLMQuestionWriter(llm, concurrency=1), DOCS)
    vector = minilm.embed(["Who was it?"])[0]
    first = IndexStore(tmp_path).open("tiny", minilm).extra(QuestionsExtra).nearest_questions(vector, 2)
    tied = [("Who was it?", "bread#0"), ("Who was it?", "curie#0")]
    assert [(m.question, m.chunk_id) for m in first] == tied
    for _ in range(3):
        reopened = IndexStore(tmp_path).open("tiny", minilm).extra(QuestionsExtra)
        assert reopened.nearest_questions(vector, 2) == first
