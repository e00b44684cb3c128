"""`hopgraph eval` and `hopgraph report`: measure methods on a benchmark, rebuild a run's report.

Kept apart from hopgraph/cli.py and added to its app with `register(app)`, so the evaluation commands can
grow without touching the interactive ones.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from evals.datasets import DatasetName
from evals.leaderboard import DEFAULT_BASELINE
from hopgraph.progress import LoggedProgress
from hopgraph.settings import Settings
from nodes.context import RetrievalMode

if TYPE_CHECKING:
    from evals.runner import MethodScore

console = Console()
err = Console(stderr=True)

# `--set KEY=VALUE`, repeatable: run parameters typed by each method's context_schema (hopgraph.options)
RunParameters = Annotated[
    list[str] | None,
    typer.Option(
        "--set",
        metavar="KEY=VALUE",
        help="Run parameter for every method that has it, e.g. word_limit=300 or integration=contexts",
    ),
]
# The questions extra's and the question graph's build parameters (QuOTE, BiQOG), for `index` and `eval`
QuestionsPerChunk = Annotated[
    int | None,
    typer.Option(min=1, help="Questions the LLM writes per chunk for the questions extra (default 10)"),
]
# The method every other is compared with in the report's pooled leaderboard column
Baseline = Annotated[
    str, typer.Option(help="Method (label) the leaderboard's pooled differences are against")
]
JudgeCandidates = Annotated[
    int | None,
    typer.Option(
        min=0,
        help="Chunks besides its own each question is judged against for the question_graph extra "
        "(BiQOG; default 4)",
    ),
]


def _scores_text(scores: Mapping[str, MethodScore]) -> str:
    parts = []
    for method, s in scores.items():
        failed = f" [red]{s.failed} failed[/]" if s.failed else ""
        parts.append(f"{method} EM {100 * s.em:.1f} F1 {100 * s.f1:.1f}{failed}")
    return " · ".join(parts)


class _EvalProgress:
    """One rich display for both phases: index building stages, then questions with running scores."""

    def __init__(self) -> None:
        self.bar = LoggedProgress(
            TextColumn("{task.description:<10}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            TextColumn("{task.fields[scores]}"),
            console=err,
        )
        self._stages: dict[str, TaskID] = {}
        self._questions: TaskID | None = None
        self.scores: Mapping[str, MethodScore] = {}

    def index(self, stage: str, done: int, total: int) -> None:
        if stage not in self._stages:
            self._stages[stage] = self.bar.add_task(stage, total=total, scores="")
        self.bar.update(self._stages[stage], completed=done, total=total)

    def questions(self, done: int, total: int, scores: Mapping[str, MethodScore]) -> None:
        self.scores = scores
        if self._questions is None:
            # Created at the resumed count: questions done earlier must not inflate the rate behind the ETA.
            self._questions = self.bar.add_task("questions", total=total, completed=done, scores="")
        self.bar.update(self._questions, completed=done, scores=_scores_text(scores))


def _report_files(report: Path) -> None:
    from evals.explorer import EXPLORER_FILE

    console.print(f"report: {report}")
    console.print(f"page:   {report.parent / EXPLORER_FILE} (open it in a browser: no server needed)")
    for png in sorted(report.parent.glob("*.png")):
        console.print(f"plot:   {png}")


def eval_command(
    dataset: Annotated[DatasetName, typer.Option(help="Benchmark")],
    data: Annotated[Path, typer.Option(help="The dataset's folder (or its questions file)")],
    out: Annotated[Path, typer.Option(help="Run folder: results.jsonl, report.md, plots; re-run to resume")],
    methods: Annotated[
        str,
        typer.Option(
            help="Comma-separated methods (see `hopgraph methods`) or variants METHOD+KEY=VALUE, "
            "e.g. naive,chainrag,chainrag+integration=contexts,chainrag+ec_edges=false"
        ),
    ] = "naive",
    limit: Annotated[int | None, typer.Option(min=1, help="Evaluate the first N questions")] = None,
    concurrency: Annotated[int, typer.Option(min=1, help="Questions in flight at once")] = 1,
    top_k: Annotated[int | None, typer.Option("--k", min=1, help="Passages per retrieval")] = None,
    mode: Annotated[RetrievalMode | None, typer.Option("--mode", help="Retrieval mode")] = None,
    cache: Annotated[bool, typer.Option("--cache/--no-cache", help="LLM response cache")] = True,
    options: RunParameters = None,
    questions_per_chunk: QuestionsPerChunk = None,
    candidates: JudgeCandidates = None,
    baseline: Baseline = DEFAULT_BASELINE,
    allow_failures: Annotated[
        bool,
        typer.Option(
            "--allow-failures",
            help="Exit 0 when some questions failed (default: exit 1, so scripts and CI can tell)",
        ),
    ] = False,
) -> None:
    """Run methods on a benchmark with progress; writes results.jsonl, report.md and plots to --out.

    Exits 1 when questions failed (a provider down, a reply no retry fixed): their lines hold the error and
    the same command retries only them; `--allow-failures` exits 0 for runs that accept partial results."""
    from hopgraph.api import question_params
    from hopgraph.evaluate import evaluate
    from hopgraph.options import parse_assignments

    names = [m.strip() for m in methods.split(",") if m.strip()]
    asked = {"top_k": top_k, "retrieval_mode": mode}
    context: dict[str, Any] = {k: v for k, v in asked.items() if v is not None}
    context.update(parse_assignments(options or [], "--set"))
    display = _EvalProgress()
    with display.bar:
        report = evaluate(
            dataset,
            data,
            names,
            limit=limit,
            out_dir=out,
            settings=Settings(),
            concurrency=concurrency,
            context=context,
            cache=cache,
            progress=display.questions,
            index_progress=display.index,
            extra_params=question_params(questions_per_chunk, candidates=candidates),
            baseline=baseline,
        )
    for method, s in display.scores.items():
        failed = f", {s.failed} failed (re-run to retry them)" if s.failed else ""
        scored = f"EM {100 * s.em:.1f} · F1 {100 * s.f1:.1f} over {s.answered} questions"
        console.print(f"[bold]{method}[/]: {scored}{failed}")
    _report_files(report)
    failures = sum(s.failed for s in display.scores.values())
    if failures and not allow_failures:
        err.print(
            f"{failures} question(s) failed: re-run the same command to retry only them "
            "(--allow-failures exits 0 on partial results)",
            soft_wrap=True,
        )
        raise typer.Exit(1)


def report_command(
    run_dirs: Annotated[
        list[Path],
        typer.Argument(help="Run folders written by `hopgraph eval --out` (several pool into one)"),
    ],
    out: Annotated[
        Path | None, typer.Option(help="Where to write report.md and plots (default: the one run folder)")
    ] = None,
    baseline: Baseline = DEFAULT_BASELINE,
) -> None:
    """Rebuild report.md and plots from results.jsonl alone: of one run, or pooled over several folders
    (one per dataset or model) into --out."""
    from evals.report import write_report

    if out is None and len(run_dirs) > 1:
        raise typer.BadParameter("several run folders pool into one report: say where with --out DIR")
    _report_files(write_report(out or run_dirs[0], run_dirs, baseline))


def register(app: typer.Typer) -> None:
    """Add `eval` and `report` to the hopgraph command line."""
    app.command("eval")(eval_command)
    app.command("report")(report_command)
