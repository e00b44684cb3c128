"""Structured output on and off (issue 34 item 1), paired per question, for each method, in one command.

    .venv/bin/python -m benchmarks.structured_output --out runs/structured [--limit 30] \
        [--methods chainrag,resp,ircot,decomposition,naive_qd] [--dataset hotpotqa] [--data DIR]
        [--questions-per-chunk N] [--plot FILE]

Runs `hopgraph eval` twice on the first `--limit` dev questions of the dataset (read from ../shared/data
as the evaluation harness reads it): once with `structured_output` off, once on. Each side is its own
process with its own data directory (index, checkpoints) under `--out`, the model directory shared, and no
response cache, so neither side's answers, KV prefixes, cached replies or index extras (QuOTE's and
BiQOG's questions and edges are written by the LLM too) reach the other, and each side's seconds are its
own calls. Re-running resumes both (the harness's results files). Printed per method and side: LLM calls
per question; per 100 calls, the fallbacks its state recorded (all of them, and those that were a
structured reply not of its shape) and the echoes; refusals of the shape by the server; EM, F1 and
seconds per question; then the paired differences on - off with the paired bootstrap's 95% interval
(evals.stats.paired_difference) and, for EM, McNemar's exact p (evals.stats.mcnemar_exact); then, where a
side's evaluation built QuOTE's or BiQOG's index, that build's LLM work from its manifest (`index_table`:
the question writer's repairs and drops, the edge judge's malformed verdicts, per 100 calls). The EM and F1
differences are also drawn, a row per method, into `--plot` (default OUT/structured-output.png).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from matplotlib.figure import Figure

from benchmarks import SHARED_DATA
from evals.plots import Interval, intervals_figure, method_colors, save_figure
from evals.runner import answered_results
from evals.stats import bootstrap_ci, mcnemar_exact, paired_difference
from hopgraph import Settings
from prompts.edge_judge import MALFORMED, YES
from prompts.questions import DROPS, REPAIRS
from prompts.structured import UNREAD
from stores.index import IndexStore
from stores.question_graph import QUESTION_GRAPH
from stores.questions import QUESTIONS

DEFAULT_METHODS = "chainrag,resp,ircot,decomposition,naive_qd"
SIDES = ("off", "on")
PLOT_FILE = "structured-output.png"

Outcomes = dict[str, dict[str, dict[str, float]]]  # method -> question -> scores and counts


def run_side(args: argparse.Namespace, side: str) -> Path:
    """`hopgraph eval` with structured output `side`, in its own process and data directory."""
    out = args.out / side
    env = {
        **os.environ,
        "HOPGRAPH_STRUCTURED_OUTPUT": "true" if side == "on" else "false",
        "HOPGRAPH_DATA_DIR": str(out / "data"),
        "HOPGRAPH_MODEL_DIR": str(Settings().models_path),  # the one assembled GGUF, not a copy per side
    }
    data = args.data or SHARED_DATA / args.dataset
    per_chunk = ["--questions-per-chunk", str(args.questions_per_chunk)] if args.questions_per_chunk else []
    subprocess.run(
        [
            sys.executable, "-m", "hopgraph", "eval", "--dataset", args.dataset, "--data", str(data),
            "--out", str(out / "run"), "--methods", args.methods, "--limit", str(args.limit), "--no-cache",
            "--allow-failures", *per_chunk,
        ],
        check=True,
        env=env,
    )  # fmt: skip
    return out / "run"


def outcomes(run_dir: Path) -> Outcomes:
    """method -> question -> what its latest answered record says (scores, cost, fallbacks, echoes)."""
    by_method: Outcomes = {}
    for (_, method, _), record in answered_results(run_dir).items():
        llm, fallbacks = record.get("llm") or {}, record.get("fallbacks") or []
        by_method.setdefault(method, {})[record["question"]] = {
            "em": float(record["metrics"].get("em", 0.0)),
            "f1": float(record["metrics"].get("f1", 0.0)),
            "seconds": float(record["seconds"]),
            "calls": float(llm.get("calls", 0)),
            "echoes": float(llm.get("echoes", 0)),
            "refused": float(llm.get("structured_refused", 0)),
            "fallbacks": float(len(fallbacks)),
            "unread": float(sum(UNREAD in note for note in fallbacks)),
        }
    return by_method


def _per_100_calls(rows: Sequence[Mapping[str, float]], key: str) -> str:
    calls = sum(row["calls"] for row in rows)
    return f"{100 * sum(row[key] for row in rows) / calls:.1f}" if calls else "–"


def _mean(rows: Sequence[Mapping[str, float]], key: str, scale: float = 100.0) -> str:
    mean, low, high = bootstrap_ci([row[key] for row in rows])
    return f"{scale * mean:.1f} [{scale * low:.1f}, {scale * high:.1f}]"


def paired(off: Outcomes, on: Outcomes) -> dict[str, dict[str, tuple[list[float], list[float]]]]:
    """method -> score -> (on, off) over the questions both sides answered, in one order."""
    pairs: dict[str, dict[str, tuple[list[float], list[float]]]] = {}
    for method in sorted(set(off) & set(on)):
        common = sorted(set(off[method]) & set(on[method]))
        pairs[method] = {
            key: ([on[method][q][key] for q in common], [off[method][q][key] for q in common])
            for key in ("em", "f1", "seconds")
        }
    return pairs


def table(runs: Mapping[str, Path]) -> str:
    """Markdown: per method and side the counts and scores, then per method the paired differences."""
    lines = [
        "| method | structured | n | calls / q | fallbacks / 100 calls | of them unread structured "
        "| echoes / 100 calls | refused | EM | F1 | s / q |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    sides = {side: outcomes(run) for side, run in runs.items()}
    for method in sorted({m for rows in sides.values() for m in rows}):
        for side, by_method in sides.items():
            rows = list(by_method.get(method, {}).values())
            if not rows:
                continue
            lines.append(
                f"| {method} | {side} | {len(rows)} | {sum(r['calls'] for r in rows) / len(rows):.1f}"
                f" | {_per_100_calls(rows, 'fallbacks')} | {_per_100_calls(rows, 'unread')}"
                f" | {_per_100_calls(rows, 'echoes')} | {sum(r['refused'] for r in rows):.0f}"
                f" | {_mean(rows, 'em')} | {_mean(rows, 'f1')} | {_mean(rows, 'seconds', 1.0)} |"
            )
    lines += [
        "",
        "| method | questions | EM on - off | EM p (exact) | F1 on - off | s / q on - off |",
        "|---|---|---|---|---|---|",
    ]
    for method, scores in paired(sides["off"], sides["on"]).items():
        cells = []
        for key, scale in (("em", 100.0), ("f1", 100.0), ("seconds", 1.0)):
            mean, low, high = paired_difference(*scores[key])
            cells.append(f"{scale * mean:+.1f} [{scale * low:+.1f}, {scale * high:+.1f}]")
        cells.insert(1, f"{mcnemar_exact(*scores['em']):.3f}")
        lines.append(f"| {method} | {len(scores['em'][0])} | {' | '.join(cells)} |")
    return "\n".join(lines)


def _per_call(seconds: float | None, calls: int) -> str:
    """Seconds a call of the build's last run (a resumed build's earlier runs kept no times)."""
    return f"{seconds / calls:.2f}" if seconds is not None and calls else "–"


def index_table(runs: Mapping[str, Path]) -> str:
    """Markdown: per side, the LLM work of the index extras its evaluation built (QuOTE's question writer,
    BiQOG's edge judge), from each side's index manifest; empty when no side built one. Per 100 writer
    calls: questions repaired by the parser (a list marker taken off, a question mark added), lines dropped
    (not a question, a duplicate, the chunk copied, too short, beyond the count asked, an empty reply), and
    structured replies not of the array's shape; per 100 judge calls: malformed verdicts (no edge made)."""
    lines = [
        "| structured | writer calls | questions kept | repaired / 100 calls | dropped / 100 calls "
        "| unread structured / 100 calls | s / writer call | judge calls | yes | malformed / 100 calls "
        "| s / judge call |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for side, run in runs.items():
        for manifest in IndexStore(run.parent / "data" / "indexes").list():
            questions, graph = manifest.extras.get(QUESTIONS.name), manifest.extras.get(QUESTION_GRAPH.name)
            if questions is None:
                continue
            parse, calls = questions.parse, questions.chunks
            repaired = sum(parse.get(outcome, 0) for outcome in REPAIRS)
            dropped = sum(parse.get(outcome, 0) for outcome in DROPS)
            cells = [
                side, f"{calls}", f"{questions.questions}", f"{100 * repaired / calls:.1f}",
                f"{100 * dropped / calls:.1f}", f"{100 * parse.get('structured_unread', 0) / calls:.1f}",
                _per_call(questions.seconds.get("generate"), questions.written),
            ]  # fmt: skip
            if graph is None:
                cells += ["–"] * 4
            else:
                verdicts = graph.verdicts
                cells += [
                    f"{graph.pairs}", f"{100 * verdicts.get(YES, 0) / graph.pairs:.0f}%",
                    f"{100 * verdicts.get(MALFORMED, 0) / graph.pairs:.1f}",
                    _per_call(graph.seconds.get("judge"), graph.judged),
                ]  # fmt: skip
            lines.append(f"| {' | '.join(cells)} |")
    return "\n".join(lines) if len(lines) > 2 else ""


def figure(runs: Mapping[str, Path], dataset: str) -> Figure:
    """The paired differences drawn: an EM and an F1 panel, a row per method (on - off in points with its
    95% interval, McNemar's exact p in the EM row's label)."""
    pairs = paired(outcomes(runs["off"]), outcomes(runs["on"]))
    colors = method_colors(pairs)
    em_rows, f1_rows = [], []
    for method, scores in pairs.items():
        label, p = f"{method} ({len(scores['em'][0])})", mcnemar_exact(*scores["em"])
        em_rows.append(Interval(f"{label}, p {p:.3f}", *paired_difference(*scores["em"]), colors[method]))
        f1_rows.append(Interval(label, *paired_difference(*scores["f1"]), colors[method]))
    return intervals_figure(
        {
            f"EM, structured on − off, {dataset}": em_rows,
            f"F1, structured on − off, {dataset}": f1_rows,
        },
        empty="no method answered on both sides",
    )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="run folder (both sides resume)")
    parser.add_argument("--limit", type=int, default=30)
    parser.add_argument("--methods", default=DEFAULT_METHODS)
    parser.add_argument("--dataset", default="hotpotqa")
    parser.add_argument("--data", type=Path, help="the dataset's folder (default ../shared/data/DATASET)")
    parser.add_argument(
        "--questions-per-chunk", type=int, help="for QuOTE's and BiQOG's index (default: the evaluation's)"
    )
    parser.add_argument("--plot", type=Path, help=f"the figure's file (default OUT/{PLOT_FILE})")
    args: Any = parser.parse_args(argv)
    runs = {side: run_side(args, side) for side in SIDES}
    print(table(runs))
    if index_work := index_table(runs):
        print(f"\nthe index extras each side built:\n\n{index_work}")
    print(f"\nplot: {save_figure(figure(runs, args.dataset), args.plot or args.out / PLOT_FILE)}")


if __name__ == "__main__":
    main()
