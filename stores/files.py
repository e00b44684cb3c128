"""Small file and batching helpers shared by the stores."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, Any


def write_atomic(path: Path, write: Callable[[IO[bytes]], Any]) -> None:
    """Write through a temporary file and rename, so a crash never leaves a truncated file at `path`."""
    temporary = path.with_name(path.name + ".tmp")
    with open(temporary, "wb") as handle:
        write(handle)
    os.replace(temporary, path)


def batches(items: Sequence[Any], size: int) -> list[Sequence[Any]]:
    """Consecutive slices of at most `size` items."""
    return [items[i : i + size] for i in range(0, len(items), size)]
