"""The `hopgraph` command as a user runs it: index, ask with a streamed trace, history, and clear errors.

Everything but the end-to-end ask runs the command in this process through its real entry point
(hopgraph.cli.main, tests.test_bad_values.hopgraph), with every LLM role scripted: a new interpreter per
command would load torch, MiniLM and spaCy again each time. The ask-and-history test runs it as a user does,
in its own process with the real local LLM, and so does one bad input, to show the exit code and the one
line on stderr survive the real process boundary.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.scripted import ScriptedChatModel
from tests.test_bad_values import hopgraph, reader  # noqa: F401  (reader is a fixture)

FIXTURES = Path(__file__).parent / "fixtures" / "corpora"
NOTES = FIXTURES / "notes"
HOPGRAPH = [sys.executable, "-m", "hopgraph"]


def run(args: list[str], env: dict[str, str], timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*HOPGRAPH, *args], env=env, capture_output=True, text=True, timeout=timeout, check=False
    )


def test_index_builds_then_is_a_no_op_on_an_unchanged_corpus(
    reader: ScriptedChatModel,  # noqa: F811
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = hopgraph(["index", str(NOTES), "--name", "cli-notes"], capsys)
    assert code == 0, err
    assert "cli-notes: built" in out and "3 documents" in out
    code, out, _ = hopgraph(["index", str(NOTES), "--name", "cli-notes"], capsys)
    assert code == 0 and "cli-notes: unchanged" in out


def test_index_with_adds_an_extra_that_reindexing_keeps_and_method_naive_drops(
    reader: ScriptedChatModel,  # noqa: F811
    capsys: pytest.CaptureFixture[str],
) -> None:
    def index(*options: str) -> str:
        code, out, err = hopgraph(["index", str(NOTES), "--name", "cli-extras", *options], capsys)
        assert code == 0, err
        return out + err

    assert "cli-extras: built — 3 documents, 3 chunks, all-MiniLM" in index()
    added = index("--with", "sentence_graph")
    assert "cli-extras: built — 3 documents, 3 chunks, with sentence_graph," in added
    # the chunk part is copied from the chunk-only build: no chunk is embedded again
    assert "copy-chunks 3/3" in added and not re.search(r"^embed \d", added, re.MULTILINE)
    assert "cli-extras: unchanged — 3 documents, 3 chunks, with sentence_graph," in index()
    dropped = index("--method", "naive")
    assert "cli-extras: built — 3 documents, 3 chunks, all-MiniLM" in dropped and "copy-chunks" in dropped
    assert "3 chunks, with sentence_graph," in index("--method", "chainrag")


def test_every_extra_a_method_declares_is_a_known_index_extra() -> None:
    from graphs.registry import METHOD_EXTRAS, METHODS
    from stores.extra_registry import EXTRAS

    assert set(METHOD_EXTRAS) <= set(METHODS)
    assert {extra for extras in METHOD_EXTRAS.values() for extra in extras} <= set(EXTRAS)


@pytest.mark.llm
def test_ask_streams_each_node_and_history_replays_the_saved_run(
    cli_env: dict[str, str], sample_index: str
) -> None:
    question = "Which electric pickup did Elon Musk say is safer for pedestrians?"
    args = ["ask", question, "--index", sample_index, "--k", "3", "--set", "retrieval_mode=bm25"]
    asked = run([*args, "--thread-id", "cli-run-1"], cli_env)
    assert asked.returncode == 0, asked.stderr
    out = asked.stdout
    assert out.index("retrieve") < out.index("generate") < out.index("Answer:")
    assert out.count("hop 1") == 3 and "LLM generator: 1 call" in out
    assert "hopgraph history cli-run-1" in out

    replay = run(["history", "cli-run-1"], cli_env)
    assert replay.returncode == 0, replay.stderr
    lines = replay.stdout
    assert "method naive" in lines and lines.index("retrieve") < lines.index("generate")
    assert lines.count("hop 1") == 3
    answer = out.split("Answer:")[1].split("\n")[0].strip()
    assert f"answer: {answer}" in lines


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["ask", "anything?", "--index", "never-built"], ["never-built", "hopgraph index"]),
        (["ask", "anything?", "--method", "nonesuch"], ["nonesuch", "naive"]),
        (["history", "no-such-thread"], ["no-such-thread", "hopgraph ask"]),
        (["index", "/does/not/exist", "--name", "x"], ["/does/not/exist"]),
        (["ask", "q?", "--method", "chainrag", "--set", "word_limit=lots"], ["word_limit", "integer"]),
        (["ask", "q?", "--set", "word_limit=300"], ["word_limit", "NaiveContext", "top_k"]),
        (
            [
                "eval",
                "--dataset",
                "hotpotqa",
                "--data",
                "x",
                "--out",
                "o",
                "--methods",
                "chainrag+rewrite=maybe",
            ],
            ["chainrag+rewrite=maybe", "true or false"],
        ),
        (
            ["eval", "--dataset", "hotpotqa", "--data", "x", "--out", "o", "--set", "widht=3"],
            ["widht", "top_k"],
        ),
        (
            ["index", str(NOTES), "--name", "x", "--with", "nonesuch"],
            ["nonesuch", "known extras: sentence_graph"],
        ),
    ],
    ids=[
        "missing-index",
        "unknown-method",
        "unknown-thread",
        "missing-path",
        "mistyped-option",
        "option-the-method-lacks",
        "mistyped-variant",
        "unknown-eval-option",
        "unknown-extra",
    ],
)
def test_bad_input_exits_2_with_a_message_naming_it(
    reader: ScriptedChatModel,  # noqa: F811
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    expected: list[str],
) -> None:
    code, out, err = hopgraph(args, capsys)
    assert code == 2, (out, err)
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err  # one line, no traceback
    for fragment in expected:
        assert fragment in lines[0]
    assert reader.prompts == []  # stopped before any LLM call


def test_bad_input_in_its_own_process_exits_2_with_the_one_line(cli_env: dict[str, str]) -> None:
    """The subprocess smoke test of the cases above: the exit code and the line reach a user's shell."""
    result = run(["ask", "anything?", "--index", "never-built"], cli_env)
    assert result.returncode == 2
    [line] = result.stderr.splitlines()
    assert line.startswith("error: ") and "never-built" in line and "hopgraph index" in line


def test_a_bad_jsonl_line_is_named_and_the_old_index_survives(
    reader: ScriptedChatModel,  # noqa: F811
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    good = tmp_path / "docs.jsonl"
    good.write_text(json.dumps({"id": "a", "title": "A", "text": "Alpha is the first letter."}) + "\n")
    assert hopgraph(["index", str(good), "--name", "cli-jsonl"], capsys)[0] == 0
    bad = tmp_path / "bad.jsonl"
    bad.write_text(good.read_text() + "{not json\n")
    code, _, err = hopgraph(["index", str(bad), "--name", "cli-jsonl"], capsys)
    assert code == 2 and "bad.jsonl" in err and "line 2" in err
    empty = tmp_path / "empty"
    empty.mkdir()
    code, _, err = hopgraph(["index", str(empty), "--name", "cli-jsonl"], capsys)
    assert code == 2 and str(empty) in err
    code, out, _ = hopgraph(["index", str(good), "--name", "cli-jsonl"], capsys)
    assert code == 0 and "cli-jsonl: unchanged" in out
