"""One writer per index name and per results folder, with real concurrent processes (issue 33 item 1).

Every writer here is a process of its own: `python -m hopgraph index|eval` as a user runs it, or
tests/index_writer.py, the real index_corpus stopped once in the middle of embedding until the test
writes a line to it. Timing is coordinated by what the processes print (the stopped writer's "mid-embed",
a second writer's "waiting for it to finish") and by the stub LLM's own requests, never by sleeping. Each
case ends with a usable index (searched from this process), the right build current and no traceback.
The LLM of the evaluations is tests/openai_stub.py, named as what it is: what is tested is who writes,
not what an LLM answers.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import pytest
from embedders import MiniLM

from evals.datasets import load_benchmark
from evals.runner import latest_results, read_records, results_path
from hopgraph.evaluate import index_name
from hopgraph.settings import Settings
from stores.index import IndexStore, Manifest
from stores.locks import LOCK_FILE, holder, writer_lock
from tests import tiny_hotpot
from tests.openai_stub import OpenAIStub, serve

pytestmark = pytest.mark.timeout(900)

REPO = Path(__file__).resolve().parents[1]
DOCS = 70  # more than one embedding batch (stores.index.EMBED_BATCH, 64): a build can stop mid-embed
NAME = "shared"
WAITING = "waiting for it to finish"
QUESTIONS = 3


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


@pytest.fixture
def env(data_dir: Path) -> dict[str, str]:
    """The writers' environment: a data directory of this test's own, no hopgraph.toml."""
    return {**os.environ, "HOPGRAPH_DATA_DIR": str(data_dir), "HOPGRAPH_CONFIG": "", "COLUMNS": "200"}


def corpus(folder: Path, topic: str) -> Path:
    """DOCS one-sentence documents about `topic`, one chunk each, as a .jsonl corpus."""
    path = folder / f"{topic}.jsonl"
    lines = [
        json.dumps({"id": f"{topic}-{i}", "title": f"{topic} {i}", "text": f"The {topic} ledger, entry {i}."})
        for i in range(DOCS)
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def start(args: list[str], env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        args,
        cwd=REPO,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def index_command(path: Path, env: dict[str, str]) -> subprocess.Popen[str]:
    return start([sys.executable, "-m", "hopgraph", "index", str(path), "--name", NAME], env)


@pytest.fixture
def processes() -> Iterator[list[subprocess.Popen[str]]]:
    """The processes a test starts; any still running when it ends (a failed test) is killed."""
    started: list[subprocess.Popen[str]] = []
    yield started
    for proc in started:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()


def stopped_mid_embed(path: Path, env: dict[str, str]) -> subprocess.Popen[str]:
    """tests/index_writer.py building NAME from `path`, once it has stopped in the middle of embedding."""
    writer = start([sys.executable, "-m", "tests.index_writer", str(path), NAME], env)
    line = writer.stdout.readline() if writer.stdout else ""
    assert line == "mid-embed\n", (line, writer.communicate())
    return writer


def go_on(writer: subprocess.Popen[str]) -> None:
    assert writer.stdin is not None
    writer.stdin.write("\n")
    writer.stdin.flush()


def read_until(stream: IO[str] | None, text: str) -> str:
    """The first line of `stream` holding `text`; fails with what was read when the stream ends first."""
    assert stream is not None
    seen = []
    for line in stream:
        if text in line:
            return line.strip()
        seen.append(line)
    raise AssertionError(f"no line with {text!r}; read:\n{''.join(seen)}")


def finished(proc: subprocess.Popen[str], code: int = 0) -> tuple[str, str]:
    """(stdout, stderr) of `proc` once it has ended with `code` and printed no traceback."""
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == code, (out, err)
    assert "Traceback" not in out + err, err
    return out, err


def status(out: str) -> str:
    """built / unchanged / resumed, from the summary line of `hopgraph index` or tests/index_writer.py."""
    last = out.strip().splitlines()[-1]
    return last.removeprefix(f"{NAME}: ").split(" ")[0]


def usable(data_dir: Path, minilm: MiniLM, path: Path) -> Manifest:
    """The current build of NAME, checked: the corpus at `path`, every chunk searchable, the only build."""
    store = IndexStore(data_dir / "indexes")
    manifest = store.current_manifest(NAME)
    assert manifest is not None and manifest.corpus_path == str(path.resolve())
    assert manifest.chunks == DOCS
    topic = path.stem
    for mode in ("dense", "bm25", "hybrid"):
        [hit] = store.open(NAME, minilm).search(f"The {topic} ledger, entry 42.", 1, mode)
        assert hit.chunk.doc_id == f"{topic}-42", mode
    assert [build.name for build in (data_dir / "indexes" / NAME / "builds").iterdir()] == [manifest.build_id]
    return manifest


def test_two_builds_of_one_corpus_started_together_build_it_once(
    tmp_path: Path, env: dict[str, str], data_dir: Path, minilm: MiniLM, processes: list
) -> None:
    path = corpus(tmp_path, "amber")
    processes.extend(index_command(path, env) for _ in range(2))
    outs = [finished(proc)[0] for proc in processes]
    assert sorted(map(status, outs)) == ["built", "unchanged"], outs
    usable(data_dir, minilm, path)


def test_a_build_joining_mid_embed_waits_then_finds_it_built(
    tmp_path: Path, env: dict[str, str], data_dir: Path, minilm: MiniLM, processes: list
) -> None:
    path = corpus(tmp_path, "amber")
    first = stopped_mid_embed(path, env)
    processes.append(first)
    second = index_command(path, env)
    processes.append(second)
    waiting = read_until(second.stderr, WAITING)
    assert waiting.startswith(f"index '{NAME}' is being written by pid {first.pid} on "), waiting
    assert "tests.index_writer" in waiting
    go_on(first)
    assert status(finished(first)[0]) == "built"
    assert status(finished(second)[0]) == "unchanged"
    usable(data_dir, minilm, path)


def test_another_corpus_under_the_same_name_waits_and_then_replaces_the_first(
    tmp_path: Path, env: dict[str, str], data_dir: Path, minilm: MiniLM, processes: list
) -> None:
    """Before the lock, the second build finished first and deleted the first one's folder under it."""
    first_path, second_path = corpus(tmp_path, "amber"), corpus(tmp_path, "cobalt")
    first = stopped_mid_embed(first_path, env)
    processes.append(first)
    second = index_command(second_path, env)
    processes.append(second)
    assert f"pid {first.pid}" in read_until(second.stderr, WAITING)
    go_on(first)
    assert status(finished(first)[0]) == "built"
    assert status(finished(second)[0]) == "built"
    usable(data_dir, minilm, second_path)  # the later command's corpus is current, the first's deleted


