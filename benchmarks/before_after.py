"""Two runs of the same questions, before and after a change, paired question by question.

    .venv/bin/python -m benchmarks.before_after runs/before runs/after

For each method both folders answered (their latest answered records, matched by question id; a question
only one side answered is left out and counted): EM per question type, refusals of answerable questions,
null questions answered right, MultiHop-RAG's own retrieval metrics (Hits@4, Hits@10, MAP@10, MRR@10, over
the questions that have gold evidence) and the prompt tokens a question, before -> after, with the paired
EM difference (bootstrap 95% interval, evals.stats.paired_difference) and McNemar's exact p. The two runs
differ in what the change changed (code at two commits, or a setting), so each side is its own folder.
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from statistics import mean
from typing import Any

from evals.runner import answered_results
from evals.stats import mcnemar_exact, paired_difference

Record = Mapping[str, Any]
OFFICIAL = ("hits@4", "hits@10", "map@10", "mrr@10")


def answered(run_dir: Path) -> dict[tuple[str, str], Record]:
    """The folder's latest answered record of each (method, question id)."""
    return {
        (method, str(question_id)): record
        for (_, method, question_id), record in answered_results(run_dir).items()
    }


def _share(rows: Sequence[Record], test: Callable[[Record], bool]) -> str:
    """How many of `rows` pass `test`, out of how many."""
    return f"{sum(bool(test(row)) for row in rows)} / {len(rows)}"


def _metric(rows: Sequence[Record], name: str) -> str:
    values = [row["metrics"][name] for row in rows if row["metrics"].get(name) is not None]
    return f"{100 * mean(values):.1f}" if values else "-"


def _refused(record: Record) -> bool:
    return record.get("outcome") == "unanswerable"


def _right(record: Record) -> bool:
    return bool(record["metrics"]["em"])


def method_lines(pairs: Sequence[tuple[Record, Record]]) -> list[str]:
    """The lines printed for one method's paired records (before, after)."""
    before = [pair[0] for pair in pairs]
    after = [pair[1] for pair in pairs]
    em_before = [float(record["metrics"]["em"]) for record in before]
    em_after = [float(record["metrics"]["em"]) for record in after]
    diff, low, high = paired_difference(em_after, em_before)
    lines = [
        f"EM {100 * mean(em_before):.1f} -> {100 * mean(em_after):.1f}: {100 * diff:+.1f} "
        f"[{100 * low:+.1f}, {100 * high:+.1f}], McNemar p {mcnemar_exact(em_after, em_before):.3f}"
    ]
    by_type: dict[str, list[int]] = defaultdict(list)
    for at, record in enumerate(before):
        by_type[str(record.get("question_type") or "-")].append(at)
    for kind, ats in sorted(by_type.items()):
        b, a = (100 * mean(ems[at] for at in ats) for ems in (em_before, em_after))
        lines.append(f"  EM {kind} (n {len(ats)}): {b:.1f} -> {a:.1f}")
    answerable = [at for at, record in enumerate(before) if record["answerable"]]
    null = [at for at, record in enumerate(before) if not record["answerable"]]
    sides = {"before": before, "after": after}
    refusals = {name: _share([rows[at] for at in answerable], _refused) for name, rows in sides.items()}
    right = {name: _share([rows[at] for at in null], _right) for name, rows in sides.items()}
    lines.append(f"refusals of answerable questions: {refusals['before']} -> {refusals['after']}")
    lines.append(f"null questions answered right: {right['before']} -> {right['after']}")
    for name in OFFICIAL:
        lines.append(f"{name}: {_metric(before, name)} -> {_metric(after, name)}")
    tokens = {name: mean(r["llm"]["prompt_tokens"] for r in rows) for name, rows in sides.items()}
    lines.append(f"prompt tokens / question: {tokens['before']:,.0f} -> {tokens['after']:,.0f}")
    return lines


def report(before_dir: Path, after_dir: Path) -> str:
    """Every method both folders answered, paired on the questions both answered."""
    before, after = answered(before_dir), answered(after_dir)
    methods = sorted({method for method, _ in before} & {method for method, _ in after})
    if not methods:
        raise SystemExit(f"{before_dir} and {after_dir} have no method with answered questions in common")
    out = []
    for method in methods:
        shared = sorted(key for key in before.keys() & after.keys() if key[0] == method)
        alone = sum(key[0] == method for key in before.keys() ^ after.keys())
        out += [f"## {method}: {len(shared)} questions paired ({alone} answered on one side only, left out)"]
        out += [*method_lines([(before[key], after[key]) for key in shared]), ""]
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", type=Path, help="results folder of `hopgraph eval` before the change")
    parser.add_argument("after", type=Path, help="results folder of the same questions after it")
    args = parser.parse_args(argv)
    print(report(args.before, args.after))


if __name__ == "__main__":
    main()
