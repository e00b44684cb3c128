"""Progress reaches logs: off a terminal, a line per tenth of each task instead of a silent live bar."""

from __future__ import annotations

import io

from rich.console import Console
from rich.progress import TextColumn

from hopgraph.progress import LoggedProgress


def test_off_a_terminal_each_tenth_and_the_end_are_logged_once() -> None:
    out = io.StringIO()
    with LoggedProgress(TextColumn("{task.description}"), console=Console(file=out, width=20)) as bar:
        task = bar.add_task("questions", total=20, completed=4, scores="")
        for done in range(5, 21):
            bar.update(task, completed=done, scores=f"naive EM {done}.0")
    lines = out.getvalue().splitlines()
    # The first update logs where a resumed task stands, then one line per further tenth.
    expected = [f"questions {n}/20" for n in (5, *range(6, 21, 2))]
    assert [line.split(",")[0] for line in lines] == expected
    assert lines[-1].endswith("· naive EM 20.0")  # whole, though longer than the console is wide


def test_on_a_terminal_nothing_is_logged_beside_the_live_bar() -> None:
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=200)
    with LoggedProgress(TextColumn("{task.description}"), console=console) as bar:
        task = bar.add_task("embed", total=4)
        bar.update(task, completed=4)
    assert not bar.plain
    assert "embed 4/4" not in out.getvalue()
