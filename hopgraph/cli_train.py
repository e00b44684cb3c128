"""`hopgraph train treehop`: train the models methods load, here TreeHop's query update.

Kept apart from hopgraph/cli.py and added to its app with `register(app)`, as the evaluation commands are.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

from evals.datasets import DatasetName
from hopgraph.progress import stage_reporter, stages_bar
from hopgraph.settings import Settings

if TYPE_CHECKING:
    from graphs.treehop.model import Variant

console = Console()
err = Console(stderr=True)
train_app = typer.Typer(no_args_is_help=True, help="Train a model a method loads.")
ALL_DATASETS: list[DatasetName] = ["2wikimultihopqa", "hotpotqa", "musique", "multihop_rag"]


@train_app.command("treehop")
def treehop_command(
    data: Annotated[Path, typer.Option(help="Folder holding the dataset folders (../shared/data)")],
    out: Annotated[Path, typer.Option(help="Checkpoint to write; its record goes beside it as .json")],
    variant: Annotated[
        str, typer.Option(help="simple (seed 004's gate) or full (the public code's)")
    ] = "simple",
    datasets: Annotated[
        list[str] | None,
        typer.Option("--dataset", help="Train on this dataset (repeatable; default: all four)"),
    ] = None,
    epochs: Annotated[int, typer.Option(min=1, help="Passes over the training paths")] = 20,
    learning_rate: Annotated[
        float, typer.Option(help="AdamW learning rate (the original: 6e-5, for 100 times more data)")
    ] = 1e-3,
    seed: Annotated[int, typer.Option(help="Seed of the negatives, the shuffling and the weights")] = 0,
    limit: Annotated[
        int | None, typer.Option(min=1, help="At most this many paths per dataset (a quick run)")
    ] = None,
    shared_articles: Annotated[
        bool,
        typer.Option(
            help="Also train on paths through the documents the evaluated questions use (the setting "
            "before 2026-11-26: its gain on those questions is not a gain on an unseen corpus)"
        ),
    ] = False,
) -> None:
    """Train TreeHop's query update for the configured embedder from the dev data (evaluated questions and
    the documents they use left out), printing the held-out loss and Recall@5 per epoch; writes the
    checkpoint and its record."""
    from graphs.treehop.training import Recipe
    from hopgraph.treehop_data import train_treehop

    if variant not in ("simple", "full"):
        raise typer.BadParameter(f"--variant {variant!r}: use simple or full.")
    chosen = list(datasets or ALL_DATASETS)
    unknown = sorted(set(chosen) - set(ALL_DATASETS))
    if unknown:
        raise typer.BadParameter(f"--dataset {', '.join(unknown)}: use one of {', '.join(ALL_DATASETS)}.")
    variant_name: Variant = "simple" if variant == "simple" else "full"
    recipe = Recipe(variant=variant_name, epochs=epochs, learning_rate=learning_rate, seed=seed)
    with stages_bar(err) as bar:
        record = train_treehop(
            data,
            chosen,
            recipe,
            out,
            Settings(),
            limit,
            stage_reporter(bar),
            report=bar.console.print,
            shared_articles=shared_articles,
        )
    best = record.epochs[record.best_epoch - 1]
    console.print(
        f"{out}: {record.parameters:,} parameters, {record.checkpoint_bytes / 1e6:.1f} MB (float16), epoch "
        f"{record.best_epoch}: held-out Recall@5 {best.held_out_recall:.3f} "
        f"(float16 {record.float16_held_out_recall:.3f}; delta rule {record.delta_held_out_recall:.3f}), "
        f"{record.seconds:.0f} s"
    )


def register(app: typer.Typer) -> None:
    """Add `train` (with its `treehop` command) to the hopgraph command line."""
    app.add_typer(train_app, name="train")
