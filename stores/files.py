"""Small file and batching helpers shared by the stores, the evaluation and the front door.

Every file the project writes goes through `write_atomic` or `open_appending`, which refuse a target or a
folder that is a symbolic link: a results folder or a data directory can be shared (git and tar keep links),
and a planted `report.md -> ~/.bashrc` or `results.jsonl -> site-packages/x.pth` must not turn a write into
someone else's file.
"""

from __future__ import annotations

import os
import sqlite3
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, Any

from stores.errors import HopgraphError


class LinkedPathError(HopgraphError):
    """A file the project would write, or its folder, is a symbolic link."""


def refuse_links(path: Path) -> None:
    """Raise `LinkedPathError` when `path` or the folder it is in is a symbolic link."""
    for candidate, what in ((path, "file"), (path.parent, "folder")):
        if candidate.is_symlink():
            raise LinkedPathError(
                f"{candidate}: this {what} is a symbolic link (to {os.readlink(candidate)}); hopgraph writes "
                f"only real files in real folders. Remove the link, or write somewhere else."
            )


def write_atomic(path: Path, write: Callable[[IO[bytes]], Any]) -> None:
    """Write through a new temporary file beside `path` and rename it over `path`, so a crash never leaves
    a truncated file and nothing is written through a link (the temporary file is created exclusively, and
    a linked target or folder is refused)."""
    refuse_links(path)
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(descriptor, "wb") as handle:
            write(handle)
        os.chmod(temporary, 0o644)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def open_appending(path: Path, mode: str = "a+b") -> IO[Any]:
    """`path` opened for appending (`a+b`, or `a` for text), created if missing, never through a link."""
    refuse_links(path)
    flags = os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | (os.O_RDWR if "+" in mode else os.O_WRONLY)
    descriptor = os.open(path, flags, 0o644)
    return os.fdopen(descriptor, mode, **({} if "b" in mode else {"encoding": "utf-8"}))


def connect_sqlite(path: Path, **options: Any) -> sqlite3.Connection:
    """A connection to the SQLite database at `path` (its folder made if missing), usable from any thread,
    never through a link: SQLite writes the file a link names, so a data directory copied with a planted
    `checkpoints.sqlite -> elsewhere` would have hopgraph write there."""
    refuse_links(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    return sqlite3.connect(path, check_same_thread=False, **options)


def batches(items: Sequence[Any], size: int) -> list[Sequence[Any]]:
    """Consecutive slices of at most `size` items."""
    return [items[i : i + size] for i in range(0, len(items), size)]
