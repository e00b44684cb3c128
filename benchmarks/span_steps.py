"""What the shared reader's span step did to a run's answers, before / after, paired, read from the run.

    .venv/bin/python -m benchmarks.span_steps runs/refusal-iter-retgen

The step (`nodes.generate.shortened`) turns a final reader's reply into the span the benchmarks score: the
Yes / No a yes-no question's reply opens with, the words after the verb of a reply restating the question,
the words the generator copies out of its reply, or, for a question offering two options (a yes-no
question's are Yes and No) whose answer names neither, the option chosen. Whenever it changed the answer
the record keeps the reply (`answer_sentence`) and how (`answer_shortening`), so one run holds both sides:
before = the reply as the answer, after = the answer; a record the step left alone is the same on both.
A yes-no question whose reply was neither word scores nothing before (its gold is Yes or No on every dev
slice), so the step's asks for the word are counted on their own: how many, and how many came back right.

Printed per method: per way of shortening, answers, EM and F1 of the reply -> of the answer; the yes-no
questions (`prompts.answer.is_yes_no_question`): how many, replies opening with the word, answers that
are the word, refusals kept, right; EM and F1 of the whole run before -> after with the paired
difference (bootstrap 95%, evals.stats.paired_difference) and McNemar's exact p on EM. The differences
are drawn, a row per method, into `--plot` (default RUN/span-steps.png).

Answers' lengths, the issue's "as short as the benchmark asks": per method, words per answer of the reply
and of the answer, refusals left out (mean; the share longer than the shortest gold by more than three
words, where EM cannot credit a span inside the answer; the distribution over evals.metrics.WORD_BUCKETS),
the distribution also drawn into answer-lengths.png beside the first figure.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from matplotlib.figure import Figure

from benchmarks.one_run import one_run_main, per_method_report
from evals.metrics import (
    PAST_GOLD_WORDS,
    WORD_BUCKETS,
    answer_words,
    exact_match,
    past_gold,
    token_f1,
    word_bucket,
    word_buckets,
)
from evals.plots import Interval, budget_bars_figure, intervals_figure, method_colors
from evals.runner import answered_by_method
from evals.stats import mcnemar_exact, paired_difference
from prompts.answer import is_yes_no_question, yes_no

PLOT_FILE = "span-steps.png"
LENGTHS_FILE = "answer-lengths.png"
Record = Mapping[str, Any]


def _shortened(record: Record) -> bool:
    """Whether the span step changed this answer (a refusal stands as it was given)."""
    return record.get("answer_sentence") is not None and record.get("outcome") != "unanswerable"


def reply(record: Record) -> str:
    """The answer without the span step: the reader's reply where the step changed it, else the answer."""
    return str(record["answer_sentence"] if _shortened(record) else record["prediction"])


def before(record: Record) -> tuple[float, float]:
    """(EM, F1) of the reply the reader gave, as the answer without the span step."""
    if not _shortened(record):
        return after(record)
    text = reply(record)
    return exact_match(text, record["gold_answers"]), token_f1(text, record["gold_answers"])


def after(record: Record) -> tuple[float, float]:
    """(EM, F1) of the answer as the run scored it."""
    return float(record["metrics"]["em"]), float(record["metrics"]["f1"])


def _sides(records: Sequence[Record]) -> tuple[Sequence[float], ...]:
    """(EM before, F1 before, EM after, F1 after) of `records`, each a list in their order."""
    return (*zip(*map(before, records), strict=True), *zip(*map(after, records), strict=True))


def _points(values: Sequence[float]) -> str:
    return f"{100 * sum(values) / len(values):.1f}" if values else "-"


def _paired(name: str, later: Sequence[float], earlier: Sequence[float]) -> str:
    diff, low, high = paired_difference(later, earlier)
    return (
        f"{name} {_points(earlier)} -> {_points(later)}: "
        f"{100 * diff:+.1f} [{100 * low:+.1f}, {100 * high:+.1f}]"
    )


