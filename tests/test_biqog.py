"""BiQOG's traversal on a small hand-built graph with known answers, and the `biqog` graph's wiring over a
real index (real Chroma, MiniLM and reranker) whose questions and edges a scripted chat model made."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from benchmarks.question_retrieval import by_hop_scores
from evals.datasets import load_benchmark
from evals.metrics import multihop_rag_official
from evals.runner import ranked_evidence, read_records
from graphs import biqog
from graphs.biqog.context import BiqogContext
from graphs.biqog.steps import traverse
from graphs.registry import extras_for
from hopgraph import Settings, cli
from hopgraph.api import methods, services_for
from hopgraph.cli import app
from hopgraph.evaluate import index_name
from stores.extras import ExtraMissingError
from stores.index import IndexStore
from stores.question_graph import (
    QUESTION_GRAPH,
    QuestionGraph,
    QuestionGraphInfo,
    QuestionGraphParams,
    write_graph,
)
from stores.questions import QUESTIONS, QuestionParams, StoredQuestion
from tests.scripted import ScriptedChatModel, fail_from_call, run_over_store, scripted_gateway
from tests.test_biqog_edges import build, scripted_models, scripted_reply
from tests.test_question_retrieval import article, query
from tests.test_quote import DOCS, PER_CHUNK, SMALL, corpus_folder

# q1 - a, b;  q2 - b, c;  q3 - c, d;  q4 - e.  From q1: hop 1 reaches a and b, hop 2 (through q2, which b
# shares with q1) reaches c, hop 3 (through q3) reaches d; e is never reached. Scores are the "reranker's".
QUESTIONS_BUILT = [
    StoredQuestion(f"{chunk}?0", f"question {number}?", chunk) for number, chunk in enumerate("abce", 1)
]
EDGES = [("a?0", "a"), ("a?0", "b"), ("b?0", "b"), ("b?0", "c"), ("c?0", "c"), ("c?0", "d"), ("e?0", "e")]
SCORES = {"a": 0.9, "b": 0.5, "c": 0.8, "d": 0.7, "e": 1.0}


@pytest.fixture(scope="module")
def hand_built(tmp_path_factory: pytest.TempPathFactory) -> QuestionGraph:
    directory = tmp_path_factory.mktemp("question_graph")
    write_graph(directory, QUESTIONS_BUILT, list("abcde"), EDGES)
    info = QuestionGraphInfo(
        QuestionGraphParams(), "hand", len(QUESTIONS_BUILT), len(EDGES), len(EDGES), 0, 0
    )
    return QuestionGraph(directory, info, questions=None)  # type: ignore[arg-type]  # the walk searches nothing


def scored(chunk_ids: list[str]) -> list[float]:
    return [SCORES[chunk_id] for chunk_id in chunk_ids]


def test_the_graph_reads_back_both_ways(hand_built: QuestionGraph) -> None:
    assert hand_built.chunks_of(["a?0", "b?0"]) == ["a", "b", "c"]
    assert hand_built.questions_of(["b", "c"]) == ["a?0", "b?0", "c?0"]
    assert hand_built.question("c?0") == "question 3?"


@pytest.mark.parametrize(
    ("hops", "width", "reached", "hop_of"),
    [
        (1, 5, ["a", "b"], {"a": 1, "b": 1}),
        (2, 5, ["a", "c", "b"], {"a": 1, "b": 1, "c": 2}),
        (3, 5, ["a", "c", "d", "b"], {"a": 1, "b": 1, "c": 2, "d": 3}),
        # width 1 keeps only a, whose only question is the seed: the walk ends without reaching c
        (3, 1, ["a", "b"], {"a": 1, "b": 1}),
    ],
)
def test_a_walk_reaches_what_its_hops_and_width_allow(
    hand_built: QuestionGraph, hops: int, width: int, reached: list[str], hop_of: dict[str, int]
) -> None:
    walk = traverse(hand_built, ["a?0"], scored, hops, width)
    assert walk.best(10) == reached and walk.hops == hop_of
    assert walk.best(2) == reached[:2]


def test_the_final_rerank_judges_all_collected_chunks_together(hand_built: QuestionGraph) -> None:
    """With a reranker whose scores are relative to the chunks it is given (as rank fusion's are), each
    hop's best chunk scores 1.0: hop 1's a (0.6 of the truth) would tie hop 2's c (0.95) and, collected
    first, come first. Scored once more together, c is first, then a, then b."""
    truth = {"a": 0.6, "b": 0.3, "c": 0.95}
    calls: list[list[str]] = []

    def relative(chunk_ids: list[str]) -> list[float]:
        calls.append(chunk_ids)
        top = max(truth[chunk_id] for chunk_id in chunk_ids)
        return [truth[chunk_id] / top for chunk_id in chunk_ids]

    walk = traverse(hand_built, ["a?0"], relative, hops=2, width=2)
    assert walk.scores == {"a": 1.0, "b": 0.5, "c": 1.0}  # each hop judged among its own chunks
    assert calls == [["a", "b"], ["c"], ["a", "b", "c"]]  # one last call over everything collected
    assert walk.best(3) == ["c", "a", "b"]
    assert walk.final == pytest.approx({"a": 0.6 / 0.95, "b": 0.3 / 0.95, "c": 1.0})
    # the order before issue 39, which the retrieval benchmark rebuilds from the path: a and c tie
    assert by_hop_scores(walk.path, 3) == [("a", 1.0, 1), ("c", 1.0, 2), ("b", 0.5, 1)]


def test_the_path_shows_each_hops_questions_chunks_and_their_hop_scores(hand_built: QuestionGraph) -> None:
    hop_1 = {"hop": 1, "questions": ["question 1?"], "chunks": ["a", "b"], "scores": [0.9, 0.5]}
    walk = traverse(hand_built, ["a?0"], scored, hops=3, width=1)
    assert walk.path == [{**hop_1, "kept": ["a"]}]
    walk = traverse(hand_built, ["a?0"], scored, hops=2, width=2)
    assert walk.path == [
        {**hop_1, "kept": ["a", "b"]},
        {"hop": 2, "questions": ["question 2?"], "chunks": ["c"], "scores": [0.8], "kept": ["c"]},
    ]


def test_the_ask_trace_shows_each_hop_with_the_hop_scores_of_the_chunks_it_kept(
    hand_built: QuestionGraph,
) -> None:
    walk = traverse(hand_built, ["a?0"], scored, hops=2, width=1)
    with cli.console.capture() as captured:
        cli._show_update("retrieve", {"traversal": walk.path}, 0.01)
    hop_line = captured.get().splitlines()[1]
    assert "hop 1 from 1 question(s): 2 new chunk(s), kept a 0.900" in hop_line and "0.500" not in hop_line
    # a thread checkpointed before the hops recorded scores still shows in `hopgraph history`
    unscored = [{key: value for key, value in hop.items() if key != "scores"} for hop in walk.path]
    with cli.console.capture() as captured:
        cli._show_update("retrieve", {"traversal": unscored}, 0.01)
    assert "2 new chunk(s), kept a" in captured.get()


def test_biqog_is_a_method_with_the_question_graph_extra() -> None:
    assert "biqog" in methods() and extras_for("biqog") == ("question_graph",)
    with pytest.raises(ValueError, match="width must be at least 1"):
        BiqogContext(width=0)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, minilm: Any) -> IndexStore:
    store = IndexStore(tmp_path_factory.mktemp("indexes"))
    build(store, minilm, scripted_models()[0], DOCS)
    return store


def run_biqog(
    store: IndexStore, services: Any, question: str, **context: Any
) -> tuple[list[str], dict[str, Any], ScriptedChatModel]:
    """(nodes in the order they ran, the final state, the scripted reader) of a `biqog` run over `store`."""
    return run_over_store(biqog.build, store, services, question, BiqogContext(index="tiny", **context))


def test_biqog_reads_the_best_chunks_its_walk_collected(built: IndexStore, services: Any) -> None:
    question = "What did Marie Curie discover with her husband?"
    steps, out, reader = run_biqog(built, services, question, seeds=2, hops=2, width=2, top_k=2)
    assert steps == ["retrieve", "generate"] and out["answer"] == "radium"
    seeds, path, evidence = out["question_hits"], out["traversal"], out["evidence"]
    assert [hit["rank"] for hit in seeds] == [1, 2] and all(hit["hop"] == 1 for hit in seeds)
    assert path[0]["hop"] == 1 and path[0]["questions"] == [hit["question"] for hit in seeds]
    assert all(len(hop["kept"]) <= 2 and hop["kept"] == hop["chunks"][: len(hop["kept"])] for hop in path)
    collected = {chunk_id: hop["hop"] for hop in path for chunk_id in hop["chunks"]}
    assert len(evidence) == 2 and all(collected[item["id"]] == item["hop"] for item in evidence)
    assert all(item["doc_id"] == "curie" for item in evidence)
    reranked = services.reranker.score(question, [item["text"] for item in evidence])
    assert [item["score"] for item in evidence] == pytest.approx(reranked, abs=1e-5)
    assert evidence[0]["score"] >= evidence[1]["score"]
    assert all(item["text"] in reader.prompts[0] for item in evidence)


def test_biqog_reader_reads_the_final_rerank_best_first_and_records_it(
    built: IndexStore, services: Any
) -> None:
    """The final rerank's order is what the reader reads and what retrieval is scored in (`read`), while
    `evidence` keeps each chunk at the hop that collected it, in hop order."""
    question = "What did Marie Curie discover with her husband?"
    _, out, reader = run_biqog(built, services, question, seeds=2, hops=2, width=2, top_k=4)
    by_id = {item["id"]: item for item in out["evidence"]}
    assert sorted(out["read"]) == sorted(by_id) and len(by_id) >= 2
    scores = [by_id[item_id]["score"] for item_id in out["read"]]
    assert scores == sorted(scores, reverse=True)
    assert [item["hop"] for item in out["evidence"]] == sorted(item["hop"] for item in out["evidence"])
    prompt = reader.prompts[0]
    places = [prompt.index(by_id[item_id]["text"].strip()[:60]) for item_id in out["read"]]
    assert places == sorted(places)  # the prompt lists the passages best first


def test_biqog_on_an_index_without_the_graph_names_the_command_that_adds_it(
    tmp_path: Path, services: Any, minilm: Any
) -> None:
    store = IndexStore(tmp_path / "indexes")
    writer = scripted_models()[0]["question_writer"]
    store.build(
        "tiny",
        DOCS,
        minilm,
        SMALL,
        extras={QUESTIONS.name: QuestionParams(per_chunk=PER_CHUNK)},
        models={"question_writer": writer},
    )
    with pytest.raises(ExtraMissingError, match=f"--with {QUESTION_GRAPH.name}"):
        run_biqog(store, services, "Where is Mount Etna?")


def test_dry_run_counts_the_judge_calls_and_times_a_warm_up_of_them(
    tmp_path: Path, settings: Settings, scripted_cli: ScriptedChatModel, scripted_judge_cli: ScriptedChatModel
) -> None:
    corpus = corpus_folder(tmp_path, DOCS)
    args = ["index", str(corpus), "--name", "biqog-dry", "--method", "biqog", "--dry-run"]
    shown = CliRunner().invoke(app, [*args, "--max-chunks", "2", "--candidates", "1"])
    assert shown.exit_code == 0, shown.output
    assert "LLM calls: 2 (one per chunk), questions: up to 20 (10 per chunk)" in shown.output
    assert "judge calls: at most 40 (20 questions x (1 own + 1 nearest) chunks, less 0" in shown.output
    assert "judge warm-up: 2 call(s)" in shown.output and "for the 40 calls, 1 at a time" in shown.output
    assert len(scripted_cli.prompts) == 2 and len(scripted_judge_cli.prompts) == 2
    assert not services_for(settings).indexes.store.exists("biqog-dry")


def test_dry_run_after_a_judge_failure_counts_the_verdicts_the_interrupted_build_holds(
    tmp_path: Path, settings: Settings, scripted_cli: ScriptedChatModel, scripted_judge_cli: ScriptedChatModel
) -> None:
    corpus = corpus_folder(tmp_path, DOCS)
    args = ["index", str(corpus), "--name", "biqog-stopped", "--method", "biqog", "--max-chunks", "2"]
    args += ["--questions-per-chunk", "2", "--candidates", "1"]
    fail_from_call(scripted_judge_cli, 4, scripted_reply)
    stopped = CliRunner().invoke(app, args)
    assert stopped.exit_code != 0 and "the provider went away" in str(stopped.exception)

    shown = CliRunner().invoke(app, [*args, "--dry-run"])
    assert shown.exit_code == 0, shown.output
    assert "2 of them already written (by the current build, or by an interrupted run" in shown.output
    assert "LLM calls: 0 (one per chunk)" in shown.output
    assert "judge calls: at most 5 (4 questions x (1 own + 1 nearest) chunks, less 3 verdicts" in shown.output
    assert len(scripted_cli.prompts) == 2  # no warm-up: nothing is left to write


def test_index_method_biqog_prints_the_graph_and_ask_shows_the_walk(
    tmp_path: Path, settings: Settings, scripted_judge_cli: ScriptedChatModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    corpus = corpus_folder(tmp_path, DOCS)
    args = ["index", str(corpus), "--name", "biqog-cli", "--method", "biqog", "--questions-per-chunk", "2"]
    built = CliRunner().invoke(app, [*args, "--candidates", "1"])
    assert built.exit_code == 0, built.output
    info = services_for(settings).indexes.store.current_manifest("biqog-cli").extras[QUESTION_GRAPH.name]
    assert info.pairs == 2 * info.questions and len(scripted_judge_cli.prompts) == info.pairs
    assert f"question graph: {info.edges} edges from {info.pairs} judged pairs" in built.output
    assert re.search(r"verdicts: yes \d+, no \d+, malformed \d+", built.output)
    assert f"LLM this run: {info.pairs} calls" in built.output

    reader, _ = scripted_gateway(lambda _prompt: "Warsaw")
    monkeypatch.setitem(services_for(settings)._built, "llm", reader)
    asked = CliRunner().invoke(
        app, ["ask", "Where was Marie Curie born?", "--index", "biqog-cli", "--method", "biqog", "--k", "2"]
    )
    assert asked.exit_code == 0, asked.output
    assert re.search(r"question #1\s+hop 1 [\d.]+ What does Marie Curie say about", asked.output)
    assert re.search(r"hop 1 from 5 question\(s\): \d+ new chunk\(s\), kept", asked.output)
    assert "Answer: Warsaw" in asked.output


def test_eval_builds_its_index_with_the_questions_and_judge_options_and_records_them(
    tmp_path: Path, settings: Settings, scripted_judge_cli: ScriptedChatModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`hopgraph eval --questions-per-chunk --candidates`: the run's index is built with them (as `hopgraph
    index` takes them), the run line records them, and a second run with the same options rebuilds nothing.
    Writer, judge and reader are scripted: this tests the options' way to the index, not an LLM."""
    data = tmp_path / "mhr"
    data.mkdir()
    articles = [article(title) for title in ("Volcano", "Glacier", "Harvest")]
    (data / "corpus.json").write_text(json.dumps(articles))
    asked = [query("Did Etna erupt in the year the Aletsch glacier lost record ice?", ["Volcano", "Glacier"])]
    (data / "MultiHopRAG.json").write_text(json.dumps(asked))
    reader, _ = scripted_gateway(lambda _prompt: "yes")
    monkeypatch.setitem(services_for(settings)._built, "llm", reader)
    args = ["eval", "--dataset", "multihop_rag", "--data", str(data)]
    args.append("--no-cache")  # the scripted models are the services of these settings, not a cached copy
    options = ["--questions-per-chunk", "2", "--candidates", "1"]

    ran = CliRunner().invoke(
        app, [*args, "--methods", "quote,biqog", "--out", str(tmp_path / "run"), *options]
    )
    assert ran.exit_code == 0, ran.output
    name = index_name(load_benchmark("multihop_rag", data), settings)
    manifest = services_for(settings).indexes.store.current_manifest(name)
    questions, graph = manifest.extras[QUESTIONS.name], manifest.extras[QUESTION_GRAPH.name]
    assert questions.params == QuestionParams(per_chunk=2)
    assert graph.params == QuestionGraphParams(candidates=1)
    assert questions.questions <= 2 * questions.chunks and graph.pairs == 2 * graph.questions
    [run_line] = [r for r in read_records(tmp_path / "run" / "results.jsonl") if r["type"] == "run"]
    assert run_line["settings"]["index"]["extras"][QUESTIONS.name]["per_chunk"] == 2
    assert run_line["settings"]["index"]["extras"][QUESTION_GRAPH.name] == {"candidates": 1}
    # the report prints MultiHop-RAG's own metrics, equal to the benchmark's rule on the units each read
    report = (tmp_path / "run" / "report.md").read_text(encoding="utf-8")
    official = report.split("### MultiHop-RAG's own retrieval metrics", 1)[1].split("\n### ", 1)[0]
    assert "| Method | n with gold evidence | Hits@4 | Hits@10 | MAP@10 | MRR@10 |" in official
    for result in (r for r in read_records(tmp_path / "run" / "results.jsonl") if r["type"] == "result"):
        ranked = ranked_evidence(result["evidence"], result["read"])
        want = multihop_rag_official(
            [g["text"] for g in result["gold_evidence"]], [e["text"] for e in ranked]
        )
        assert want is not None
        cells = " | ".join(
            f"{100 * want[key]:.1f} [{100 * want[key]:.1f}, {100 * want[key]:.1f}]" for key in want
        )
        assert f"| {result['method']} | 1 | {cells} |" in official  # one query: the mean is its value
    # MultiHop-RAG implies `unanswerable` (its null queries are right only as refusals), recorded per method
    assert {m: c["unanswerable"] for m, c in run_line["context"].items()} == {"quote": True, "biqog": True}

    judged = len(scripted_judge_cli.prompts)
    override = ["--methods", "quote,biqog+unanswerable=true", "--set", "unanswerable=false"]
    again = CliRunner().invoke(app, [*args, *override, "--out", str(tmp_path / "again")])
    assert again.exit_code == 0, again.output  # without the options: the index keeps how it was built
    [again_line] = [r for r in read_records(tmp_path / "again" / "results.jsonl") if r["type"] == "run"]
    # the caller's --set overrides the dataset's default; a variant's own value overrides --set
    assert {m: c["unanswerable"] for m, c in again_line["context"].items()} == {
        "quote": False,
        "biqog+unanswerable=true": True,
    }
    assert services_for(settings).indexes.store.current_manifest(name).build_id == manifest.build_id
    assert len(scripted_judge_cli.prompts) == judged
