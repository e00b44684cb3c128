"""Knowing that concurrent callers have come to a point, so a test waits for them to overlap instead of
sleeping and hoping they did: `Arrivals` counts them, `CountedTurns` counts the callers of a folder's turn
(stores.locks.taking_turns)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from stores.locks import taking_turns


class Arrivals:
    """Counts the calls that come to a point; `all_came` is set once `callers` of them have."""

    def __init__(self, callers: int) -> None:
        self.callers = callers
        self.all_came = threading.Event()
        self._came = 0
        self._guard = threading.Lock()

    def came(self) -> int:
        """Count one more arrival; its number, the first being 1."""
        with self._guard:
            self._came += 1
            if self._came >= self.callers:
                self.all_came.set()
            return self._came


class CountedTurns(Arrivals):
    """`taking_turns`, replacing it in a module under test: `all_came` is set once `callers` calls have come
    to the folder's lock (before they wait for it), and each then takes its turn as before."""

    @contextmanager
    def __call__(self, folder: Path) -> Iterator[None]:
        self.came()
        with taking_turns(folder):
            yield
