"""report.md and the plots, rebuilt from results.jsonl alone; the `eval` / `report` commands end to end."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
import typer
from browser import open_page
from langgraph.checkpoint.sqlite import SqliteSaver
from PIL import Image
from test_evals_runner import Script, run_scripted, saver  # noqa: F401  (saver is a fixture)
from typer.testing import CliRunner

from evals.report import _paired_section, hop_table, paired_rows, with_holm, write_report
from evals.runner import read_records
from hopgraph import Settings
from hopgraph.cli_eval import register
from tests.session_settings import session_env

CI = r"\d+\.\d \[\d+\.\d, \d+\.\d\]"  # "75.0 [25.0, 100.0]"
SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


@pytest.fixture
def results_only(tmp_path: Path, saver: SqliteSaver) -> Path:  # noqa: F811
    """A folder holding nothing but the results.jsonl of a two-method run with one failed question."""
    ran = tmp_path / "ran"
    run_scripted(ran, {"one": Script(), "two": Script(fail_once=frozenset({"question q4?"}))}, saver)
    alone = tmp_path / "alone"
    alone.mkdir()
    shutil.copy(ran / "results.jsonl", alone / "results.jsonl")
    return alone


def section(text: str, title: str) -> str:
    return text.split(f"### {title}", 1)[1].split("\n### ", 1)[0]


def test_report_from_the_jsonl_alone(results_only: Path) -> None:
    text = write_report(results_only).read_text(encoding="utf-8")

    answers = section(text, "Answers and cost per question")
    one = next(line for line in answers.splitlines() if line.startswith("| one |"))
    two = next(line for line in answers.splitlines() if line.startswith("| two |"))
    # one: 4 answered, EM 3/4 with its interval, 1 call, 100 prompt tokens, 5 hops over 4 questions
    assert one.startswith("| one | 4 | 0 | 75.0 [") and re.search(CI, one)
    assert "| 1.00 | 100 | 40 | 3 | 0.00 |" in one and one.endswith("| 1.25 | 0 | 0 |")
    assert two.startswith("| two | 3 | 1 | ")  # the failed question is counted apart, not scored

    # two failed q4, so retrieval, hops and pairs are compared on q1, q2, q3, two of them with gold
    # evidence (q3 is a null query)
    assert "computed on the 3 questions every method answered" in text
    retrieval = section(text, "Retrieval at k units")
    one_r = next(line for line in retrieval.splitlines() if line.startswith("| one |"))
    # R@2 = (0.5 + 1) / 2; q4's miss (answered by one only) is left out
    assert one_r.startswith("| one | 2 | 75.0 [") and len(re.findall(CI, one_r)) == 6
    budget = section(text, "Retrieval at equal reading budget")
    # within 1,000 characters each reads all its evidence: q1 finds G1 and G2, q2 finds G3
    assert next(line for line in budget.splitlines() if line.startswith("| one |")).startswith(
        "| one | 2 | 100.0 ["
    )

    hops = section(text, "Hop-conditioned retrieval")
    assert "| Method | r = 1 | r = 2 |" in hops
    # hop 1: q1 (0.5, 0.5, 0.5), q2 (1, 1, 1); hop 2: q1 becomes (2/3, 1, 0.8)
    assert "| one | 75.0 (75.0 / 75.0) | 90.0 (83.3 / 100.0) |" in hops

    paired = section(text, "Paired differences")
    assert "| one − two | EM | +0.0 [+0.0, +0.0] | 3 | McNemar | 1.000 | 1.000 | no |" in paired
    assert "| one − two | Recall@2,000 ch |" in paired

    assert "two · q4: ValueError: scripted failure on question q4?" in section(text, "Failed questions")
    settings = section(text, "Settings")
    assert "- toyrun 20" in settings and "index toy-index:" in settings
    assert '"llm": "scripted"' in settings and '"top_k": 3' in settings
    assert "(hop_curves.png)" in text and "(f1_vs_calls.png)" in text
    # two failed q4, so the answers are also compared on the three questions both answered
    common = section(text, "Answers on the 3 questions every method answered")
    assert "| one | 3 | 0 |" in common and "| two | 3 | 1 |" in common


def test_method_statistics_are_averaged_per_method_that_reports_them(
    tmp_path: Path,
    saver: SqliteSaver,  # noqa: F811
) -> None:
    out = tmp_path / "run"
    run_scripted(out, {"counts": Script(stats=True), "silent": Script()}, saver)
    records = [r for r in read_records(out / "results.jsonl") if r.get("method") == "counts"]
    assert sorted(r["stats"]["passages read"] for r in records) == [1, 1, 1, 3]

    text = write_report(out).read_text(encoding="utf-8")
    table = section(text, "Method statistics")
    # 3 + 1 + 1 + 1 passages over 4 questions; the method that reports nothing gets no row
    assert "| Method | passages read |" in table and "| counts | 1.50 |" in table
    assert "silent" not in table
    assert "### Method statistics" not in write_report(results_only_copy(out, tmp_path)).read_text()


def results_only_copy(out: Path, tmp_path: Path) -> Path:
    """The run's results without any method statistics, as written before methods reported them."""
    bare = tmp_path / "bare"
    bare.mkdir()
    lines = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    for line in lines:
        line.pop("stats", None)
    (bare / "results.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    return bare


def test_report_scores_stored_evidence_by_the_current_rules(results_only: Path) -> None:
    """A line written under older metric rules (its stored metrics say nothing was found, EM 0) is scored
    again from its stored answer and evidence, so every line of a report is judged by the same rules."""
    path = results_only / "results.jsonl"
    records = read_records(path)
    for record in records:
        if record.get("type") == "result" and record["metrics"] is not None:
            record["metrics"] = {**record["metrics"], "em": 0.0, "recall@2": 0.0}
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")

    text = write_report(results_only).read_text(encoding="utf-8")
    answers, retrieval = section(text, "Answers and cost per question"), section(text, "Retrieval at k units")
    assert "| one | 4 | 0 | 75.0 [" in answers  # EM 3 of 4 again
    assert "| one | 2 | 75.0 [" in retrieval  # Recall@2 (0.5 + 1) / 2 again


def test_plots_are_drawn(results_only: Path) -> None:
    write_report(results_only)
    for name in ("hop_curves.png", "f1_vs_calls.png"):
        with Image.open(results_only / name) as image:
            assert image.format == "PNG" and image.width > 400 and image.height > 300


def test_hop_table_carries_short_questions_forward(results_only: Path) -> None:
    from evals.report import group_results

    answered, _ = group_results(read_records(results_only / "results.jsonl"))
    table = hop_table(answered["toy"])
    r, p, rec, f1 = table["one"][1]
    assert r == 2 and p == pytest.approx((2 / 3 + 1 + 0) / 3) and rec == pytest.approx(2 / 3)
    assert f1 == pytest.approx((0.8 + 1 + 0) / 3)


def test_report_while_a_line_is_being_written_and_when_empty(results_only: Path, tmp_path: Path) -> None:
    with (results_only / "results.jsonl").open("ab") as f:
        f.write(b'{"type": "result", "meth')
    assert "| one | 4 |" in write_report(results_only).read_text(encoding="utf-8")

    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "results.jsonl").write_bytes(b"")
    assert "No results yet." in write_report(empty).read_text(encoding="utf-8")
    assert (empty / "hop_curves.png").is_file()