def method_rows(records: Sequence[Record]) -> list[str]:
    """The lines printed for one method's answered records."""
    ways: dict[str, list[Record]] = defaultdict(list)
    for record in records:
        if record.get("answer_shortening"):
            ways[str(record["answer_shortening"])].append(record)
    lines = [f"questions {len(records)}, answers the step changed {sum(map(len, ways.values()))}"]
    for way, rows in sorted(ways.items()):
        em_b, f1_b, em_a, f1_a = _sides(rows)
        em, f1 = f"EM {_points(em_b)} -> {_points(em_a)}", f"F1 {_points(f1_b)} -> {_points(f1_a)}"
        lines.append(f"  {way} {len(rows)}: {em}, {f1}")
    yes_no_rows = [record for record in records if is_yes_no_question(record["question"])]
    worded = [yes_no(record["question"], reply(record)) is not None for record in yes_no_rows]
    words = [str(record["prediction"]).strip().lower() in {"yes", "no"} for record in yes_no_rows]
    asked = [r for r in yes_no_rows if r.get("answer_shortening") == "choice"]
    lines.append(
        f"yes-no questions {len(yes_no_rows)}: replies opening with the word {sum(worded)}, answers the word "
        f"{sum(words)}, refused {sum(r.get('outcome') == 'unanswerable' for r in yes_no_rows)}, "
        f"right {int(sum(after(r)[0] for r in yes_no_rows))}; asked for the word "
        f"{len(asked)}, right {int(sum(after(r)[0] for r in asked))}"
    )
    lines.append(length_line(records))
    em_b, f1_b, em_a, f1_a = _sides(records)
    lines.append(f"{_paired('EM', em_a, em_b)}, McNemar p {mcnemar_exact(em_a, em_b):.3f}")
    lines.append(_paired("F1", f1_a, f1_b))
    return lines


def _answered(records: Sequence[Record]) -> list[Record]:
    """The records whose answer is not a refusal: the length of a refusal's fixed wording says nothing of
    how short the reader answers."""
    return [r for r in records if r.get("outcome") != "unanswerable"]


def _lengths(records: Sequence[Record]) -> dict[str, list[str]]:
    """The reply and the answer of each record, as the two sides of the length distribution."""
    return {"reply": [reply(r) for r in records], "answer": [str(r["prediction"]) for r in records]}


def length_line(records: Sequence[Record]) -> str:
    """Words per answer, reply -> answer, refusals left out: the mean, the share longer than the gold by more
    than PAST_GOLD_WORDS, and how many answers fall in each of WORD_BUCKETS."""
    records = _answered(records)
    if not records:
        return "words per answer: every answer a refusal"
    golds = [r["gold_answers"] for r in records]
    sides = _lengths(records).values()
    means = " -> ".join(f"{sum(map(answer_words, texts)) / len(texts):.1f}" for texts in sides)
    past = " -> ".join(f"{100 * sum(map(past_gold, texts, golds)) / len(texts):.0f}%" for texts in sides)
    tallies = [Counter(map(word_bucket, texts)) for texts in sides]
    counts = ", ".join(
        f"{name}: " + " -> ".join(str(tally[name]) for tally in tallies) for name, _, _ in WORD_BUCKETS
    )
    return (
        f"words per answer ({len(records)}, refusals left out), reply -> answer: mean {means}; "
        f"past the gold by more than {PAST_GOLD_WORDS} {past}; answers of {counts} words"
    )


def lengths_figure(run_dir: Path) -> Figure:
    """The answer-length distribution, reply against answer, a pair of rows per method: the share of its
    answers (refusals left out) in each bucket of words."""
    rows = {
        f"{method} ({len(answers)}): {side}": word_buckets(texts)
        for method, records in answered_by_method(run_dir).items()
        if (answers := _answered(records))
        for side, texts in _lengths(answers).items()
    }
    return budget_bars_figure(rows, "Words per answer: the reply, then the answer", "share of answers")


def report(run_dir: Path) -> str:
    """Every method's lines, from the folder's latest answered records."""
    return per_method_report(run_dir, method_rows)


def figure(run_dir: Path) -> Figure:
    """EM and F1 of the answers against the replies they were cut from, a row per method: the paired
    difference with its 95% interval, McNemar's exact p on EM in the label."""
    methods = answered_by_method(run_dir)
    colors = method_colors(methods)
    panels: dict[str, list[Interval]] = {"EM, answer − reply (points)": [], "F1, answer − reply (points)": []}
    for method, records in methods.items():
        em_b, f1_b, em_a, f1_a = _sides(records)
        label = f"{method} ({len(records)}), p {mcnemar_exact(em_a, em_b):.3f}"
        for rows, (later, earlier) in zip(panels.values(), ((em_a, em_b), (f1_a, f1_b)), strict=True):
            rows.append(Interval(label, *paired_difference(later, earlier), colors[method]))
    return intervals_figure(panels, empty="no answered question")


def main(argv: Sequence[str] | None = None) -> None:
    one_run_main(
        argv,
        __doc__,
        "results folder of `hopgraph eval`",
        PLOT_FILE,
        method_rows,
        figure,
        {LENGTHS_FILE: lengths_figure},
    )


if __name__ == "__main__":
    main()
