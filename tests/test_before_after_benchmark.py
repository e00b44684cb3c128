"""benchmarks.before_after pairs two real runs of `hopgraph eval` question by question: here two runs of the
tiny benchmark whose scripted reader (wiring, not what a model would answer) refuses four questions
before and two after, checked against the runs' own records."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks import before_after as bench
from hopgraph import Settings, services_for
from prompts.answer import UNANSWERABLE
from tests import tiny_hotpot
from tests.scripted import ScriptedChatModel, scripted_gateway
from tests.test_bad_values import hopgraph, with_paths

QUESTIONS = [question for question, _, _ in tiny_hotpot.QUESTIONS]
GOLD = {question: gold for question, gold, _ in tiny_hotpot.QUESTIONS}


def run(
    refused: int,
    out: str,
    tmp_path: Path,
    settings: Settings,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> Path:
    """One evaluation into tmp_path/out whose reader refuses the first `refused` questions (the refusal
    check off: its own turn is benchmarks.refusal_check's subject)."""

    def reply(prompt: str) -> str:
        question = tiny_hotpot.question_in(prompt)
        assert question is not None
        return UNANSWERABLE if QUESTIONS.index(question) < refused else GOLD[question]

    monkeypatch.setitem(services_for(settings)._built, "llm", scripted_gateway(reply)[0])
    args = ["eval", "--dataset", "hotpotqa", "--data", "DATA", "--out", out, "--no-cache"]
    args += ["--methods", "naive", "--set", "unanswerable=true", "--set", "refusal_check=false"]
    code, stdout, stderr = hopgraph(with_paths(args, tmp_path), capsys)
    assert code == 0, (stdout, stderr)
    return tmp_path / out


def test_two_runs_are_paired_question_by_question(
    settings: Settings,
    scripted_cli: ScriptedChatModel,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    before = run(4, "before", tmp_path, settings, monkeypatch, capsys)
    after = run(2, "after", tmp_path, settings, monkeypatch, capsys)
    lines = bench.report(before, after).splitlines()
    assert lines[0] == "## naive: 6 questions paired (0 answered on one side only, left out)"
    # two questions gained, none lost: McNemar's exact p for 2 discordant pairs is 0.5
    assert lines[1].startswith("EM 33.3 -> 66.7: +33.3 [") and lines[1].endswith("McNemar p 0.500")
    assert "refusals of answerable questions: 4 / 6 -> 2 / 6" in lines
    assert "null questions answered right: 0 / 0 -> 0 / 0" in lines
    records = bench.answered(after)
    hits = [r["metrics"]["hits@4"] for r in records.values() if r["metrics"].get("hits@4") is not None]
    shown = f"{100 * sum(hits) / len(hits):.1f}" if hits else "-"
    assert f"hits@4: {shown} -> {shown}" in lines  # retrieval did not change between the two runs
