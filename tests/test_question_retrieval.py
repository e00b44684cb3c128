"""benchmarks.question_retrieval: the subset maker (exactly the cited articles and as many seeded distractors,
on a small MultiHop-RAG folder and on the real dev set) and the whole command over that small folder, its
index built by a scripted question writer and judge (real Chroma, MiniLM, reranker and peer scripts). The
scripted model tests the benchmark's wiring and scoring, never what an LLM would write."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from benchmarks import question_retrieval
from benchmarks.question_retrieval import COLUMNS, HOP_SCORES, NAIVE, main, make_subset, print_paired, scores
from evals.datasets import load_benchmark
from evals.metrics import RetrievedSpan
from hopgraph import Settings, index_corpus
from hopgraph.api import question_params
from hopgraph.evaluate import index_name
from tests.conftest import SHARED_DATA

TOPICS = {
    "Volcano": "Mount Etna on Sicily erupted again this week and sent ash over the port of Catania.",
    "Glacier": "The Aletsch glacier in the Alps lost more ice this summer than in any year on record.",
    "Satellite": "A weather satellite launched from French Guiana will watch storms over the Atlantic.",
    "Harvest": "Farmers in the Po valley began the rice harvest two weeks early after a dry spring.",
    "Orchestra": "The Vienna orchestra announced a tour of Japan with three concerts in Osaka.",
    "Election": "Voters in Iceland chose a new parliament in an election decided by a few hundred ballots.",
    "Bridge": "Engineers closed the old railway bridge over the Danube after finding cracks in a pier.",
    "Telescope": "A new radio telescope in the Karoo desert recorded its first map of a distant galaxy.",
}
FILLER = (
    " Officials said more details would follow in the coming days, and local reporters spoke with "
    "residents about what the news means for their families, their work and the season ahead."
)


def article(title: str) -> dict[str, str]:
    return {
        "title": title,
        "author": "Desk",
        "source": "Example News",
        "published_at": "2023-10-01T00:00:00+00:00",
        "category": "news",
        "url": f"https://example.org/{title.lower()}",
        "body": TOPICS[title] + FILLER,
    }


def query(text: str, cited: list[str], question_type: str = "inference_query") -> dict:
    evidence = [{"title": t, "url": f"https://example.org/{t.lower()}", "fact": TOPICS[t]} for t in cited]
    return {"query": text, "answer": "yes", "question_type": question_type, "evidence_list": evidence}


@pytest.fixture
def source(tmp_path: Path) -> Path:
    """Eight one-chunk articles; a null query first (not counted), then queries citing Volcano and Glacier,
    Satellite (and Volcano again), and Harvest."""
    folder = tmp_path / "mhr"
    folder.mkdir()
    (folder / "corpus.json").write_text(json.dumps([article(title) for title in TOPICS]))
    queries = [
        {"query": "Who won?", "answer": "Insufficient information.", "question_type": "null_query",
         "evidence_list": []},
        query("Did Etna erupt in the same year the Aletsch glacier lost record ice?", ["Volcano", "Glacier"]),
        query("Which launch site watches Atlantic storms, and did Etna erupt?", ["Satellite", "Volcano"]),
        query("When did the Po valley rice harvest begin?", ["Harvest"]),
    ]  # fmt: skip
    (folder / "MultiHopRAG.json").write_text(json.dumps(queries))
    return folder


def test_the_subset_is_the_cited_articles_and_as_many_distractors_the_same_every_time(
    source: Path, tmp_path: Path
) -> None:
    subset = make_subset(source, tmp_path / "a", 2)
    again = make_subset(source, tmp_path / "b", 2)
    assert [q.question for q in subset.questions] == [
        "Did Etna erupt in the same year the Aletsch glacier lost record ice?",
        "Which launch site watches Atlantic storms, and did Etna erupt?",
    ]
    assert [doc.title for doc in subset.cited] == ["Volcano", "Glacier", "Satellite"]
    distractors = [doc.title for doc in subset.distractors]
    assert len(distractors) == 3 and set(distractors) <= {
        "Harvest",
        "Orchestra",
        "Election",
        "Bridge",
        "Telescope",
    }
    assert [doc.title for doc in again.distractors] == distractors
    assert (tmp_path / "a" / "corpus.json").read_text() == (tmp_path / "b" / "corpus.json").read_text()
    # the folder is a MultiHop-RAG folder of its own: the loader finds every gold fact in it
    loaded = load_benchmark("multihop_rag", tmp_path / "a")
    assert len(loaded.corpus) == 6 and all(g.char_start == 0 for q in loaded.examples for g in q.evidence)


@pytest.mark.skipif(not (SHARED_DATA / "multihop_rag").is_dir(), reason="needs ../shared/data")
def test_the_real_subset_cites_what_the_first_100_non_null_dev_queries_cite(tmp_path: Path) -> None:
    raw = json.loads((SHARED_DATA / "multihop_rag" / "MultiHopRAG.json").read_text())
    first = [q for q in raw if q["question_type"] != "null_query"][:100]
    cited = {e["url"] for q in first for e in q["evidence_list"]}
    subset = make_subset(SHARED_DATA / "multihop_rag", tmp_path, 100)
    assert [q.question for q in subset.questions] == [q["query"] for q in first]
    assert {doc.id for doc in subset.cited} == cited and len(cited) == 140
    assert len(subset.distractors) == 140 and not {doc.id for doc in subset.distractors} & cited


def test_scores_are_the_share_of_queries_with_every_fact_and_the_mean_share_of_facts(source: Path) -> None:
    questions = load_benchmark("multihop_rag", source).examples[1:3]  # Volcano + Glacier; Satellite + Volcano

    def span(title: str) -> RetrievedSpan:
        url = f"https://example.org/{title.lower()}"
        return RetrievedSpan(url, 0, len(TOPICS[title]), TOPICS[title])

    # k = 5: the first query finds Volcano only (1 of 2 facts), the second both; k = 20: both find both
    at_5 = [[span("Volcano"), span("Bridge")], [span("Satellite"), span("Volcano")]]
    at_20 = [[span("Glacier"), span("Volcano")], [span("Volcano"), span("Satellite")]]
    assert scores(questions, {5: at_5, 20: at_20}) == {
        "full@5": 50.0,
        "full@20": 100.0,
        "recall@5": 75.0,
        "recall@20": 100.0,
    }


def row(output: str, name: str) -> list[float]:
    line = next(line for line in output.splitlines() if line.startswith(f"| {name} |"))
    return [float(cell) for cell in line.strip("| \n").split(" | ")[1:]]


@pytest.mark.usefixtures("scripted_judge_cli")
def test_the_command_prints_the_cost_builds_and_scores_every_row(
    source: Path, tmp_path: Path, settings: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "subset"
    main(["--source", str(source), "--out", str(out), "--queries", "2", "--dry-run"])
    dry = capsys.readouterr().out
    composition = (
        "2 non-null dev queries, 3 articles they cite, 3 distractors (random.Random(14)), 6 articles"
    )
    assert f"{composition}, 6 chunks" in dry
    # one writer call a chunk; each of its 10 questions judged against its own chunk and 4 more
    assert "question writer 6 calls (up to 60 questions), edge judge at most 300 calls" in dry
    assert "-> 0.0 h + 0.1 h = 0.1 h" in dry  # 6 x 7.5 s and 300 x 1.2 s

    main(["--source", str(source), "--out", str(out), "--queries", "2"])
    output = capsys.readouterr().out
    per_chunk = re.search(r"1 question writer call, ([\d.]+) questions, ([\d.]+) judge calls", output)
    assert per_chunk is not None and float(per_chunk[2]) == pytest.approx(5 * float(per_chunk[1]), abs=0.1)
    assert "question writer: 6 calls this run" in output
    # six one-chunk articles: every retriever's top 20 holds every chunk, so every fact
    for name in ("NaiveRAG (dense)", "QuOTE", "peer dense", "peer BM25"):
        assert row(output, name)[1::2] == [100.0, 100.0], name
    biqog = row(output, "BiQOG")
    assert all(0 <= value <= 100 for value in biqog) and biqog[0] <= biqog[1] and biqog[2] <= biqog[3]
    # the same walks by their hop scores: a top 20 holds every chunk collected, whatever the order
    assert row(output, HOP_SCORES)[1::2] == biqog[1::2]
    against_naive, against_hop_scores = output.split("paired differences against")[1:]
    assert all(len(row_cells(against_naive, name)) == 4 for name in ("QuOTE", "BiQOG", HOP_SCORES))
    assert against_hop_scores.startswith(f" {HOP_SCORES}")
    assert len(row_cells(against_hop_scores, "BiQOG")) == 4
    assert row(output, "- paper (full corpus)") == [5.0, 21.0, 27.1, 51.5]
    # `hopgraph eval --data OUT` finds this index complete (its name and corpus are the evaluation's)
    subset = load_benchmark("multihop_rag", out)
    assert index_corpus(
        subset.corpus, index_name(subset, settings), settings, extras=["question_graph"]
    ).status == ("unchanged")


@pytest.mark.usefixtures("scripted_judge_cli")
def test_a_trial_build_prints_the_cost_per_chunk_and_the_full_build_reuses_it(
    source: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a one-query subset (an index of its own in the session's store). The peers' rows are left out:
    what is tested is the trial and the reuse, and the other two command tests run the peer scripts."""
    monkeypatch.setattr(question_retrieval, "peer_rows", lambda *_: {})
    out = tmp_path / "subset"
    main(["--source", str(source), "--out", str(out), "--queries", "1", "--max-chunks", "1"])
    trial = capsys.readouterr().out
    judged = re.search(r"(\d+) judged for this build, 0 reused", trial)
    assert "1 chunks written by the LLM, 0 reused" in trial and judged is not None
    assert "index cost per chunk: 1 question writer call" in trial and "a chunk:" in trial
    assert "a trial of 1 chunks" in trial and "| BiQOG |" not in trial
    main(["--source", str(source), "--out", str(out), "--queries", "1"])
    full = capsys.readouterr().out
    assert re.search(r"\d+ chunks written by the LLM, 1 reused from the previous build", full)
    assert f"judged for this build, {judged[1]} reused from the previous build" in full
    assert "| BiQOG |" in full


