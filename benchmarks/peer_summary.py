"""Every method against the plain dense RAG answer peer on several slices at once: one table, one figure.

`benchmarks.answer_peer` compares the runs of one slice with the peer; issue 42's question is whether any
method, at its defaults, is below the peer on any of HotpotQA, MuSiQue and 2Wiki. This reads what
answer_peer keeps (the peer's answers in the first folder of each slice, as its `--run`) and the
evaluation folders named after it, and prints a method per row, a slice per column: EM, its paired
difference from the peer and the exact McNemar p; then the F1 differences with their intervals, and which
answerer of which folder each cell is. The EM differences are drawn, a panel per slice.

    .venv/bin/python -m benchmarks.peer_summary \
        --slice hotpotqa runs/ircot-hotpotqa runs/methods-hotpotqa \
        --slice musique runs/methods-musique runs/methods2-musique [--limit 50] [--plot against-peer.png]

A method is the answerer's name before any `+setting` (so `iter_retgen+reader=direct` is `iter_retgen`).
When several answerers of one slice are the same method, the one named last counts: folders in the order
given, and inside a folder the method at its defaults after its variants. So name the folder holding a
method's current defaults after the older ones.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from matplotlib.figure import Figure

from benchmarks.answer_peer import PEER_FILE, Answerer, answerers, peer_scores, read_peer_rows
from evals.plots import Interval, intervals_figure, method_colors, save_figure
from evals.stats import bootstrap_ci, mcnemar_exact, paired_difference
from graphs.registry import METHODS

SLICE_NAMES = {"hotpotqa": "HotpotQA", "musique": "MuSiQue", "2wikimultihopqa": "2Wiki"}


@dataclass(frozen=True)
class Slice:
    """One dataset's questions as the peer answered them, and the answerer standing for each method."""

    dataset: str
    peer_rows: list[dict[str, Any]]
    methods: dict[str, Answerer]

    @property
    def name(self) -> str:
        return f"{SLICE_NAMES.get(self.dataset, self.dataset)} ({len(self.peer_rows)})"

    @cached_property
    def peer(self) -> tuple[list[float | None], list[float | None]]:
        """The peer's EM and F1 per question, scored once for every cell and panel row."""
        return peer_scores(self.peer_rows)


def method_of(answerer: Answerer) -> str:
    """The method an answerer runs, without its settings: `iter_retgen+reader=direct` is `iter_retgen`."""
    return answerer.method.split("+", 1)[0]


def chosen(found: Sequence[Answerer]) -> dict[str, Answerer]:
    """Method -> the answerer that stands for it: the last folder's, and in a folder the method at its
    defaults over its variants."""
    picked: dict[str, Answerer] = {}
    for run in dict.fromkeys(one.run for one in found):
        in_run = [one for one in found if one.run == run]
        for one in sorted(in_run, key=lambda one: "+" not in one.method):  # stable: variants, then defaults
            picked[method_of(one)] = one
    return picked


def peer_rows(run: Path, limit: int) -> list[dict[str, Any]]:
    """The peer's answers answer_peer kept in RUN (running the peer is answer_peer's job, not this one's)."""
    if not (run / PEER_FILE).exists():
        raise SystemExit(
            f"{run / PEER_FILE} does not exist: run"
            f" `python -m benchmarks.answer_peer DATASET --run {run}` first"
        )
    return read_peer_rows(run / PEER_FILE)[:limit]


def _in_registry_order(methods: Iterable[str]) -> list[str]:
    """The methods in the registry's order (NaiveRAG first, as the README's table), any other after."""
    known = list(METHODS)
    return sorted(dict.fromkeys(methods), key=lambda m: known.index(m) if m in known else len(known))


def summary(slices: Sequence[Slice]) -> str:
    """Markdown: EM with its paired difference from the peer and the exact p (the peer first, then the
    methods in the registry's order), the F1 differences with their intervals, and each cell's answerer."""
    methods = _in_registry_order(method for one in slices for method in one.methods)
    rule = "|---" * (len(slices) + 1) + "|"
    em_lines = ["| method | " + " | ".join(f"{one.name}: EM (− peer, p)" for one in slices) + " |", rule]
    f1_lines = ["| method | " + " | ".join(f"{one.name}: F1 − peer" for one in slices) + " |", rule]
    em_lines.append(
        "| peer | " + " | ".join(f"{100 * bootstrap_ci(one.peer[0])[0]:.1f}" for one in slices) + " |"
    )
    for method in methods:
        em_cells, f1_cells = [], []
        for one in slices:
            answerer = one.methods.get(method)
            if answerer is None:
                em_cells.append("–")
                f1_cells.append("–")
                continue
            peer_em, peer_f1 = one.peer
            em_diff = paired_difference(answerer.em, peer_em)[0]
            p = mcnemar_exact(answerer.em, peer_em)
            em_cells.append(f"{100 * bootstrap_ci(answerer.em)[0]:.1f} ({100 * em_diff:+.1f}, {p:.3f})")
            f1_diff, low, high = paired_difference(answerer.f1, peer_f1)
            f1_cells.append(f"{100 * f1_diff:+.1f} [{100 * low:+.1f}, {100 * high:+.1f}]")
        em_lines.append(f"| {method} | " + " | ".join(em_cells) + " |")
        f1_lines.append(f"| {method} | " + " | ".join(f1_cells) + " |")
    sources = [
        f"- {one.name}: " + ", ".join(answerer.label for answerer in one.methods.values()) for one in slices
    ]
    return "\n".join([*em_lines, "", *f1_lines, "", "Each cell's answerer (folder):", *sources])


def figure(slices: Sequence[Slice]) -> Figure:
    """A panel per slice: each method's paired EM difference from the peer, with its 95% interval and p, a
    method on the same row in every panel (empty where the slice has no run of it)."""
    methods = _in_registry_order(method for one in slices for method in one.methods)
    colors = method_colors(methods)
    panels = {}
    for one in slices:
        peer_em = one.peer[0]
        rows = []
        for method in methods:
            answerer = one.methods.get(method)
            if answerer is None:
                rows.append(Interval(f"{method}: not run", math.nan, math.nan, math.nan, colors[method]))
                continue
            label = f"{method}, p {mcnemar_exact(answerer.em, peer_em):.3f}"
            rows.append(Interval(label, *paired_difference(answerer.em, peer_em), colors[method]))
        panels[f"{one.name}: EM − peer, points"] = rows
    return intervals_figure(panels, empty="no evaluation run to compare")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--slice",
        nargs="+",
        action="append",
        required=True,
        metavar="DATASET RUN",
        help="a dataset, then its evaluation folders; the first holds the peer's answers, as answer_peer's "
        "--run",
    )
    parser.add_argument("--limit", type=int, default=50)
    parser.add_argument("--plot", type=Path, default=Path("against-peer.png"))
    args = parser.parse_args()
    slices = []
    for dataset, *runs in args.slice:
        if not runs:
            parser.error(f"--slice {dataset}: name at least one evaluation folder after the dataset")
        rows = peer_rows(Path(runs[0]), args.limit)
        slices.append(Slice(dataset, rows, chosen(answerers([Path(run) for run in runs], dataset, rows))))
    print(summary(slices))
    print(f"\nplot: {save_figure(figure(slices), args.plot)}")


if __name__ == "__main__":
    main()
