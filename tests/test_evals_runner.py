"""The batch runner on real LangGraph graphs with scripted nodes and a real SQLite checkpointer.

The scripted graph has NaiveRAG's shape (retrieve -> generate) but returns canned evidence and answers,
so every number below is known by hand, and can be told to fail (an exception, or a KeyboardInterrupt
standing in for Ctrl-C / a kill) at a chosen question.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from collections import Counter
from collections.abc import Iterator
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime
from threadpoolctl import threadpool_info

from evals.datasets import Benchmark, QAExample
from evals.gold import GoldEvidence
from evals.report import write_report
from evals.runner import (
    MethodScore,
    MethodSettings,
    ResultsError,
    _method_context,
    answered_results,
    latest_results,
    ranked_evidence,
    read_records,
    recorded_run_name,
    run,
    score,
    writing,
)
from evals.steps import thread_steps
from nodes.context import MetadataFilterContext, RetrievalContext
from nodes.state import AnswerOutput, LLMUsage, QAState, QuestionInput
from stores.documents import Document
from stores.evidence import Evidence
from stores.locks import LockedError

DOCS = {
    "d1": "Paris is the capital of France. It lies on the Seine river.",
    "d2": "The Eiffel Tower is in Paris. It was built in 1889.",
    "d3": "Bees make honey from nectar. Honey keeps for years.",
}


def gold(doc_id: str, text: str) -> GoldEvidence:
    start = DOCS[doc_id].index(text)
    return GoldEvidence(doc_id, doc_id.upper(), text, start, start + len(text))


def example(
    qid: str, answers: tuple[str, ...], evidence: tuple[GoldEvidence, ...], answerable: bool = True
) -> QAExample:
    return QAExample(
        id=qid,
        dataset="toy",
        question=f"question {qid}?",
        answers=answers,
        evidence=evidence,
        question_type="null_query" if not answerable else "inference_query",
        hops=len({g.doc_id for g in evidence}) or None,
        decomposition=(),
        answerable=answerable,
    )


G1 = gold("d1", "Paris is the capital of France.")
G2 = gold("d2", "The Eiffel Tower is in Paris.")
G3 = gold("d3", "Bees make honey from nectar.")
G4 = gold("d1", "It lies on the Seine river.")
EXAMPLES = [
    example("q1", ("Paris",), (G1, G2)),
    example("q2", ("honey", "nectar honey"), (G3,)),
    example("q3", ("Insufficient information.",), (), answerable=False),
    example("q4", ("Seine",), (G4,)),
]
BENCHMARK = Benchmark(
    "toy", EXAMPLES, [Document(id=d, title=d.upper(), text=t, metadata={}) for d, t in DOCS.items()]
)


def ev(doc_id: str, start: int, end: int, hop: int) -> Evidence:
    return Evidence(
        id=f"{doc_id}:{start}",
        doc_id=doc_id,
        title=doc_id.upper(),
        text=DOCS[doc_id][start:end],
        score=1.0,
        char_start=start,
        char_end=end,
        hop=hop,
    )


# q1: an irrelevant chunk, then G1 at hop 1, G2 at hop 2. q2: G3 at once. q3: anything. q4: a miss.
EVIDENCE = {
    "question q1?": [ev("d3", 29, 51, 1), ev("d1", 0, 40, 1), ev("d2", 0, 29, 2)],
    "question q2?": [ev("d3", 0, 28, 1)],
    "question q3?": [ev("d2", 30, 51, 1)],
    "question q4?": [ev("d2", 0, 29, 1)],
}
ANSWERS = {"question q1?": "Paris", "question q2?": "honey", "question q3?": "1889", "question q4?": "Seine"}


@dataclass(kw_only=True)
class ScriptedContext:
    index: str = "default"
    top_k: int = 5
    max_answer_tokens: int = 32


class Script:
    """Canned node behaviour, counting calls. `generate` raises once per question named in `interrupt_once`
    (KeyboardInterrupt: a Ctrl-C or kill) or in `fail_once` (ValueError: a failing question); with
    `stats` it reports the number of passages it read as the method statistic "passages read"."""

    def __init__(
        self,
        interrupt_once: frozenset[str] = frozenset(),
        fail_once: frozenset[str] = frozenset(),
        stats: bool = False,
    ) -> None:
        self.stats = stats
        self.interrupt_once = set(interrupt_once)
        self.fail_once = set(fail_once)
        self.calls: Counter[str] = Counter()
        self.contexts: list[ScriptedContext] = []
        self._lock = threading.Lock()

    def retrieve(self, state: QAState, runtime: Runtime[ScriptedContext]) -> dict[str, Any]:
        with self._lock:
            self.calls["retrieve"] += 1
            self.contexts.append(runtime.context)
        return {"evidence": EVIDENCE[state["question"]]}

    def generate(self, state: QAState) -> dict[str, Any]:
        question = state["question"]
        with self._lock:
            self.calls["generate"] += 1
            interrupt, fail = question in self.interrupt_once, question in self.fail_once
            self.interrupt_once.discard(question)
            self.fail_once.discard(question)
        if interrupt:
            raise KeyboardInterrupt
        if fail:
            raise ValueError(f"scripted failure on {question}")
        usage = LLMUsage(
            node="generate",
            role="generator",
            calls=1,
            prompt_tokens=100,
            cached_tokens=40,
            completion_tokens=3,
            seconds=0.5,
            cache_hits=0,
        )
        update = {"answer": ANSWERS[question], "usage": [usage]}
        if self.stats:
            update["stats"] = {"passages read": float(len(state["evidence"]))}
        return update


def scripted_graph(script: Script, saver: SqliteSaver | None) -> CompiledStateGraph:
    graph = StateGraph(
        QAState, context_schema=ScriptedContext, input_schema=QuestionInput, output_schema=AnswerOutput
    )
    graph.add_node("retrieve", script.retrieve)
    graph.add_node("generate", script.generate)
    graph.add_edge(START, "retrieve")
    graph.add_edge("retrieve", "generate")
    graph.add_edge("generate", END)
    return graph.compile(checkpointer=saver, name="scripted")


@pytest.fixture
def saver(tmp_path: Path) -> Iterator[SqliteSaver]:
    conn = sqlite3.connect(tmp_path / "checkpoints.sqlite", check_same_thread=False)
    saver = SqliteSaver(conn)
    saver.setup()
    yield saver
    conn.close()


def run_scripted(out_dir: Path, scripts: dict[str, Script], saver: SqliteSaver | None, **kw: Any) -> Path:
    """Run the toy benchmark with one scripted graph per method name."""
    kw.setdefault("context", {m: {"top_k": 3, "width": 9} for m in scripts})
    kw.setdefault("summary", {"llm": "scripted"})
    return run(
        BENCHMARK,
        list(scripts),
        lambda m: scripted_graph(scripts[m], saver),
        index="toy-index",
        out_dir=out_dir,
        run_name="toyrun",
        **kw,
    )


#: What run_scripted's methods run with by default: the index, top_k 3, and the context's own default.
TOY_SETTINGS = MethodSettings(
    {"index": "toy-index", "top_k": 3, "max_answer_tokens": 32}, {"llm": "scripted"}
)


def thread_id(method: str, question_id: str, settings: MethodSettings = TOY_SETTINGS) -> str:
    return f"toyrun:{method}:{settings.key}:{question_id}"


def results(path: Path) -> list[dict[str, Any]]:
    return [r for r in read_records(path) if r["type"] == "result"]


def test_score_by_hand() -> None:
    metrics = score(EXAMPLES[0].answers, EXAMPLES[0].evidence, "the Paris", EVIDENCE["question q1?"])
    assert metrics["em"] == 1.0 and metrics["f1"] == 1.0
    # top 2 = [irrelevant, covers G1]: one of two gold found; G2 only at rank 3
    assert metrics["recall@2"] == 0.5 and metrics["full@2"] == 0.0
    assert metrics["recall@5"] == 1.0 and metrics["full@5"] == 1.0 and metrics["recall@10"] == 1.0
    # hop 1: 1 of 2 retrieved relevant, 1 of 2 gold found; hop 2 adds G2: 2/3 precision, full recall
    assert metrics["hop_prf"] == [[0.5, 0.5, 0.5], pytest.approx([2 / 3, 1.0, 0.8])]
    assert metrics["hops_used"] == 2


def test_score_unanswerable_counts_for_answers_only() -> None:
    null_query, retrieved = EXAMPLES[2], EVIDENCE["question q3?"]
    metrics = score(null_query.answers, null_query.evidence, "Insufficient information", retrieved)
    assert metrics["em"] == 1.0
    retrieval = [f"{m}@{k}" for m in ("recall", "full") for k in (2, 5, 10, "1000ch", "read")]
    assert all(metrics[key] is None for key in [*retrieval, "coverage", "hits@4", "map@10", "mrr@10"])
    assert metrics["hop_prf"] == [] and metrics["hops_used"] == 1


def test_score_reads_the_ranking_the_reader_read() -> None:
    """Defect 5 of issue 37: BiQOG's final rerank put its two best passages, found at hop 2, first; the
    hop order of `evidence` put a hop-1 miss ahead of them."""
    in_hop_order = [ev("d3", 29, 51, 1), ev("d1", 0, 40, 2), ev("d2", 0, 29, 2)]
    best_first = [in_hop_order[1]["id"], in_hop_order[2]["id"], in_hop_order[0]["id"]]
    answers, gold_items = EXAMPLES[0].answers, EXAMPLES[0].evidence
    assert score(answers, gold_items, "Paris", in_hop_order)["recall@2"] == 0.5
    reranked = score(answers, gold_items, "Paris", in_hop_order, read=best_first)
    assert reranked["recall@2"] == 1.0 and reranked["full@2"] == 1.0
    assert reranked["hop_prf"] == score(answers, gold_items, "Paris", in_hop_order)["hop_prf"]  # hops kept
    # passages the reader did not read come after those it read, in the state's order
    partial = ranked_evidence(in_hop_order, [in_hop_order[2]["id"]])
    assert [e["id"] for e in partial] == [in_hop_order[i]["id"] for i in (2, 0, 1)]


def test_score_counts_a_last_round_that_found_nothing_new() -> None:
    """Defect 8 of issue 37: IR-CoT / ReSP ran a third round whose passages were all known already."""
    two_hops = EVIDENCE["question q1?"]
    assert score(EXAMPLES[0].answers, EXAMPLES[0].evidence, "Paris", two_hops)["hops_used"] == 2
    metrics = score(
        EXAMPLES[0].answers, EXAMPLES[0].evidence, "Paris", two_hops, stats={"retrieval_rounds": 3.0}
    )
    assert metrics["hops_used"] == 3 and metrics["hop_prf"][2] == metrics["hop_prf"][1]


def test_a_kept_refusal_scores_as_the_canonical_refusal() -> None:
    """Defect 7 of issue 37: under `unanswerable`, "Not enough information" on a null query is right."""
    null_query, retrieved = EXAMPLES[2], EVIDENCE["question q3?"]
    worded = "The passages do not say"
    assert score(null_query.answers, (), worded, retrieved, outcome="answered")["em"] == 0.0
    assert score(null_query.answers, (), worded, retrieved, outcome="unanswerable")["em"] == 1.0
    # on an answerable question a kept refusal is still a miss
    assert score(EXAMPLES[0].answers, EXAMPLES[0].evidence, worded, [], outcome="unanswerable")["f1"] == 0.0


def test_score_without_evidence() -> None:
    metrics = score(EXAMPLES[1].answers, EXAMPLES[1].evidence, "", [])
    assert metrics["em"] == 0.0 and metrics["recall@5"] == 0.0 and metrics["hops_used"] == 0
    assert metrics["hop_prf"] == [[0.0, 0.0, 0.0]]  # no retrieval is scored as one empty hop


def test_run_writes_a_run_line_then_one_result_per_method_and_question(
    tmp_path: Path, saver: SqliteSaver
) -> None:
    scripts = {"one": Script(), "two": Script()}
    seen: list[tuple[int, int, dict[str, MethodScore]]] = []
    path = run_scripted(
        tmp_path / "run", scripts, saver, progress=lambda d, t, s: seen.append((d, t, dict(s)))
    )

    lines = read_records(path)
    assert lines[0]["type"] == "run" and len(lines) == 1 + 8
    run_line = lines[0]
    assert run_line["dataset"] == "toy" and run_line["methods"] == ["one", "two"]
    assert run_line["settings"] == {"llm": "scripted"} and run_line["already_done"] == 0
    # the index is added, an option the method's context does not declare ("width") is dropped, and
    # defaults are filled in so the run line tells what each method ran with
    assert run_line["context"] == {m: TOY_SETTINGS.context for m in scripts}
    assert run_line["models"] == TOY_SETTINGS.models
    assert scripts["one"].contexts[0] == ScriptedContext(index="toy-index", top_k=3)

    by_key = {(r["method"], r["question_id"]): r for r in results(path)}
    assert len(by_key) == 8
    q1 = by_key[("one", "q1")]
    assert q1["prediction"] == "Paris" and q1["error"] is None and q1["source"] == "fresh"
    assert q1["gold_answers"] == ["Paris"] and q1["hops"] == 2 and q1["answerable"] is True
    assert [(e["doc_id"], e["char_start"], e["char_end"], e["hop"]) for e in q1["evidence"]] == [
        ("d3", 29, 51, 1),
        ("d1", 0, 40, 1),
        ("d2", 0, 29, 2),
    ]
    assert q1["gold_evidence"][0] == {
        "doc_id": "d1",
        "title": "D1",
        "text": G1.text,
        "char_start": 0,
        "char_end": 31,
        "key_start": None,
        "key_end": None,
    }
    assert q1["metrics"]["recall@2"] == 0.5 and q1["metrics"]["hops_used"] == 2
    assert q1["llm"] == {
        "calls": 1,
        "prompt_tokens": 100,
        "cached_tokens": 40,
        "completion_tokens": 3,
        "cache_hits": 0,
        "echoes": 0,
        "structured_refused": 0,
        "seconds": 0.5,
    }
    assert q1["thread_id"] == thread_id("one", "q1") and q1["seconds"] >= 0
    assert q1["settings_key"] == TOY_SETTINGS.key
    assert by_key[("two", "q3")]["metrics"]["em"] == 0.0  # "1889" for an unanswerable question

    # every question is a checkpointed thread that `hopgraph history` can replay
    checkpoint = saver.get_tuple({"configurable": {"thread_id": thread_id("two", "q4")}})
    assert checkpoint is not None and checkpoint.metadata["method"] == "two"
    assert checkpoint.metadata["index"] == "toy-index"

    assert [(d, t) for d, t, _ in seen] == [(i, 8) for i in range(9)]
    final = seen[-1][2]
    assert final["one"] == MethodScore(answered=4, failed=0, em=0.75, f1=0.75)
    assert recorded_run_name(tmp_path / "run") == "toyrun"


class BlasWatch(Script):
    """A script whose retrieve notes how many threads numpy's BLAS may use while the question runs."""

    def __init__(self) -> None:
        super().__init__()
        self.blas_threads: list[int] = []

    def retrieve(self, state: QAState, runtime: Runtime[ScriptedContext]) -> dict[str, Any]:
        threads = [pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"]
        with self._lock:
            self.blas_threads.extend(threads)
        return super().retrieve(state, runtime)


def test_questions_run_numpys_products_on_one_thread_each(tmp_path: Path, saver: SqliteSaver) -> None:
    """While questions run side by side, BLAS runs each product on the thread that asked for it; after the
    run it has its threads back."""
    np.ones((2, 2)) @ np.ones((2, 2))  # numpy's BLAS loaded, so that threadpoolctl sees it
    before = [pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"]
    script = BlasWatch()

    run_scripted(tmp_path / "run", {"m": script}, saver, concurrency=3)

    assert before and script.blas_threads == [1] * len(EXAMPLES) * len(before)
    assert [pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"] == before


@pytest.mark.parametrize("concurrency", [1, 3])
def test_killed_run_resumes_every_question_exactly_once(
    tmp_path: Path, saver: SqliteSaver, concurrency: int
) -> None:
    out = tmp_path / "run"
    first = Script(interrupt_once=frozenset({"question q3?"}))
    with pytest.raises(KeyboardInterrupt):
        run_scripted(out, {"m": first}, saver, concurrency=concurrency)
    path = out / "results.jsonl"
    written = {r["question_id"] for r in results(path)}
    # q3 was interrupted; every question that finished, also those in flight at the time, was written
    assert "q3" not in written and {"q1", "q2"} <= written
    assert len(written) == first.calls["generate"] - 1
    # a kill in the middle of a write leaves a cut-short last line
    with path.open("ab") as f:
        f.write(b'{"type": "result", "method": "m", "question_id": "q')

    again = Script()
    run_scripted(out, {"m": again}, saver, concurrency=concurrency)

    raw = path.read_bytes()
    assert raw.endswith(b"\n")
    lines = [json.loads(line) for line in raw.splitlines()]  # every line whole: the tail was truncated
    assert [r["type"] for r in lines].count("run") == 2
    ids = [r["question_id"] for r in lines if r["type"] == "result"]
    assert sorted(ids) == ["q1", "q2", "q3", "q4"]  # exactly once each
    assert all(r["error"] is None for r in lines if r["type"] == "result")
    # q3 stopped inside `generate`: its thread resumed there instead of retrieving again
    q3 = next(r for r in lines if r.get("question_id") == "q3")
    assert q3["source"] == "resumed" and q3["prediction"] == "1889"
    # Across both runs every node ran once per question, plus the one interrupted `generate`.
    assert first.calls["retrieve"] + again.calls["retrieve"] == 4
    assert first.calls["generate"] + again.calls["generate"] == 4 + 1
    assert lines[[r["type"] for r in lines].index("run", 1)]["already_done"] == len(written)


def test_a_finished_thread_whose_line_was_never_written_is_not_rerun(
    tmp_path: Path, saver: SqliteSaver
) -> None:
    """A kill between the graph finishing and the line being written: the checkpoint has the answer."""
    earlier = Script()
    graph = scripted_graph(earlier, saver)
    graph.invoke({"question": "question q2?"}, {"configurable": {"thread_id": thread_id("m", "q2")}})
    again = Script()
    path = run_scripted(tmp_path / "run", {"m": again}, saver)
    q2 = next(r for r in results(path) if r["question_id"] == "q2")
    assert q2["source"] == "checkpoint" and q2["prediction"] == "honey"
    assert again.calls["generate"] == 3 and again.calls["retrieve"] == 3


def test_a_failed_question_is_recorded_and_retried_on_the_next_run(
    tmp_path: Path, saver: SqliteSaver
) -> None:
    out = tmp_path / "run"
    seen: list[dict[str, MethodScore]] = []
    script = Script(fail_once=frozenset({"question q2?"}))
    path = run_scripted(out, {"m": script}, saver, progress=lambda d, t, s: seen.append(dict(s)))
    failed = [r for r in results(path) if r["error"]]
    assert [r["question_id"] for r in failed] == ["q2"]
    assert failed[0]["error"] == "ValueError: scripted failure on question q2?"
    assert failed[0]["metrics"] is None and failed[0]["prediction"] is None
    assert seen[-1]["m"].failed == 1 and seen[-1]["m"].answered == 3
    # what the comparisons read: the answered questions only, the failed one left out until answered
    assert sorted(key[2] for key in answered_results(out)) == ["q1", "q3", "q4"]

    run_scripted(out, {"m": script}, saver)  # the same graph object: its fault has been used up
    lines = results(path)
    assert [r["question_id"] for r in lines].count("q2") == 2  # the failure stays as history
    assert len(lines) == 5
    final = latest_results(read_records(path))
    assert len(final) == 4 and all(r["error"] is None for r in final.values())
    assert final[("toy", "m", "q2")]["source"] == "resumed"
    assert answered_results(out) == final
    assert script.calls["retrieve"] == 4  # q2 resumed at `generate`


def test_a_graph_without_checkpointer_runs_each_question_afresh(tmp_path: Path) -> None:
    script = Script()
    path = run_scripted(tmp_path / "run", {"m": script}, None)
    assert {r["source"] for r in results(path)} == {"fresh"} and len(results(path)) == 4


def test_limit_and_resumed_progress(tmp_path: Path, saver: SqliteSaver) -> None:
    out = tmp_path / "run"
    run_scripted(out, {"m": Script()}, saver, limit=2)
    seen: list[tuple[int, int]] = []
    run_scripted(out, {"m": Script()}, saver, progress=lambda d, t, s: seen.append((d, t)))
    assert seen == [(2, 4), (3, 4), (4, 4)]
    assert sorted(r["question_id"] for r in results(out / "results.jsonl")) == ["q1", "q2", "q3", "q4"]


def test_a_second_writer_is_refused_naming_the_first(tmp_path: Path, saver: SqliteSaver) -> None:
    """The folder held by another thread, which the lock treats as it treats another process (a process's
    own thread may take it again: hopgraph.evaluate holds it around the runner)."""
    out = tmp_path / "run"
    held, done = threading.Event(), threading.Event()

    def first() -> None:
        with writing(out):
            held.set()
            done.wait()

    holder = threading.Thread(target=first)
    holder.start()
    held.wait()
    try:
        with pytest.raises(LockedError) as refused:
            run_scripted(out, {"m": Script()}, saver)
    finally:
        done.set()
        holder.join()
    assert str(refused.value).startswith(f"results folder {out} is being written by pid {os.getpid()} on ")
    assert str(refused.value).endswith(": wait for it to end, or use another --out")
    assert not (out / "results.jsonl").exists()
    with writing(out):  # free again, and the same thread may nest it, as evaluate and the runner do
        assert len(results(run_scripted(out, {"m": Script()}, saver))) == 4


def test_a_corrupt_complete_line_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    path.write_text('{"type": "run"}\nnot json\n', encoding="utf-8")
    with pytest.raises(ResultsError, match="line 2 is not valid JSON"):
        read_records(path)
    with pytest.raises(ResultsError, match="no such file"):
        read_records(tmp_path / "absent.jsonl")


def test_a_corrupt_results_file_stops_the_run_and_releases_it(tmp_path: Path, saver: SqliteSaver) -> None:
    out = tmp_path / "run"
    out.mkdir()
    (out / "results.jsonl").write_text("garbage\n", encoding="utf-8")
    with pytest.raises(ResultsError, match="line 1 is not valid JSON"):
        run_scripted(out, {"m": Script()}, saver)
    (out / "results.jsonl").write_text("", encoding="utf-8")
    assert len(results(run_scripted(out, {"m": Script()}, saver))) == 4


def test_the_same_settings_resume_without_a_call(tmp_path: Path, saver: SqliteSaver) -> None:
    out = tmp_path / "run"
    run_scripted(out, {"m": Script()}, saver)
    again = Script()
    path = run_scripted(out, {"m": again}, saver)
    assert sum(again.calls.values()) == 0 and len(results(path)) == 4
    assert {r["settings_key"] for r in results(path)} == {TOY_SETTINGS.key}


def test_a_changed_context_under_the_same_label_is_refused(tmp_path: Path, saver: SqliteSaver) -> None:
    out = tmp_path / "run"
    run_scripted(out, {"m": Script()}, saver)
    before = read_records(out / "results.jsonl")
    refused = Script()
    message = (
        f"{out} already holds results of 'm' with top_k=3 (now 6): use another --out, "
        "or a variant label such as m+top_k=6"
    )
    with pytest.raises(ResultsError) as caught:
        run_scripted(out, {"m": refused}, saver, context={"m": {"top_k": 6}})
    assert str(caught.value) == message
    # refused before any work: no call, and not even a run line claiming the new settings
    assert sum(refused.calls.values()) == 0 and read_records(out / "results.jsonl") == before


def test_a_changed_model_under_the_same_label_is_refused(tmp_path: Path, saver: SqliteSaver) -> None:
    out = tmp_path / "run"
    run_scripted(out, {"m": Script()}, saver)
    with pytest.raises(ResultsError, match=r"with llm=scripted \(now other\): use another --out$"):
        run_scripted(out, {"m": Script()}, saver, summary={"llm": "other"})


def test_a_variant_label_with_the_new_value_runs_beside_the_old(tmp_path: Path, saver: SqliteSaver) -> None:
    out = tmp_path / "run"
    run_scripted(out, {"m": Script()}, saver)
    kept, variant = Script(), Script()
    context = {"m": {"top_k": 3}, "m+top_k=6": {"top_k": 6}}
    path = run_scripted(out, {"m": kept, "m+top_k=6": variant}, saver, context=context)
    assert sum(kept.calls.values()) == 0 and variant.calls["generate"] == 4
    assert {c.top_k for c in variant.contexts} == {6}
    keys = {r["method"]: r["settings_key"] for r in results(path)}
    assert keys["m"] == TOY_SETTINGS.key != keys["m+top_k=6"]
    answers = write_report(out).read_text(encoding="utf-8")
    assert "| m | 4 | 0 |" in answers and "| m+top_k=6 | 4 | 0 |" in answers


def test_other_settings_never_continue_a_thread_of_the_old_ones(tmp_path: Path, saver: SqliteSaver) -> None:
    """q1 was stopped mid-graph under top_k 3 (a start cut off before its first answer leaves nothing to
    mix, so other settings may run in its folder): with top_k 6 it starts afresh, on a thread of its own."""
    with pytest.raises(KeyboardInterrupt):
        scripted_graph(Script(interrupt_once=frozenset({"question q1?"})), saver).invoke(
            {"question": "question q1?"}, {"configurable": {"thread_id": thread_id("m", "q1")}}
        )
    changed = Script()
    path = run_scripted(tmp_path / "run", {"m": changed}, saver, context={"m": {"top_k": 6}})
    q1 = next(r for r in results(path) if r["question_id"] == "q1")
    assert q1["source"] == "fresh" and changed.calls["retrieve"] == 4
    assert q1["thread_id"] != thread_id("m", "q1") and q1["settings_key"] != TOY_SETTINGS.key


LEGACY_RESULTS = Path(__file__).parent / "fixtures" / "results_before_settings_keys.jsonl"


@pytest.fixture
def legacy_folder(tmp_path: Path) -> Path:
    """A folder as the runner wrote it before settings keys: methods m and other on q1-q3 with
    run_scripted's defaults, thread ids RUN:METHOD:QUESTION, no key on the run or result lines."""
    out = tmp_path / "legacy"
    out.mkdir()
    (out / "results.jsonl").write_bytes(LEGACY_RESULTS.read_bytes())
    return out


def test_an_old_folder_still_reports(legacy_folder: Path) -> None:
    answers = write_report(legacy_folder).read_text(encoding="utf-8")
    assert "| m | 3 | 0 |" in answers and "| other | 3 | 0 |" in answers


def test_an_old_folder_resumes_under_the_settings_its_run_line_recorded(
    legacy_folder: Path, saver: SqliteSaver
) -> None:
    # q4 was stopped mid-graph by that older runner, on a thread named the old way
    with pytest.raises(KeyboardInterrupt):
        scripted_graph(Script(interrupt_once=frozenset({"question q4?"})), saver).invoke(
            {"question": "question q4?"}, {"configurable": {"thread_id": "toyrun:m:q4"}}
        )
    scripts = {"m": Script(), "other": Script()}
    path = run_scripted(legacy_folder, scripts, saver)
    new = results(path)[6:]
    assert sorted((r["method"], r["question_id"]) for r in new) == [("m", "q4"), ("other", "q4")]
    by_method = {r["method"]: r for r in new}
    assert by_method["m"]["source"] == "resumed" and by_method["m"]["thread_id"] == "toyrun:m:q4"
    assert scripts["m"].calls == Counter(generate=1)  # retrieve had run before the stop
    assert by_method["other"]["settings_key"] == TOY_SETTINGS.key

    with pytest.raises(ResultsError, match="'m' with top_k=3 \\(now 6\\)"):
        run_scripted(legacy_folder, {"m": Script()}, saver, context={"m": {"top_k": 6}})


PROMPTS = {"reader": "1111111111", "answer": "2222222222"}


def test_a_changed_prompt_under_the_same_label_is_refused(tmp_path: Path, saver: SqliteSaver) -> None:
    """The same context and models, another wording of one role: another measurement, not a resumption."""
    out = tmp_path / "run"
    run_scripted(out, {"m": Script()}, saver, prompts={"m": PROMPTS})
    again = Script()
    run_scripted(out, {"m": again}, saver, prompts={"m": PROMPTS})
    assert sum(again.calls.values()) == 0
    reworded = {**PROMPTS, "reader": "3333333333"}
    with pytest.raises(ResultsError) as refused:
        run_scripted(out, {"m": Script()}, saver, prompts={"m": reworded})
    # no variant label is offered: a label cannot hold prompt wording
    assert str(refused.value) == (
        f"{out} already holds results of 'm' with prompts.reader=1111111111 (now 3333333333): "
        "use another --out"
    )
    started = [r for r in read_records(out / "results.jsonl") if r["type"] == "run"]
    assert [r["prompts"] for r in started] == [{"m": PROMPTS}] * 2


def test_an_old_folder_takes_no_new_answers_of_its_methods_but_still_reports(
    legacy_folder: Path, saver: SqliteSaver
) -> None:
    """Answers from before prompts were recorded may come from any wording: the folder reads, a method it
    has answers of runs elsewhere, and a method it has none of may still be added."""
    with pytest.raises(ResultsError) as refused:
        run_scripted(legacy_folder, {"m": Script()}, saver, prompts={"m": PROMPTS})
    assert str(refused.value) == (
        f"{legacy_folder} holds results of 'm' written before run folders recorded the prompts (hopgraph "
        "before 2026-11-26), so the prompt wording they were made with is unknown and new answers are not "
        f"added beside them: use another --out (`hopgraph report {legacy_folder}` still reads this one)"
    )
    path = run_scripted(legacy_folder, {"new": Script()}, saver, prompts={"new": PROMPTS})
    assert {r["method"] for r in results(path)} == {"m", "other", "new"}
    answers = write_report(legacy_folder).read_text(encoding="utf-8")
    assert "| m | 3 | 0 |" in answers and "| new | 4 | 0 |" in answers


def test_a_switch_added_to_a_method_later_stays_out_of_its_settings_key_at_its_default() -> None:
    """NaiveRAG's context gained `metadata_filter`, `extractor` and the reader's `passage_order` after
    NaiveRAG runs were made: at their defaults its run context, hence its settings key, is what it was,
    so those runs resume and compare."""
    graph = StateGraph(QAState, context_schema=MetadataFilterContext)
    graph.add_node("noop", lambda _state: {})
    graph.add_edge(START, "noop")
    compiled = graph.compile()
    later = {f.name for f in fields(RetrievalContext) if f.metadata.get("added_later")}
    assert later == {"passage_order"}  # the shared reader's switch, added after the first runs too
    before = {  # NaiveRAG's context before the switches
        name: value for name, value in asdict(RetrievalContext(index="idx")).items() if name not in later
    }
    assert _method_context(compiled, "idx", {}) == before
    switched = _method_context(
        compiled, "idx", {"metadata_filter": True, "extractor": "matcher", "passage_order": "best_last"}
    )
    assert switched == {
        **before,
        "metadata_filter": True,
        "extractor": "matcher",
        "passage_order": "best_last",
    }


def test_each_result_line_keeps_the_steps_history_replays(tmp_path: Path, saver: SqliteSaver) -> None:
    """A question's steps, node by node as `hopgraph history` shows them (evals.steps), are kept in its
    result line, the passages of its evidence by reference so their text is stored once."""
    scripts = {"one": Script()}
    path = run_scripted(tmp_path / "run", scripts, saver)
    q1 = next(r for r in results(path) if r["question_id"] == "q1")
    assert [step["node"] for step in q1["steps"]] == ["__start__", "retrieve", "generate"]
    start, retrieve, generate = (step["update"] for step in q1["steps"])
    assert start == {"question": "question q1?"}
    assert retrieve["evidence"] == [
        {"id": e["id"], "hop": e["hop"], "score": e["score"]} for e in q1["evidence"]
    ]
    assert generate["answer"] == "Paris" and [u["role"] for u in generate["usage"]] == ["generator"]
    # the same steps the checkpoints give, as history reads them
    graph = scripted_graph(scripts["one"], saver)
    replayed = thread_steps(graph, {"configurable": {"thread_id": q1["thread_id"]}})
    assert [node for node, _ in replayed] == [step["node"] for step in q1["steps"]]
    assert replayed[2][1]["answer"] == generate["answer"]
