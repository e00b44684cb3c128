"""A folder's turn (stores.locks.taking_turns) that says when its callers have come to it, so a test waits
for two callers to overlap instead of sleeping and hoping they did."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from stores.locks import taking_turns


class CountedTurns:
    """`taking_turns`, replacing it in a module under test: `all_came` is set once `callers` calls have come
    to the folder's lock (before they wait for it), and each then takes its turn as before."""

    def __init__(self, callers: int) -> None:
        self.callers = callers
        self.all_came = threading.Event()
        self._came = 0
        self._guard = threading.Lock()

    @contextmanager
    def __call__(self, folder: Path) -> Iterator[None]:
        with self._guard:
            self._came += 1
            if self._came >= self.callers:
                self.all_came.set()
        with taking_turns(folder):
            yield