def test_a_killed_writers_lock_is_taken_over_and_its_build_resumed(
    tmp_path: Path, env: dict[str, str], data_dir: Path, minilm: MiniLM, processes: list
) -> None:
    path = corpus(tmp_path, "amber")
    killed = stopped_mid_embed(path, env)
    processes.append(killed)
    killed.kill()
    killed.wait()
    lock = data_dir / "indexes" / NAME / LOCK_FILE
    assert (left := holder(lock)) is not None and left.pid == killed.pid  # its file still names it
    after = index_command(path, env)
    processes.append(after)
    out, err = finished(after)
    assert WAITING not in err and status(out) == "resumed"
    assert holder(lock) is None  # let go when done
    usable(data_dir, minilm, path)


@pytest.fixture
def eval_env(env: dict[str, str], tmp_path: Path) -> Iterator[tuple[dict[str, str], OpenAIStub]]:
    """`hopgraph eval`'s environment with its LLM on a stub server that replies the tiny benchmark's gold
    answers; the stub is handed out so a test can hold a reply back."""
    stub = OpenAIStub(reply=tiny_hotpot.answer)
    with serve(stub):
        yield (
            {
                **env,
                "HOPGRAPH_LLM": "openai:stub",
                "HOPGRAPH_BASE_URL": stub.base_url,
                "HOPGRAPH_MAX_RETRIES": "0",
                "HOPGRAPH_TIMEOUT": "600",
            },
            stub,
        )


def eval_command(data: Path, out: Path, env: dict[str, str]) -> subprocess.Popen[str]:
    args = [
        "eval",
        "--dataset",
        "hotpotqa",
        "--data",
        str(data),
        "--out",
        str(out),
        "--limit",
        str(QUESTIONS),
    ]
    return start([sys.executable, "-m", "hopgraph", *args], env)


def answered(out: Path) -> int:
    return sum(r["error"] is None for r in latest_results(read_records(results_path(out))).values())


def test_two_fresh_evaluations_wait_for_one_another_and_share_one_index(
    tmp_path: Path, eval_env: tuple[dict[str, str], OpenAIStub], data_dir: Path, processes: list
) -> None:
    """Both start while the evaluation index is held (by this test, a third writer), both wait, and once it
    is free one builds it while the other waits again and finds it built."""
    env, _ = eval_env
    data = tiny_hotpot.write(tmp_path / "tiny")
    benchmark = load_benchmark("hotpotqa", data, QUESTIONS)
    name = index_name(benchmark, Settings(data_dir=data_dir))
    with writer_lock(data_dir / "indexes" / name / LOCK_FILE, "this test", wait=False):
        processes.extend(eval_command(data, tmp_path / run, env) for run in ("run-a", "run-b"))
        for proc in processes:
            assert f"pid {os.getpid()}" in read_until(proc.stderr, WAITING)
    for proc in processes:
        finished(proc)
    assert answered(tmp_path / "run-a") == answered(tmp_path / "run-b") == QUESTIONS
    store = IndexStore(data_dir / "indexes")
    manifest = store.current_manifest(name)
    assert manifest is not None and manifest.documents == len(benchmark.corpus)
    assert [build.name for build in (data_dir / "indexes" / name / "builds").iterdir()] == [manifest.build_id]


def test_a_second_evaluation_into_the_same_folder_exits_2_naming_the_first(
    tmp_path: Path, eval_env: tuple[dict[str, str], OpenAIStub], processes: list
) -> None:
    """The first is held at its first LLM request (the stub answers it only once the second has ended)."""
    env, stub = eval_env
    asked, answer = threading.Event(), threading.Event()

    def held_back(prompt: str) -> str:
        asked.set()
        answer.wait(timeout=600)
        return tiny_hotpot.answer(prompt)

    stub.reply = held_back
    data, out = tiny_hotpot.write(tmp_path / "tiny"), tmp_path / "run"
    first = eval_command(data, out, env)
    processes.append(first)
    assert asked.wait(timeout=600), first.communicate()
    second = eval_command(data, out, env)
    processes.append(second)
    _, err = finished(second, code=2)
    [line] = err.splitlines()
    assert line.startswith(f"error: results folder {out} is being written by pid {first.pid} on "), line
    assert "hopgraph eval" in line and line.endswith("wait for it to end, or use another --out"), line
    answer.set()
    finished(first)
    assert answered(out) == QUESTIONS
    assert sum(r["type"] == "run" for r in read_records(results_path(out))) == 1  # nothing of the second
