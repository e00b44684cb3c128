"""benchmarks.span_steps reads the answers without the shared reader's span step out of a run with it: the
replies a scripted reader gave through a real `hopgraph eval` (wiring, not what a model would answer) are
scored as the "before" side, and each way of shortening is counted where the run took it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from matplotlib.container import ErrorbarContainer

from benchmarks import span_steps as bench
from evals.metrics import WORD_BUCKETS
from evals.runner import answered_results
from hopgraph import Settings, services_for
from prompts import answer
from tests import tiny_hotpot
from tests.scripted import ScriptedChatModel, scripted_gateway
from tests.test_bad_values import hopgraph, with_paths
from tests.test_evals_plots import xy, ytick_labels

LANTERNS = tiny_hotpot.QUESTIONS[0][2][:1]  # "The Museum of Lanterns stands in Orvik. It opened in 1911."
ORVIK = tiny_hotpot.QUESTIONS[0][2][1:]  # "Orvik is a harbour city. ..."
OPENED = "Did the Museum of Lanterns open before 1920?"
HARBOUR = "Is Orvik a harbour city?"
QUESTIONS = [
    *tiny_hotpot.QUESTIONS[:3],
    (OPENED, "yes", LANTERNS),
    (HARBOUR, "yes", ORVIK),
]
RIVER, FOUNDER, BORN = (question for question, _, _ in QUESTIONS[:3])
# The reader's first reply to each question: a sentence (cut by the generator, asked which words answer),
# the gold span itself (left alone), a sentence whose span is wrong, a yes-no question's year (asked for
# the word) and a yes-no reply opening with the word (cut by rule).
REPLIES = {
    RIVER: "The Vell is the river that flows through the harbour city of Orvik",
    FOUNDER: "Ada Marrow",
    BORN: "The author of Salt Roads was born in a small northern town",
    OPENED: "1911",
    HARBOUR: "Yes, Orvik is a harbour city",
}
SPANS = {RIVER: "the Vell", BORN: "a small northern town"}


def reply(prompt: str) -> str:
    question = next(q for q, _, _ in reversed(QUESTIONS) if q in prompt)
    if prompt.rstrip().endswith(answer.yes_no_request().rstrip()):
        return "Yes"
    if prompt.rstrip().endswith(answer.shorten_request(question).rstrip()):
        return SPANS[question]
    return REPLIES[question]


@pytest.fixture
def reader(
    settings: Settings, scripted_cli: ScriptedChatModel, monkeypatch: pytest.MonkeyPatch
) -> ScriptedChatModel:
    monkeypatch.setattr(tiny_hotpot, "QUESTIONS", QUESTIONS)
    llm, model = scripted_gateway(reply)
    monkeypatch.setitem(services_for(settings)._built, "llm", llm)
    return model


def test_the_replies_before_the_span_step_are_read_from_the_run_with_it(
    reader: ScriptedChatModel,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    args = ["eval", "--dataset", "hotpotqa", "--data", "DATA", "--out", "OUT", "--no-cache"]
    code, out, err = hopgraph(with_paths([*args, "--methods", "naive"], tmp_path), capsys)
    assert code == 0, (out, err)
    records = {r["question"]: r for r in answered_results(tmp_path / "run").values()}
    assert {q: r["answer_shortening"] for q, r in records.items()} == {
        RIVER: "model",
        FOUNDER: None,
        BORN: "model",
        OPENED: "choice",
        HARBOUR: "yes_no",
    }
    for question, record in records.items():
        em, f1 = bench.before(record)
        assert record["answer_sentence"] in (None, REPLIES[question])
        if record["answer_sentence"]:
            assert em == float(record["gold_answers"] == [REPLIES[question]]), question
            assert f1 < 1.0, question  # each reply here has words the gold lacks
        else:
            assert (em, f1) == (1.0, 1.0), question

    lines = bench.report(tmp_path / "run").splitlines()
    cut_f1 = 100 * np.mean([bench.before(records[q])[1] for q in (RIVER, BORN)])
    at = lines.index("## naive")
    assert lines[at + 1 : at + 5] == [
        "questions 5, answers the step changed 4",
        "  choice 1: EM 0.0 -> 100.0, F1 0.0 -> 100.0",
        f"  model 2: EM 0.0 -> 50.0, F1 {cut_f1:.1f} -> 50.0",
        f"  yes_no 1: EM 0.0 -> 100.0, F1 {100 * bench.before(records[HARBOUR])[1]:.1f} -> 100.0",
    ]
    assert lines[at + 5] == (
        "yes-no questions 2: replies opening with the word 1, answers the word 2, refused 0, right 2; "
        "asked for the word 1, right 1"
    )
    # replies of 13, 2, 12, 1 and 6 words; answers of 2, 2, 4, 1 and 1. Past the shortest gold by more than
    # three words: the river's, the birth's and the harbour's replies; no answer ("a small northern town"
    # is 4 words against 1874's 1, not more than 3 past it)
    assert lines[at + 6] == (
        "words per answer (5, refusals left out), reply -> answer: mean 6.8 -> 2.0; past the gold by more "
        "than 3 60% -> 0%; answers of 0: 0 -> 0, 1: 1 -> 2, 2: 1 -> 2, 3: 0 -> 0, 4-5: 0 -> 1, 6-10: 1 -> 0, "
        "> 10: 2 -> 0 words"
    )
    # three answers gained (the Vell, the opening year's Yes, the harbour's Yes), none lost: McNemar's p 0.25
    assert lines[at + 7].startswith("EM 20.0 -> 80.0: +60.0 [") and lines[at + 7].endswith("McNemar p 0.250")

    em_panel, f1_panel = bench.figure(tmp_path / "run").axes
    assert ytick_labels(em_panel) == ytick_labels(f1_panel) == ["naive (5), p 0.250"]
    [em_row] = [c for c in em_panel.containers if isinstance(c, ErrorbarContainer)]
    assert xy(em_row.lines[0]) == pytest.approx(np.array([[60.0, 0]]))

    # the distribution drawn: a bar per bucket for the replies and for the answers, of the same shares
    [lengths] = bench.lengths_figure(tmp_path / "run").axes
    assert ytick_labels(lengths) == ["naive (5): reply", "naive (5): answer"]
    widths = [[bar.get_width() for bar in bars] for bars in lengths.containers]  # per bucket: reply, answer
    buckets = [name for name, _, _ in WORD_BUCKETS]
    assert dict(zip(buckets, widths, strict=True)) == {
        "0": [0.0, 0.0], "1": [0.2, 0.4], "2": [0.2, 0.4], "3": [0.0, 0.0],
        "4-5": [0.0, 0.2], "6-10": [0.2, 0.0], "> 10": [0.4, 0.0],
    }  # fmt: skip

    # the command writes both figures, the lengths beside --plot, into a folder it creates
    bench.main([str(tmp_path / "run"), "--plot", str(tmp_path / "figures" / "steps.png")])
    assert (tmp_path / "figures" / "steps.png").stat().st_size > 0
    assert (tmp_path / "figures" / bench.LENGTHS_FILE).stat().st_size > 0
