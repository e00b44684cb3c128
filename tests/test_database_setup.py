"""Processes opening one new SQLite database of hopgraph's take turns setting it up (stop 57's CI failure).

Setting up switches a new database to WAL and creates its tables; two connections doing that at once (two
fresh `hopgraph eval` runs in tests/test_one_writer.py, which share the checkpoint database and the response
cache) sometimes failed with `database is locked`, SQLite refusing one of them without its busy wait. Each
process opens its own connection; here threads stand in for processes (a connection each, and the folder lock
opened anew by each), which is what the race needs.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from hopgraph import api
from hopgraph.api import _open_saver
from nodes import llm
from nodes.llm import ResponseCache
from stores.locks import taking_turns
from tests.turns import CountedTurns

OPENERS: dict[str, tuple[Callable[[Path], object], list[str]]] = {
    "checkpoints": (lambda path: _open_saver(f"sqlite:///{path}"), ["checkpoints", "writes"]),
    "response cache": (ResponseCache, ["responses"]),
}


@pytest.mark.parametrize("database_kind", OPENERS)
def test_setting_up_waits_for_the_folders_turn_and_then_leaves_a_wal_database(
    tmp_path: Path, database_kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    open_database, tables = OPENERS[database_kind]
    database = tmp_path / "db.sqlite"
    opened = threading.Event()
    failures: list[BaseException] = []
    turns = CountedTurns(callers=1)  # the opener: from its coming to the lock it waits for the holder
    for module in (api, llm):
        monkeypatch.setattr(module, "taking_turns", turns)

    def open_it() -> None:
        try:
            open_database(database)
        except BaseException as exc:  # reported by the assertion below, not lost in the thread
            failures.append(exc)
        opened.set()

    with taking_turns(tmp_path):
        opener = threading.Thread(target=open_it)
        opener.start()
        assert turns.all_came.wait(timeout=30), failures
        # while this thread holds the turn, the opener has set nothing up, however long it is given
        assert not opened.is_set() and (not database.exists() or not _tables(database))
    opener.join(timeout=30)
    assert opened.is_set() and failures == []
    assert _tables(database) == tables
    with sqlite3.connect(database) as db:
        assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)


@pytest.mark.parametrize("database_kind", OPENERS)
def test_many_connections_setting_up_new_databases_at_once_all_succeed(
    tmp_path: Path, database_kind: str
) -> None:
    """Without the turns, each database failed this test in two runs of three here (2 cores)."""
    open_database, tables = OPENERS[database_kind]

    def open_it(database: Path, start: threading.Barrier, failures: list[BaseException]) -> None:
        start.wait()
        try:
            open_database(database)
        except BaseException as exc:
            failures.append(exc)

    for round_ in range(30):
        database = tmp_path / f"round-{round_}" / "db.sqlite"
        database.parent.mkdir()
        start = threading.Barrier(8)
        failures: list[BaseException] = []
        openers = [threading.Thread(target=open_it, args=(database, start, failures)) for _ in range(8)]
        for opener in openers:
            opener.start()
        for opener in openers:
            opener.join(timeout=60)
        assert failures == [], (round_, failures)
        assert _tables(database) == tables


def _tables(database: Path) -> list[str]:
    with sqlite3.connect(database) as db:
        rows = db.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        return [name for (name,) in rows]
