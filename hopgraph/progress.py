"""Progress for long commands that also reaches logs.

A rich live bar draws only on a terminal; under nohup, CI or `> log 2>&1` it would show nothing until
the command ends, which for an evaluation is hours. So when the console is not a terminal, the same
display writes one plain line each time a task passes another tenth of its total (and when it finishes).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    TaskID,
    TextColumn,
    TimeRemainingColumn,
)

TENTHS = 10


class LoggedProgress(Progress):
    """`rich.progress.Progress` that logs plain lines instead of a live bar when not on a terminal."""

    def __init__(self, *columns: str | ProgressColumn, console: Console, **kwargs: Any) -> None:
        self.plain = not console.is_terminal
        super().__init__(*columns, console=console, disable=self.plain, **kwargs)
        self._logged_tenth: dict[TaskID, int] = {}

    def update(self, task_id: TaskID, **kwargs: Any) -> None:
        super().update(task_id, **kwargs)
        if self.plain:
            self._log(task_id)

    def _log(self, task_id: TaskID) -> None:
        task = next(t for t in self.tasks if t.id == task_id)  # public API: a few tasks at most
        if not task.total:
            return
        tenth = int(TENTHS * task.completed / task.total)
        if tenth <= self._logged_tenth.get(task_id, -1):
            return
        self._logged_tenth[task_id] = tenth
        elapsed = task.finished_time if task.finished else task.elapsed
        scores = task.fields.get("scores", "")
        line = f"{task.description} {int(task.completed)}/{int(task.total)}, {elapsed or 0.0:.0f} s"
        # soft_wrap: one log line per update, however long the scores, not wrapped at 80 columns
        self.console.print(f"{line} · {scores}" if scores else line, soft_wrap=True)


def stages_bar(console: Console) -> LoggedProgress:
    """One bar per stage of a long command (indexing, training), each with its count and time left."""
    return LoggedProgress(
        TextColumn("{task.description:<10}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=console,
        transient=False,
    )


def stage_reporter(bar: Progress) -> Callable[[str, int, int], None]:
    """A `(stage, done, total)` callback drawing each stage it is told of on its own bar of `bar`."""
    tasks: dict[str, TaskID] = {}

    def report(stage: str, done: int, total: int) -> None:
        if stage not in tasks:
            tasks[stage] = bar.add_task(stage, total=total)
        bar.update(tasks[stage], completed=done, total=total)

    return report