def test_report_command(results_only: Path) -> None:
    app = typer.Typer()
    register(app)
    # 200 columns, as the other commands the tests run print to: at rich's default 80 a long enough run
    # folder (a pytest-xdist worker's tmp_path is 10 characters longer) broke `plot: PATH` inside the name
    result = CliRunner().invoke(app, ["report", str(results_only)], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "report.md" in result.output and "hop_curves.png" in result.output

    missing = CliRunner().invoke(app, ["report", str(results_only / "nothing")])
    assert missing.exit_code != 0 and "no such file" in str(missing.exception)


@pytest.mark.llm
def test_eval_command_with_the_real_local_llm(settings: Settings, tmp_path: Path) -> None:
    """`hopgraph eval` on 2 HotpotQA questions with NaiveRAG: real index, LLM, checkpoints and files."""
    app = typer.Typer()
    register(app)
    out = tmp_path / "hp2"
    env = {
        "HOPGRAPH_DATA_DIR": str(settings.data_dir),
        "HOPGRAPH_MODEL_DIR": str(settings.models_path),
        "HOPGRAPH_CONFIG": "",
        **session_env(),
    }
    args = ["eval", "--dataset", "hotpotqa", "--data", str(SHARED_DATA / "hotpotqa"), "--methods", "naive"]
    args += ["--limit", "2", "--out", str(out), "--k", "3"]  # 3 of the default 10: fewer tokens to read
    result = CliRunner().invoke(app, args, env=env)
    assert result.exit_code == 0, result.output
    assert "naive: EM" in result.output

    records = read_records(out / "results.jsonl")
    [run_line] = [r for r in records if r["type"] == "run"]
    assert run_line["settings"]["llm_cache"] is True and "api_key" not in run_line["settings"]
    assert run_line["context"]["naive"]["top_k"] == 3
    assert run_line["index"].startswith("eval-hotpotqa-")
    lines = [r for r in records if r["type"] == "result"]
    assert len(lines) == 2 and all(r["error"] is None for r in lines)
    for r in lines:
        m = r["metrics"]
        assert 0 <= m["em"] <= m["f1"] <= 1 and 0 <= m["recall@2"] <= m["recall@5"] <= 1
        assert m["hops_used"] == 1 and len(r["evidence"]) == 3
        # one call to read, and one more where the model shortened a sentence to its answer span
        assert r["llm"]["calls"] == 1 + (r["answer_shortening"] == "model")
        assert r["llm"]["prompt_tokens"] > 100 and r["seconds"] > 0
    # every question's gold paragraphs are in the 20-paragraph index, so dense+BM25 finds some of them
    assert sum(r["metrics"]["recall@5"] for r in lines) > 0
    for name in ("report.md", "hop_curves.png", "f1_vs_calls.png", "explorer.html"):
        assert (out / name).stat().st_size > 0
    # the page, in a real browser: the first question's steps as the graph ran them, no script error
    dom, console = open_page(out / "explorer.html", f"q=hotpotqa/{lines[0]['question_id']}")
    assert console == [] and lines[0]["question"] in dom
    assert re.findall(r'<div class="node">([^<]+)</div>', dom) == ["__start__", "retrieve", "generate"]
    assert [step["node"] for step in lines[0]["steps"]] == ["__start__", "retrieve", "generate"]

    again = CliRunner().invoke(app, args, env=env)  # everything is done: nothing re-runs
    assert again.exit_code == 0, again.output
    assert len([r for r in read_records(out / "results.jsonl") if r["type"] == "result"]) == 2


def test_a_later_start_with_other_methods_keeps_every_method_in_the_report(
    tmp_path: Path,
    saver: SqliteSaver,  # noqa: F811
) -> None:
    """Ablations run later on fewer questions, into the folder of the main comparison."""
    out = tmp_path / "run"
    run_scripted(out, {"one": Script()}, saver)
    later = {"one": {"top_k": 3}, "two": {"top_k": 1}}  # "one" as before: other settings would be refused
    run_scripted(out, {"one": Script(), "two": Script()}, saver, limit=2, context=later)
    text = write_report(out).read_text(encoding="utf-8")
    answers = section(text, "Answers and cost per question")
    assert "| one | 4 | 0 |" in answers and "| two | 2 | 0 |" in answers
    assert answers.index("| one |") < answers.index("| two |")  # the first start's methods come first
    common = section(text, "Answers on the 2 questions every method answered")
    assert "| one | 2 | 0 |" in common and "| two | 2 | 0 |" in common
    settings = section(text, "Settings")
    assert "2 start(s)" in settings and "methods one, two" in settings and "(limit 2)" in settings
    assert '"one": {' in settings and '"two": {' in settings


def test_a_method_a_run_lists_before_its_first_result_gets_no_row(results_only: Path) -> None:
    """The report of a run that has just started a method (its run line is written, no result yet)."""
    path = results_only / "results.jsonl"
    run_line = next(r for r in read_records(path) if r["type"] == "run")
    started = {**run_line, "methods": [*run_line["methods"], "three"]}
    with path.open("a", encoding="utf-8") as f:
        f.write(json.dumps(started) + "\n")
    answers = section(write_report(results_only).read_text(encoding="utf-8"), "Answers and cost per question")
    assert "| one | 4 |" in answers and "| three |" not in answers


def test_budget_bars_are_drawn_one_row_per_retriever(tmp_path: Path) -> None:
    from evals.plots import plot_budget_bars

    rows = {name: {"4,000 chars": 0.4, "10,000 chars": 0.5} for name in ("peer BM25", "chainrag", "naive")}
    few = plot_budget_bars(dict(list(rows.items())[:1]), "one", tmp_path / "one.png")
    many = plot_budget_bars(rows, "three", tmp_path / "three.png")
    with Image.open(few) as one, Image.open(many) as three:
        assert one.format == three.format == "PNG"
        assert three.height > one.height  # the figure grows with the retrievers it compares


def paired_records(em: list[float]) -> list[dict]:
    """Result records carrying only what the paired comparison reads (EM given, the rest constant)."""
    same = {"f1": 0.5, "recall@2000ch": 0.5, "full@2000ch": 1.0, "coverage": 0.5}
    return [{"question_id": f"q{i}", "metrics": {"em": v, **same}} for i, v in enumerate(em)]


def test_paired_mark_follows_the_exact_test_after_holm() -> None:
    """Defect 6 of issue 37: 4 wins and 0 losses in 20 give a bootstrap interval excluding 0 but
    p = 0.125; one paired question is never a difference; a large real difference is still marked."""
    few = {"a": paired_records([1.0] * 4 + [0.0] * 16), "b": paired_records([0.0] * 20)}
    [em_few, *_] = with_holm({"few": paired_rows(few)})["few"]
    mean, low, _ = em_few["diff"]
    assert mean == pytest.approx(0.2) and low > 0  # the interval alone would have marked it
    # p = 2 / 2**4; Holm over the five metrics compared (the four others p = 1) makes it 0.625
    assert em_few["p"] == pytest.approx(0.125) and "| 20 | McNemar | 0.125 | 0.625 | no |" in "\n".join(
        _paired_section([em_few], 2)
    )
    one = {"a": paired_records([1.0]), "b": paired_records([0.0])}
    assert with_holm({"one": paired_rows(one)})["one"][0]["p"] == 1.0
    large = {"a": paired_records([1.0] * 30 + [0.0] * 20), "b": paired_records([0.0] * 50)}
    rows = with_holm({"few": paired_rows(few), "large": paired_rows(large)})
    [em_large, *others] = rows["large"]
    # 30 discordant pairs all one way: p = 2 / 2**30; times 10 comparisons, Holm keeps it far below 0.05
    assert em_large["p"] == pytest.approx(2 / 2**30) and em_large["p_holm"] == pytest.approx(10 * 2 / 2**30)
    assert "| yes |" in _paired_section([em_large], 2)[2]
    assert all(row["p"] == 1.0 for row in others)  # equal continuous scores: no difference at all
