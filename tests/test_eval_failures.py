"""`hopgraph eval` tells scripts and CI when questions failed: exit 1 and one line saying how many and how to
retry them, unless `--allow-failures`; the re-run asks only the failed question again and exits 0.

Run in this process through the command's own entry point over the tiny benchmark, with a scripted chat
model (named as such: it tests the command's exit codes, never what an LLM would answer) that raises for
one question while `down` holds, as a provider gone away would."""

from __future__ import annotations

from pathlib import Path

import pytest

from evals.runner import latest_results, read_records, results_path
from hopgraph import Settings, services_for
from tests import tiny_hotpot
from tests.scripted import ScriptedChatModel, scripted_gateway
from tests.test_bad_values import EVAL, hopgraph, with_paths

BROKEN = tiny_hotpot.QUESTIONS[0][0]


def test_failed_questions_exit_1_unless_allowed_and_a_rerun_retries_only_them(
    scripted_cli: ScriptedChatModel,
    settings: Settings,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    down = True

    def reply(prompt: str) -> str:
        if down and tiny_hotpot.question_in(prompt) == BROKEN:
            raise RuntimeError("the provider went away")
        return tiny_hotpot.answer(prompt)

    llm, model = scripted_gateway(reply)
    monkeypatch.setitem(services_for(settings)._built, "llm", llm)
    monkeypatch.chdir(tmp_path)
    args = with_paths([*EVAL, "--limit", "3"], tmp_path)

    code, out, err = hopgraph(args, capsys)
    assert code == 1, (out, err)
    assert "1 question(s) failed: re-run the same command to retry only them" in err
    assert "naive: EM 100.0 · F1 100.0 over 2 questions, 1 failed" in out  # the report is still written
    failed = [r for r in latest_results(read_records(results_path(tmp_path / "run"))).values() if r["error"]]
    assert [r["question"] for r in failed] == [BROKEN]

    code, out, err = hopgraph([*args, "--allow-failures"], capsys)
    assert code == 0, (out, err)

    down = False
    asked = len(model.prompts)
    code, out, err = hopgraph(args, capsys)
    assert code == 0 and "over 3 questions" in out and "question(s) failed" not in err, (out, err)
    assert {tiny_hotpot.question_in(p) for p in model.prompts[asked:]} == {BROKEN}
