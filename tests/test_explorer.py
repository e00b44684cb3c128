"""explorer.html opened in a real headless Chromium: the pair filter, a question's steps and gold marks,
the leaderboard's numbers equal to report.md's, and no script error on a folder with a failed question and
a null query. The run folder comes from the scripted runner of test_evals_runner (a scripted graph, named
as such: this tests the page, not a method); a real-LLM run's page is opened in test_evals_report."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from browser import open_page
from langgraph.checkpoint.sqlite import SqliteSaver
from test_evals_report import section
from test_evals_runner import Script, run_scripted, saver  # noqa: F401  (saver is a fixture)

from evals.report import write_report
from evals.runner import read_records
from stores.files import LinkedPathError


@pytest.fixture
def page(tmp_path: Path, saver: SqliteSaver) -> Path:  # noqa: F811
    """A two-method run where `two` failed q4 and answered q1 wrong ("Lyon", cut from a sentence, after a
    refusal check); q3 is a null query."""
    out = tmp_path / "run"
    run_scripted(out, {"one": Script(), "two": Script(fail_once=frozenset({"question q4?"}))}, saver)
    records = read_records(out / "results.jsonl")
    for record in records:
        if record.get("method") == "two" and record.get("question_id") == "q1":
            record["prediction"] = "Lyon"
            record["answer_sentence"] = "The city it names is Lyon, on the Rhone"
            record["answer_shortening"] = "model"
            record["refusal_check"] = {
                "verdict": "stated",
                "facts": [
                    {"fact": "the city is named", "stated": True},
                    {"fact": "its river", "stated": False},
                ],
            }
    (out / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    write_report(out, baseline="two")
    return out / "explorer.html"


def cells(row_html: str) -> list[str]:
    return [re.sub(r"<[^>]+>", "", cell) for cell in re.findall(r"<td>(.*?)</td>", row_html)]


def test_pair_filter_then_a_question_shows_both_methods_steps_and_gold(page: Path) -> None:
    dom, console = open_page(page, "pair=one%2Ctwo")
    assert console == [] and 'data-ready="yes"' in dom
    # one right and two wrong on q1 only (q4 two failed, so it is not among the compared questions)
    assert 'id="count">1 of 3 questions' in dom
    [link] = re.findall(r'<a href="#([^"]+)" class="qlink">', dom)
    dom, console = open_page(page, link.replace("&amp;", "&"))
    assert console == []
    question = dom.split('id="question"', 1)[1]
    assert "question q1?" in question and "Paris" in question
    methods = question.split('class="method"')[1:]
    assert [re.search(r"<h3>(\w+)", m).group(1) for m in methods] == ["one", "two"]  # type: ignore[union-attr]
    for method, answer, verdict in zip(methods, ("Paris", "Lyon"), ("right", "wrong"), strict=True):
        nodes = re.findall(r'<div class="node">([^<]+)</div>', method)
        assert nodes == ["__start__", "retrieve", "generate"]  # the steps, in the order the graph ran them
        assert f'<b class="answer">{answer}</b>' in method and f'class="{verdict}"' in method
        # retrieve's three passages: d1's and d2's hold gold facts, d3's does not
        assert method.count('class="passage gold"') == 2 and method.count('class="passage"') == 1
    assert "LLM generator: 1 call, 100 prompt (40 reused)" in question
    # the reply an answer was cut from is shown beside it, only where there was one
    assert "sentence" not in methods[0]
    assert "Cut (model) from the reply: <q>The city it names is Lyon, on the Rhone</q>" in methods[1]
    # so is the refusal check that gave it, each fact with its verdict
    assert "Refusal checked" not in methods[0]
    assert "<p>Refusal checked: stated</p>" in methods[1]
    assert '<li class="stated">stated: the city is named</li>' in methods[1]
    assert '<li class="missing">missing: its river</li>' in methods[1]


def test_leaderboard_numbers_are_report_md_s(page: Path) -> None:
    dom, _ = open_page(page)
    report = (page.parent / "report.md").read_text(encoding="utf-8")
    board = report.split("## Leaderboard", 1)[1].split("\n\n", 2)[1]
    for method in ("one", "two"):
        md_row = next(line for line in board.splitlines() if line.startswith(f"| {method} |"))
        md_cells = [cell.strip() for cell in md_row.strip("|").split("|")]
        page_row = next(
            row
            for row in re.findall(r"<tr>(.*?)</tr>", dom.split('id="board"', 1)[1])
            if f"<td>{method}</td>" in row
        )
        assert cells(page_row) == md_cells


@pytest.mark.parametrize("question", ["toy/q3", "toy/q4", "toy/absent"])
def test_a_null_query_a_failed_question_and_a_stale_link_render_without_a_script_error(
    page: Path, question: str
) -> None:
    dom, console = open_page(page, f"q={question}")
    assert console == [] and 'data-ready="yes"' in dom
    if question == "toy/q3":  # the null query: no gold evidence, both methods right to refuse
        assert "Insufficient information." in dom.split('id="question"', 1)[1]
    else:  # q4 is not among the questions both methods answered; a stale link says so
        assert f"No question {question} in this page." in dom


HOSTILE = '<script>document.title="pwned"</script><img src="x" onerror="document.title=1">'


def test_hostile_fields_stay_text_in_the_page_and_on_one_line_in_report_md(
    tmp_path: Path,
    saver: SqliteSaver,  # noqa: F811
) -> None:
    """A shared results folder may hold anything: a passage with HTML in it is shown as text (no element
    is made of it), and an error holding a line break and code stays one inert line of report.md."""
    out = tmp_path / "run"
    run_scripted(out, {"one": Script(), "two": Script(fail_once=frozenset({"question q4?"}))}, saver)
    records = read_records(out / "results.jsonl")
    for record in records:
        if record.get("method") == "one" and record.get("question_id") == "q1":
            record["evidence"][0]["text"] = HOSTILE
            record["steps"] = []
        if record.get("error"):
            record["error"] = "boom\nimport os; os.system('touch pwned') <b>x</b>"
    (out / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    write_report(out, baseline="two")

    report = (out / "report.md").read_text(encoding="utf-8")
    [failure] = [line for line in report.splitlines() if "boom" in line]
    assert failure.endswith("boom import os; os.system('touch pwned') &lt;b&gt;x&lt;/b&gt;")
    assert not any(line.startswith("import os") for line in report.splitlines())

    dom, console = open_page(out / "explorer.html", "q=toy/q1")
    assert console == [] and 'data-ready="yes"' in dom
    shown = dom.split('id="question"', 1)[1]
    assert "&lt;script&gt;document.title=" in shown and '<img src="x"' not in shown
    assert "<title>pwned</title>" not in dom


# a 60-character dataset name leaves its plot panels no room (the plots are not what this test reads)
@pytest.mark.filterwarnings("ignore:constrained_layout not applied:UserWarning")
def test_names_from_a_shared_folder_cannot_restructure_report_md(
    tmp_path: Path,
    saver: SqliteSaver,  # noqa: F811
) -> None:
    """A method label, a dataset and a run's name and index are names a results file gives: written by
    someone else, they stay inert text of their own cell, heading or line, and hopgraph's own labels read
    as written."""
    out = tmp_path / "run"
    run_scripted(out, {"one": Script(), "two+top_k=2": Script()}, saver)
    hostile = {
        "one": "one|<img src=x>|[a](javascript:x)",
        "toy": "toy\n# Injected heading\n<script>alert(1)</script>",
        "toyrun": "toyrun` <b>x</b>\n- injected line",
        "toy-index": "`toy-index`\n```\ninjected block",
    }
    records = read_records(out / "results.jsonl")
    for record in records:
        for key in ("method", "dataset", "run_name", "index"):
            if record.get(key) in hostile:
                record[key] = hostile[record[key]]
        if record.get("type") == "run":
            record["methods"] = [hostile.get(method, method) for method in record["methods"]]
    (out / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    write_report(out, baseline="two+top_k=2")

    report = (out / "report.md").read_text(encoding="utf-8")
    lines = report.splitlines()
    assert not any(line.startswith(("# Injected", "- injected", "injected")) for line in lines)
    assert "<img" not in report and "<script>" not in report and "<b>" not in report
    assert re.search(r"(?<!\\)\]\(javascript", report) is None  # its brackets escaped: no link is made
    # the hostile label keeps to its own cell: every row of the answers table has the header's columns
    table = section(report, "Answers and cost per question")
    rows = [line for line in table.splitlines() if line.startswith("|")]
    cells = {len(re.split(r"(?<!\\)\|", row)) for row in rows}
    assert len(cells) == 1 and any(row.startswith("| one\\|&lt;img") for row in rows), rows
    assert "## toy # Injected heading &lt;script&gt;" in report
    assert "- toyrun\\` &lt;b&gt;x&lt;/b&gt; - injected line" in report
    assert "| two+top_k=2 |" in report  # hopgraph's own label, as written


def test_a_report_is_not_written_through_a_planted_link(tmp_path: Path, saver: SqliteSaver) -> None:  # noqa: F811
    """report.md linked to a file elsewhere (git and tar keep links): the report is refused with one line
    naming the link, and the file it points at is untouched."""
    out = tmp_path / "run"
    run_scripted(out, {"one": Script()}, saver)
    outside = tmp_path / "bashrc"
    outside.write_text("untouched\n", encoding="utf-8")
    (out / "report.md").unlink(missing_ok=True)
    (out / "report.md").symlink_to(outside)
    with pytest.raises(LinkedPathError, match=r"report\.md: this file is a symbolic link"):
        write_report(out, baseline="one")
    assert outside.read_text(encoding="utf-8") == "untouched\n"
