"""Benchmarks: one command each, printing what it measured in that run."""

from pathlib import Path

#: The shared dev slices (`../shared/data` beside the repository), each dataset in a folder of its name.
SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
