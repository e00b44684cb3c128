"""The refusal check (issue 34 item 2), before / after, paired per question, read from one run with it on.

    .venv/bin/hopgraph eval --dataset multihop_rag --data ../shared/data/multihop_rag \
        --out runs/refusal-check --methods naive --limit 50
    .venv/bin/python -m benchmarks.refusal_check runs/refusal-check

The check runs only after a refusal the method would have kept (`unanswerable` on), as one more turn of the
same conversation, so a run with it on holds the run without it: every call before the refusal is the
same call (with `refusal_check=false` they come back from the response cache, the same replies), and
without the check the refusal would have been the answer. A record shows such a refusal by its
`refusal_check` (the shared reader refused), or by the fallback line of a refusal that only the check sends
on to the reader (AnsInt's refused integration, a refused chain of thought: IR-CoT's, Iter-RetGen's last).
Before = that refusal, scored as the canonical refusal (`outcome` "unanswerable"); after = the record as
it is.

Printed per method: refusals of answerable questions (all, and those where every gold passage was read, so
that the passages held what the refusal said was missing) and null questions answered right, before -> after;
EM before -> after with the paired difference (bootstrap 95% interval, evals.stats.paired_difference) and
McNemar's exact p; EM per question type; the check's verdicts and how many checked answers were right.
The EM differences are also drawn, a row per method, into `--plot` (default RUN/refusal-check.png).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from matplotlib.figure import Figure

from benchmarks.one_run import one_run_main, per_method_report
from evals.metrics import exact_match
from evals.plots import Interval, intervals_figure, method_colors
from evals.runner import answered_by_method
from evals.stats import mcnemar_exact, paired_difference
from prompts.answer import UNANSWERABLE

# Fallback lines (their start) of a refusal that only the check sends on to a reader (nodes.integrate,
# nodes.chain_of_thought): without the check, the method kept that refusal as its answer.
SENT_ON = (
    "integrate: the sub-answers gave no answer; answered from the contexts",
    "cot reader: the chain of thought refused",
)
PLOT_FILE = "refusal-check.png"


def refused_before(record: Mapping[str, Any]) -> bool:
    """Whether the method, without the check, would have answered this question with its refusal."""
    return bool(record.get("refusal_check")) or any(
        line.startswith(SENT_ON) for line in record.get("fallbacks") or []
    )


def sides(record: Mapping[str, Any]) -> tuple[float, float, bool, bool]:
    """(EM before, EM after, refused before, refused after) of one answered record."""
    after = float(record["metrics"]["em"])
    refused_after = record.get("outcome") == "unanswerable"
    if not refused_before(record):
        return after, after, refused_after, refused_after
    return exact_match(UNANSWERABLE, record["gold_answers"]), after, True, refused_after


def _count(rows: Sequence[tuple[Any, ...]], at: int) -> str:
    """How many of `rows` have a true (or 1.0) value at `at`, out of how many."""
    return f"{sum(int(row[at]) for row in rows)} / {len(rows)}"


def method_rows(records: Sequence[Mapping[str, Any]]) -> list[str]:
    """The lines printed for one method's answered records."""
    scored = [(record, *sides(record)) for record in records]
    answerable = [row for row in scored if row[0]["answerable"]]
    null = [row for row in scored if not row[0]["answerable"]]
    # where the reader had every gold passage, a refusal is the reader's miss, not retrieval's
    all_read = [row for row in answerable if row[0]["metrics"].get("full@read") == 1.0]
    before = [row[1] for row in scored]
    after = [row[2] for row in scored]
    diff, low, high = paired_difference(after, before)
    p = mcnemar_exact(after, before)
    lines = [
        f"questions {len(scored)} (answerable {len(answerable)}, null {len(null)})",
        f"refusals of answerable questions: {_count(answerable, 3)} -> {_count(answerable, 4)}",
        f"  of them with every gold passage read (full@read): {_count(all_read, 3)} -> {_count(all_read, 4)}",
        f"null questions answered right: {_count(null, 1)} -> {_count(null, 2)}",
        f"EM {100 * sum(before) / len(scored):.1f} -> {100 * sum(after) / len(scored):.1f}: "
        f"{100 * diff:+.1f} [{100 * low:+.1f}, {100 * high:+.1f}], McNemar p {p:.3f}",
    ]
    by_type: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for record, em_before, em_after, _, _ in scored:
        by_type[str(record.get("question_type") or "-")].append((em_before, em_after))
    for kind, pairs in sorted(by_type.items()):
        b, a = (100 * sum(p[i] for p in pairs) / len(pairs) for i in (0, 1))
        lines.append(f"  EM {kind} (n {len(pairs)}): {b:.1f} -> {a:.1f}")
    verdicts = Counter(r["refusal_check"]["verdict"] for r, *_ in scored if r.get("refusal_check"))
    checked = [row for row in scored if row[0].get("outcome") == "checked"]
    right = sum(row[2] for row in checked)
    lines.append(
        "check verdicts: "
        + (", ".join(f"{name} {n}" for name, n in sorted(verdicts.items())) or "none")
        + f"; checked answers right {int(right)} of {len(checked)}"
        + f" (on null questions {sum(not row[0]['answerable'] for row in checked)})"
    )
    return lines


def report(run_dir: Path) -> str:
    """Every method's lines, from the folder's latest answered records."""
    return per_method_report(run_dir, method_rows)


def figure(run_dir: Path) -> Figure:
    """EM with the check against without it, a row per method: the paired difference with its 95% interval,
    McNemar's exact p in the label."""
    methods = answered_by_method(run_dir)
    colors = method_colors(methods)
    rows = []
    for method, records in methods.items():
        before, after = zip(*(sides(record)[:2] for record in records), strict=True)
        label = f"{method} ({len(records)}), p {mcnemar_exact(after, before):.3f}"
        rows.append(Interval(label, *paired_difference(after, before), colors[method]))
    return intervals_figure({"EM, refusal check on − off (points)": rows}, empty="no answered question")


def main(argv: Sequence[str] | None = None) -> None:
    one_run_main(
        argv,
        __doc__,
        "results folder of `hopgraph eval` with the refusal check on",
        PLOT_FILE,
        method_rows,
        figure,
    )


if __name__ == "__main__":
    main()
