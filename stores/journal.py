"""Append-only JSON-lines journals of LLM work done at index time, and the worker pool that fills them.

An index extra whose build calls an LLM (the questions extra's writer, the question graph's edge judge)
pays for every call, so each result is written down, fsynced, as soon as it comes back: a build killed at
any point (kill -9 included) and run again reads its journal and makes only the calls it lacks, and a build
for a grown corpus copies the records still valid from the previous build's journal. A line cut short by a
kill is not a record; it is cut off before the next record is appended.

Records are frozen dataclasses, one JSON object a line; each journal names the field(s) that key its
records (a later record with the same key replaces an earlier one).
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Hashable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict
from pathlib import Path
from typing import Any, Generic, TypeVar

from stores.files import open_appending, refuse_links

RecordT = TypeVar("RecordT")
ItemT = TypeVar("ItemT")


def read_records(
    path: Path, record_type: Callable[..., RecordT], key: Callable[[RecordT], Hashable]
) -> dict[Any, RecordT]:
    """The complete lines of the journal at `path` by key (none when it does not exist)."""
    if not path.is_file():
        return {}
    records: dict[Any, RecordT] = {}
    for line in path.read_text(encoding="utf-8").splitlines(keepends=True):
        if line.endswith("\n"):
            record = record_type(**json.loads(line))
            records[key(record)] = record
    return records


class Journal(Generic[RecordT]):
    """A build's journal, open for appending: every record is on disk before `add` returns."""

    def __init__(
        self, path: Path, record_type: Callable[..., RecordT], key: Callable[[RecordT], Hashable]
    ) -> None:
        refuse_links(path)  # before the partial line is cut: truncating is writing too
        self._cut_partial_line(path)
        self.key = key
        self.records = read_records(path, record_type, key)
        self._handle = open_appending(path, "a")  # closed by close()
        self._lock = threading.Lock()

    @staticmethod
    def _cut_partial_line(path: Path) -> None:
        """Drop a last line a kill cut short, so the next record starts on a line of its own."""
        if not path.is_file():
            return
        data = path.read_bytes()
        complete = data.rfind(b"\n") + 1
        if complete < len(data):
            with open(path, "r+b") as handle:
                handle.truncate(complete)

    def add(self, *records: RecordT) -> None:
        """Append `records` with one fsync (a whole previous build's worth is copied in one go)."""
        with self._lock:
            self._handle.writelines(
                json.dumps(asdict(record), ensure_ascii=False) + "\n"  # type: ignore[call-overload]
                for record in records
            )
            self._handle.flush()
            os.fsync(self._handle.fileno())
            self.records.update((self.key(record), record) for record in records)

    def close(self) -> None:
        self._handle.close()


def run_journaled(
    todo: Sequence[ItemT],
    call: Callable[[ItemT], RecordT],
    journal: Journal[RecordT],
    concurrency: int,
    progress: Callable[[], None],
) -> None:
    """`call` every item of `todo`, `concurrency` at a time, in `todo`'s order of starting.

    Each worker journals its item's record itself before it takes the next item, so a kill finds every
    finished call on disk except those whose reply was still being written down; `progress` is called after
    each. On a failure the calls not yet started are cancelled and the failure is raised."""

    def run(item: ItemT) -> None:
        journal.add(call(item))

    pool = ThreadPoolExecutor(max_workers=max(1, concurrency), thread_name_prefix="journaled-llm")
    try:
        for future in as_completed([pool.submit(run, item) for item in todo]):
            future.result()
            progress()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
