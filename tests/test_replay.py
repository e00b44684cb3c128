"""`hopgraph history` prints a run as `hopgraph ask` printed it live, from LangGraph's own task records, and
`ask` shows the LLM's reply as it is generated when its output is a terminal.

History reads each task's own update from the checkpoints (`StateSnapshot.tasks[i].result`), so the
branches of a `Send` fan-out are printed one by one, as `ask` printed them when each finished. Query
decomposition has such branches (one retrieval per sub-question); its LLM is scripted (in process) or a
stub OpenAI-compatible server (for the command run on a terminal), over the real sample index.
"""

from __future__ import annotations

import os
import pty
import re
import select
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

import pytest
from conftest import REPO
from openai_stub import OpenAIStub, serve
from typer.testing import CliRunner

from hopgraph import Settings, services_for
from hopgraph.cli import app
from tests.scripted import ScriptedChatModel, scripted_gateway
from tests.test_decomposition import SUBS, script

QUESTION = "Which electric pickup truck is thought safer for pedestrians, and what is its future?"
HEADER = re.compile(r"^(\S.*?) \d+\.\d\d s ─+$")
RULE = re.compile(r"^─+$")


def blocks(output: str) -> list[tuple[str, str]]:
    """(label, body) of each task a trace printed, in order: a block opens with its rule line ('label 0.12 s
    ───', the seconds dropped: live wall time in `ask`, LLM time in `history`) and ends at the next rule."""
    found: list[tuple[str, list[str]]] = []
    for line in output.splitlines():
        if header := HEADER.match(line):
            found.append((header[1], []))
        elif RULE.match(line):
            found.append(("", []))
        elif found:
            found[-1][1].append(line)
    return [(label, "\n".join(body)) for label, body in found if label]


@pytest.fixture
def scripted_llm(
    scripted_cli: ScriptedChatModel, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> ScriptedChatModel:
    """`hopgraph` in this process over the session's settings, its LLM scripted to decompose into SUBS."""
    llm, model = scripted_gateway(script(SUBS))
    monkeypatch.setitem(services_for(settings)._built, "llm", llm)
    return model


def test_history_prints_each_task_as_ask_printed_it_branch_by_branch(
    scripted_llm: ScriptedChatModel, sample_index: str
) -> None:
    asked = CliRunner().invoke(
        app,
        ["ask", QUESTION, "--index", sample_index, "--method", "decomposition", "--thread-id", "replay-1"],
    )
    assert asked.exit_code == 0, asked.output
    replayed = CliRunner().invoke(app, ["history", "replay-1"])
    assert replayed.exit_code == 0, replayed.output

    live, saved = blocks(asked.output), blocks(replayed.output)
    branches = [f"retrieve (branch {n} of 3)" for n in (1, 2, 3)]
    assert [label for label, _ in saved] == ["decompose", *branches, "aggregate", "generate"]
    # the same blocks, word for word; live, the branches come in the order they finished
    assert sorted(live) == sorted(saved)
    assert [label for label, _ in live][:1] + [label for label, _ in live][4:] == [
        "decompose",
        "aggregate",
        "generate",
    ]
    # each branch shows its own sub-question's passages, at its own hop, not the merged evidence
    for number, (label, body) in enumerate(saved[1:4], start=1):
        assert label == branches[number - 1]
        assert re.findall(r"hop (\d+)", body) == [str(number)] * 5, body
    # the same opening: thread, method, index and the question
    assert asked.output.splitlines()[:2] == replayed.output.splitlines()[:2]
    assert replayed.output.splitlines()[1] == f"question: {QUESTION}"


ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07|\r")


class Terminal:
    """A command run on a pseudo-terminal: what it printed so far, escape codes removed."""

    def __init__(self, args: list[str], env: dict[str, str]) -> None:
        self._fd, child = pty.openpty()
        self.proc = subprocess.Popen(args, stdin=child, stdout=child, stderr=child, env=env, cwd=REPO)
        os.close(child)
        self._raw = b""

    @property
    def text(self) -> str:
        return ANSI.sub("", self._raw.decode(errors="replace"))

    def read_until(self, wanted: str, seconds: float) -> str:
        """Read until `wanted` was printed; fail (with what was printed) if the command ends or `seconds`
        pass first."""
        deadline = time.monotonic() + seconds
        while wanted not in self.text:
            assert time.monotonic() < deadline, f"{wanted!r} not printed:\n{self.text[-3000:]}"
            if not self._read(0.2):
                assert self.proc.poll() is None, f"ended before {wanted!r}:\n{self.text[-3000:]}"
        return self.text

    def finish(self, seconds: float) -> int:
        deadline = time.monotonic() + seconds
        while self._read(0.2) or self.proc.poll() is None:
            assert time.monotonic() < deadline, self.text[-3000:]
        os.close(self._fd)
        return self.proc.wait()

    def _read(self, timeout: float) -> bool:
        if not select.select([self._fd], [], [], timeout)[0]:
            return False
        try:
            data = os.read(self._fd, 65536)
        except OSError:  # the command ended and closed its side
            return False
        self._raw += data
        return bool(data)


@pytest.fixture
def held_reply() -> Iterator[tuple[OpenAIStub, threading.Event]]:
    """A stub whose generator reply stops after its first two words until the event is set."""
    release = threading.Event()

    def hold(prompt: str, words: int) -> None:
        if words == 2 and "JSON array" not in prompt:
            release.wait(timeout=120)

    def reply(prompt: str) -> str:
        return script(SUBS)(prompt) if "JSON array" in prompt else "Zorblax Quenton Vimm"

    with serve(OpenAIStub(reply=reply, streamed=hold)) as stub:
        try:
            yield stub, release
        finally:
            release.set()


def test_ask_on_a_terminal_shows_the_reply_as_it_is_generated(
    cli_env: dict[str, str], sample_index: str, held_reply: tuple[OpenAIStub, threading.Event]
) -> None:
    stub, release = held_reply
    env = {
        **cli_env,
        "HOPGRAPH_LLM": "openai:stub",
        "HOPGRAPH_BASE_URL": stub.base_url,
        "TERM": "xterm-256color",
        "COLUMNS": "160",
        "LINES": "50",
    }
    terminal = Terminal(
        [
            sys.executable,
            "-m",
            "hopgraph",
            "ask",
            QUESTION,
            "--index",
            sample_index,
            "--method",
            "decomposition",
        ],
        env,
    )
    # the generator's first two words are on the screen while the server still holds the third
    shown = terminal.read_until("generate · generator: Zorblax Quenton", seconds=600)
    assert "Vimm" not in shown and "Answer:" not in shown
    release.set()
    assert terminal.finish(seconds=300) == 0, terminal.text[-3000:]
    assert "Answer: Zorblax Quenton Vimm" in terminal.text


def test_ask_to_a_pipe_prints_plain_text(cli_env: dict[str, str], sample_index: str) -> None:
    """Not a terminal: no escape codes and no token display, the trace `history` prints."""
    with serve(OpenAIStub(reply=lambda prompt: "Cybertruck")) as stub:
        env = {**cli_env, "HOPGRAPH_LLM": "openai:stub", "HOPGRAPH_BASE_URL": stub.base_url, "TERM": "xterm"}
        done = subprocess.run(
            [sys.executable, "-m", "hopgraph", "ask", "Which truck?", "--index", sample_index],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
    assert done.returncode == 0, done.stderr
    assert "\x1b" not in done.stdout
    assert "generate · generator:" not in done.stdout  # no token display
    assert [label for label, _ in blocks(done.stdout)] == ["retrieve", "generate"]
    assert "Answer: Cybertruck" in done.stdout
