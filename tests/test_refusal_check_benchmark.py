"""benchmarks.refusal_check reads the run without the refusal check out of a run with it: checked here
against a real run without it, through `hopgraph eval` with a scripted reader (wiring, not what a model
would answer)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from matplotlib.container import ErrorbarContainer

from benchmarks import refusal_check as bench
from evals.runner import latest_results, read_records, results_path
from hopgraph import Settings, services_for
from prompts import refusal_check
from prompts.answer import UNANSWERABLE
from tests import tiny_hotpot
from tests.scripted import ScriptedChatModel, scripted_gateway
from tests.test_bad_values import hopgraph, with_paths
from tests.test_evals_plots import xy, ytick_labels

QUESTIONS = [question for question, _, _ in tiny_hotpot.QUESTIONS]
GOLD = {question: gold for question, gold, _ in tiny_hotpot.QUESTIONS}


def check_reply(question: str) -> str:
    """The scripted check: the first two refused questions have every fact stated (the gold answer), the
    third a fact missing, the fourth no fact list."""
    refused = QUESTIONS.index(question)
    if refused == 3:
        return "I cannot tell."
    facts = [{"fact": "the first hop", "stated": True}, {"fact": "the second hop", "stated": refused != 2}]
    return json.dumps({"facts": facts, "answer": GOLD[question] if refused != 2 else ""})


def reply(prompt: str) -> str:
    """The reader refuses the first four questions and answers the last two; the check as above."""
    question = tiny_hotpot.question_in(prompt)
    assert question is not None
    if prompt.rstrip().endswith(refusal_check.CHECK):
        return check_reply(question)
    return UNANSWERABLE if QUESTIONS.index(question) < 4 else GOLD[question]


@pytest.fixture
def reader(settings: Settings, scripted_cli: ScriptedChatModel, monkeypatch: pytest.MonkeyPatch) -> None:
    llm, _ = scripted_gateway(reply)
    monkeypatch.setitem(services_for(settings)._built, "llm", llm)


def test_the_run_without_the_check_is_read_from_the_run_with_it(
    reader: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    args = ["eval", "--dataset", "hotpotqa", "--data", "DATA", "--out", "OUT", "--no-cache"]
    args += ["--methods", "naive,naive+refusal_check=false", "--set", "unanswerable=true"]
    code, out, err = hopgraph(with_paths(args, tmp_path), capsys)
    assert code == 0, (out, err)
    records = latest_results(read_records(results_path(tmp_path / "run"))).values()
    on = {r["question"]: r for r in records if r["method"] == "naive"}
    off = {r["question"]: r for r in records if r["method"] == "naive+refusal_check=false"}
    assert len(on) == len(off) == 6
    for question in QUESTIONS:
        em_before, em_after, refused_before, _ = bench.sides(on[question])
        assert em_before == off[question]["metrics"]["em"], question
        assert refused_before == (off[question]["outcome"] == "unanswerable"), question
        assert em_after == on[question]["metrics"]["em"]
    outcomes = [on[question]["outcome"] for question in QUESTIONS]
    assert outcomes == ["checked", "checked", "unanswerable", "unanswerable", "answered", "answered"]
    lines = bench.report(tmp_path / "run").splitlines()
    at = lines.index("## naive")
    read_all = [on[question]["metrics"]["full@read"] == 1.0 for question in QUESTIONS]
    assert any(read_all)  # the scripted run read every gold passage of some questions, so the line counts
    read = f"{sum(read_all[:4])} / {sum(read_all)} -> {sum(read_all[2:4])} / {sum(read_all)}"
    assert lines[at + 2 : at + 5] == [
        "refusals of answerable questions: 4 / 6 -> 2 / 6",
        f"  of them with every gold passage read (full@read): {read}",
        "null questions answered right: 0 / 0 -> 0 / 0",
    ]
    # two questions gained, none lost: McNemar's exact p for 2 discordant pairs is 0.5
    assert lines[at + 5].startswith("EM 33.3 -> 66.7: +33.3 [") and lines[at + 5].endswith("McNemar p 0.500")
    assert lines[at + 6] == "  EM bridge (n 6): 33.3 -> 66.7"
    assert lines[at + 7] == (
        "check verdicts: missing 1, stated 2, unread 1; checked answers right 2 of 2 (on null questions 0)"
    )
    # the figure: a row per method; the run without the check has nothing to gain from it
    [panel] = bench.figure(tmp_path / "run").axes
    assert ytick_labels(panel) == ["naive (6), p 0.500", "naive+refusal_check=false (6), p 1.000"]
    with_check, without = [c for c in panel.containers if isinstance(c, ErrorbarContainer)]
    assert xy(with_check.lines[0]) == pytest.approx(np.array([[100 / 3, 0]]))
    assert xy(without.lines[0]) == pytest.approx(np.array([[0.0, 1]]))
