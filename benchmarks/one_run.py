"""What the benchmarks that read a single run folder share: a report per method, and their command."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from matplotlib.figure import Figure

from evals.plots import save_figure
from evals.runner import answered_by_method

MethodRows = Callable[[Sequence[Mapping[str, Any]]], list[str]]


def per_method_report(run_dir: Path, method_rows: MethodRows) -> str:
    """The lines `method_rows` prints for each method's latest answered records in the results folder
    `run_dir`, under a `## method` heading each: the report of a benchmark that reads one run."""
    out = []
    for method, rows in answered_by_method(run_dir).items():
        out += [f"## {method}", *method_rows(rows), ""]
    return "\n".join(out)


def one_run_main(
    argv: Sequence[str] | None,
    doc: str,
    run_help: str,
    plot_file: str,
    method_rows: MethodRows,
    figure: Callable[[Path], Figure],
    more_figures: Mapping[str, Callable[[Path], Figure]] | None = None,
) -> None:
    """The command of a benchmark that reads one run folder: its report printed, its figure saved to `--plot`
    (default RUN/`plot_file`), and each of `more_figures` (file name -> figure) beside it."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("run", type=Path, help=run_help)
    parser.add_argument("--plot", type=Path, help=f"the figure's file (default RUN/{plot_file})")
    args = parser.parse_args(argv)
    print(per_method_report(args.run, method_rows))
    plot = args.plot or args.run / plot_file
    print(f"plot: {save_figure(figure(args.run), plot)}")
    for name, more in (more_figures or {}).items():
        print(f"plot: {save_figure(more(args.run), plot.with_name(name))}")
