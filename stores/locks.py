"""One writer at a time for what hopgraph writes in place (an index name, a results folder), and who it is.

The lock is `fcntl.flock` on a lock file, not a pid file created exclusively, because the kernel holds it
for the holder's open file and drops it when the holder's process ends in any way, `kill -9` and a crash
included. A lock is therefore never stale: the lock of an interrupted holder is free the moment it dies,
and the next writer takes it over without reading pids, guessing whether a pid was reused or deleting
anything. The file's text only says who holds the lock (pid, host, command, start), for the line a
waiting or refused writer prints; the holder empties it when it lets go. The file is never deleted:
another process may be waiting on it, and a third would then lock a new file of the same name beside it.

Locks are per process and thread: a thread that holds a lock may take it again (the evaluation takes its
results folder's lock before it builds the index, and the runner takes it again to write), while another
thread of the same process waits as another process would (two `open`s of one file are two flocks).
Lock files live in the data directory and results folders; flock works on local file systems and, on
Linux, over NFS (emulated with NFS byte-range locks).
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import shlex
import socket
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

from stores.errors import HopgraphError
from stores.files import refuse_links

_log = logging.getLogger("hopgraph")
LOCK_FILE = ".writer.lock"
_COMMAND_CHARS = 200


class LockedError(HopgraphError):
    """Another process writes what this one would write, and this one does not wait for it."""


@dataclass(frozen=True)
class Holder:
    """Who holds a lock, as its lock file says."""

    pid: int
    host: str
    command: str
    started: str

    @classmethod
    def this_process(cls) -> Holder:
        argv = list(getattr(sys, "orig_argv", sys.argv))
        argv[0] = Path(argv[0]).name  # the interpreter or script, without its folder
        command = shlex.join(argv)
        if len(command) > _COMMAND_CHARS:
            command = command[: _COMMAND_CHARS - 3] + "..."
        started = datetime.now(UTC).isoformat(timespec="seconds")
        return cls(os.getpid(), socket.gethostname(), command, started)

    def __str__(self) -> str:
        return f"pid {self.pid} on {self.host} (`{self.command}`, since {self.started})"


def holder(path: Path) -> Holder | None:
    """Who the lock file `path` says holds it; None when it is free or its holder has not yet written."""
    try:
        return Holder(**json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError):
        return None


@dataclass
class _Held:
    descriptor: int
    count: int


_held: dict[tuple[str, int], _Held] = {}
_held_lock = threading.Lock()


@contextmanager
def writer_lock(path: Path, what: str, *, wait: bool, advice: str = "") -> Iterator[None]:
    """Hold the lock file `path` for `what` (e.g. "index 'notes'") while the block runs.

    When another process (or thread) holds it: with `wait`, say so in one warning line naming the holder
    ("index 'notes' is being written by pid 4242 on ...: waiting for it to finish") and block until it is
    free; without, raise LockedError naming the holder, followed by `advice`.
    """
    key = (os.path.realpath(path), threading.get_ident())
    with _held_lock:
        mine = _held.get(key)
        if mine is not None:
            mine.count += 1
    if mine is None:
        mine = _Held(_acquire(path, what, wait, advice), 1)
        with _held_lock:
            _held[key] = mine
    try:
        yield
    finally:
        with _held_lock:
            mine.count -= 1
            last = mine.count == 0
            if last:
                del _held[key]
        if last:
            _release(mine.descriptor)


def _acquire(path: Path, what: str, wait: bool, advice: str) -> int:
    """Open and flock `path` (created if missing, never through a link), then write this process into it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    refuse_links(path)
    descriptor = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    try:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            by = holder(path)
            busy = f"{what} is being written by {by or 'another process'}"
            if not wait:
                raise LockedError(f"{busy}: {advice}" if advice else busy) from None
            _log.warning("%s: waiting for it to finish", busy)
            fcntl.flock(descriptor, fcntl.LOCK_EX)
        me = json.dumps(asdict(Holder.this_process()), ensure_ascii=False).encode("utf-8")
        os.ftruncate(descriptor, 0)
        os.pwrite(descriptor, me, 0)
    except BaseException:
        os.close(descriptor)  # closing releases a lock taken before the failure
        raise
    return descriptor


def _release(descriptor: int) -> None:
    """Say the lock is free (an empty file), then let go of it."""
    try:
        os.ftruncate(descriptor, 0)
    finally:
        os.close(descriptor)  # closing the last descriptor of the file releases the flock


@contextmanager
def taking_turns(folder: Path) -> Iterator[None]:
    """Processes (and threads) running the block on one folder run it one at a time, silently.

    For short work that must not run twice at once, where a wait is too brief to be worth the warning line
    of `writer_lock`: assembling the model, exporting the ONNX embedder, and setting up a new SQLite
    database shared by processes (the checkpoints, the response cache). Setting one up switches it to WAL
    and creates its tables, and two connections doing so at once (two fresh `eval` runs) can fail with
    "database is locked" before SQLite's busy wait applies. The lock is the folder's own (flock on it), so
    no lock file is left in it; each call opens the folder anew, so two threads of one process take turns
    as two processes do."""
    descriptor = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        yield
    finally:
        os.close(descriptor)  # closing releases the flock
