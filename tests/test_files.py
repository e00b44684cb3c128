"""Nothing the project writes goes through a symbolic link (issue 40): a shared results folder or data
directory may hold planted links, and a write through one would overwrite the file it points at."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evals.runner import RESULTS_FILE, _ResultsFile
from stores.files import LinkedPathError, open_appending, write_atomic
from stores.journal import Journal


def planted(tmp_path: Path) -> Path:
    target = tmp_path / "victim.txt"
    target.write_text("untouched\n", encoding="utf-8")
    return target


def test_write_atomic_writes_a_new_file_and_replaces_an_old_one(tmp_path: Path) -> None:
    path = tmp_path / "report.md"
    write_atomic(path, lambda handle: handle.write(b"first"))
    write_atomic(path, lambda handle: handle.write(b"second"))
    assert path.read_bytes() == b"second" and [p.name for p in tmp_path.iterdir()] == ["report.md"]


def test_write_atomic_refuses_a_linked_file_or_folder_and_leaves_no_temporary(tmp_path: Path) -> None:
    victim = planted(tmp_path)
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "report.md").symlink_to(victim)
    with pytest.raises(LinkedPathError, match="this file is a symbolic link"):
        write_atomic(tmp_path / "run" / "report.md", lambda handle: handle.write(b"x"))
    (tmp_path / "linked-run").symlink_to(tmp_path / "run")
    with pytest.raises(LinkedPathError, match="this folder is a symbolic link"):
        write_atomic(tmp_path / "linked-run" / "new.md", lambda handle: handle.write(b"x"))
    assert victim.read_text(encoding="utf-8") == "untouched\n"
    assert sorted(p.name for p in (tmp_path / "run").iterdir()) == ["report.md"]


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    path = tmp_path / "manifest.json"
    path.write_bytes(b"old")

    def fail(handle: object) -> None:
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError):
        write_atomic(path, fail)
    assert path.read_bytes() == b"old" and [p.name for p in tmp_path.iterdir()] == ["manifest.json"]


def test_appending_refuses_a_linked_results_file_or_journal(tmp_path: Path) -> None:
    victim = planted(tmp_path)
    (tmp_path / RESULTS_FILE).symlink_to(victim)
    with pytest.raises(LinkedPathError):
        _ResultsFile(tmp_path / RESULTS_FILE)
    journal = tmp_path / "written.jsonl"
    journal.symlink_to(victim)
    with pytest.raises(LinkedPathError):
        Journal(journal, dict, lambda record: json.dumps(record))
    assert victim.read_text(encoding="utf-8") == "untouched\n"
    with open_appending(tmp_path / "fresh.jsonl", "a") as handle:
        handle.write("line\n")
    assert (tmp_path / "fresh.jsonl").read_text(encoding="utf-8") == "line\n"
