"""A source tree of another revision beside this one, for benchmarks that print before / after in one run."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@contextmanager
def checked_out(rev: str, where: Path) -> Iterator[Path]:
    """`rev` checked out at `where` (a temporary git worktree of this repository), removed afterwards."""
    subprocess.run(
        ["git", "worktree", "add", "--detach", str(where), rev], cwd=ROOT, check=True, capture_output=True
    )
    try:
        yield where
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", str(where)], cwd=ROOT, check=False)