def test_paired_differences_are_per_query_against_naive_rag(capsys: pytest.CaptureFixture[str]) -> None:
    both = {column: [0.0, 50.0, 0.0] for column in COLUMNS}
    print_paired({NAIVE: both, "QuOTE": both, "BiQOG": {column: [100.0, 100.0, 100.0] for column in COLUMNS}})
    printed = capsys.readouterr().out
    assert "| QuOTE | " + " | ".join(["+0.0 [+0.0, +0.0]"] * 4) + " |" in printed
    biqog = row_cells(printed, "BiQOG")
    assert all(cell.startswith("+83.3 [") and cell.endswith("]*") for cell in biqog), biqog
    assert f"| {NAIVE} |" not in printed


def row_cells(output: str, name: str) -> list[str]:
    line = next(line for line in output.splitlines() if line.startswith(f"| {name} |"))
    return line.strip("| \n").split(" | ")[1:]


@pytest.mark.usefixtures("scripted_judge_cli")
@pytest.mark.skipif(not (SHARED_DATA / "hotpotqa").is_dir(), reason="needs ../shared/data")
def test_a_paragraph_dataset_is_measured_on_the_index_eval_uses_and_the_peers_read_its_copy(
    tmp_path: Path, settings: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    """HotpotQA's first 2 questions over their 20 paragraphs, two questions a paragraph (scripted writer and
    judge: the wiring, not what an LLM writes)."""
    out = tmp_path / "hp2"
    main(["--dataset", "hotpotqa", "--queries", "2", "--questions-per-chunk", "2", "--out", str(out)])
    output = capsys.readouterr().out
    benchmark = load_benchmark("hotpotqa", SHARED_DATA / "hotpotqa", 2)
    cited = {g.doc_id for q in benchmark.examples for g in q.evidence}
    composition = f"2 non-null dev queries, {len(cited)} articles they cite, {20 - len(cited)} distractors"
    chunks = re.search(rf"{re.escape(composition)} \(hotpotqa's own\), 20 articles, (\d+) chunks", output)
    assert chunks is not None, output
    assert f"question writer {chunks[1]} calls (up to {2 * int(chunks[1])} questions)" in output
    for name in ("NaiveRAG (dense)", "QuOTE", "BiQOG", "peer dense", "peer BM25"):
        values = row(output, name)
        assert all(0 <= value <= 100 for value in values) and values[0] <= values[1], name
        assert values[3] > 0, name  # every gold paragraph is among the 20: the top 20 finds some facts
    assert "paper" not in output and "| BiQOG | " in output.split("paired differences")[1]
    # the peers' copy: every paragraph an article, the gold sentences its facts, as the loader finds them
    copy = load_benchmark("multihop_rag", out)
    assert len(copy.corpus) == 20 and [q.question for q in copy.examples] == [
        q.question for q in benchmark.examples
    ]
    assert all(g.char_start is not None for q in copy.examples for g in q.evidence)
    # `hopgraph eval --dataset hotpotqa --limit 2 --questions-per-chunk 2` finds this index complete
    built = index_corpus(
        benchmark.corpus, index_name(benchmark, settings), settings, extras=["question_graph"],
        extra_params=question_params(2),
    )  # fmt: skip
    assert built.status == "unchanged"
