"""A question killed with `kill -9` between two LLM calls resumes from its last finished node, and no LLM
call that was answered is made again.

`hopgraph ask` runs ReSP in its own process over the real sample index, with the response cache off (the
default) so that only the checkpoints can spare a call. Its LLM is a stub OpenAI-compatible server in this
process (tests/openai_stub.py) that holds the reasoner's first call until the test has killed the process:
the kill comes right after one LLM step (the summarizer's) finished, with the next LLM step under way.

Each step's checkpoint must be written before the next step starts (durability "sync"): LangGraph's
default ("async") writes it while the next step already runs, so a kill there loses the finished step and
its LLM call is paid again. On an idle disk that write takes a millisecond and the kill would not find the
gap, so the summarizer's reply also takes the checkpoint database's write lock for HOLD_SECONDS, as a slow
disk or a busy database server would hold the write: the reasoner must not be called while it is held.
"""

from __future__ import annotations

import re
import signal
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from openai_stub import OpenAIStub, serve

from hopgraph import Settings
from tests.test_resp import SUMMARY, kind

pytestmark = pytest.mark.timeout(900)

QUESTION = "Which electric pickup did Elon Musk say is safer for pedestrians?"
REPLIES = {"global": f"{SUMMARY} [DONE]", "judge": "Yes", "generate": "Cybertruck"}
HOLD_SECONDS = 2.0
"""How long the database is held: under SQLite's busy timeout (5 s), after which the waiting write fails."""


@dataclass
class HeldJudge:
    """Answers ReSP's calls by kind; the reasoner's first call is held (`arrived` set) until `release`.
    The summarizer's first reply first takes the write lock of `database` (`locked` set) until `unlock`.

    `answered` lists the kind of every call whose reply was sent; a held call released after its process
    was killed is answered to no one and not listed."""

    database: Path
    locked: threading.Event = field(default_factory=threading.Event)
    arrived: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)
    answered: list[str] = field(default_factory=list)
    killed: bool = False
    _holder: sqlite3.Connection | None = None

    def reply(self, prompt: str) -> str:
        called = kind(prompt)
        if called == "global" and not self.locked.is_set():
            self._holder = sqlite3.connect(self.database, isolation_level=None, check_same_thread=False)
            self._holder.execute("BEGIN EXCLUSIVE")
            self.locked.set()
        if called == "judge" and not self.arrived.is_set():
            self.arrived.set()
            self.release.wait(timeout=600)
            if self.killed:
                return ""
        self.answered.append(called)
        return REPLIES[called]

    def unlock(self) -> None:
        if self._holder is not None:
            self._holder.execute("ROLLBACK")
            self._holder.close()
            self._holder = None


@pytest.fixture
def held(settings: Settings) -> Iterator[tuple[HeldJudge, OpenAIStub]]:
    script = HeldJudge(Path(settings.checkpoint_url.removeprefix("sqlite:///")))
    with serve(OpenAIStub(reply=script.reply)) as stub:
        try:
            yield script, stub
        finally:
            script.unlock()
            script.release.set()


def hopgraph(*args: str, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "hopgraph", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def history(thread_id: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """`hopgraph history THREAD_ID`, run to its end."""
    return subprocess.run(
        [sys.executable, "-m", "hopgraph", "history", thread_id],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_a_question_killed_between_two_llm_calls_resumes_without_repeating_one(
    cli_env: dict[str, str], sample_index: str, held: tuple[HeldJudge, OpenAIStub]
) -> None:
    script, stub = held
    env = {**cli_env, "HOPGRAPH_LLM": "openai:stub", "HOPGRAPH_BASE_URL": stub.base_url}
    env.pop("HOPGRAPH_LLM_CACHE", None)  # the default: off
    ask = ["ask", QUESTION, "--index", sample_index, "--method", "resp", "--thread-id", "killed-1"]

    first = hopgraph(*ask, env=env)
    try:
        assert script.locked.wait(timeout=600), "the summarizer was never called"
        # the summarizer's step is not saved while the database is held: its next step must wait for it
        called_early = script.arrived.wait(timeout=HOLD_SECONDS)
        assert not called_early, "the reasoner was called before the summarizer's step was saved"
        script.unlock()
        assert script.arrived.wait(timeout=600), "the reasoner was never called"
        first.send_signal(signal.SIGKILL)
    finally:
        first.kill()
        out, errors = first.communicate(timeout=60)
    assert first.returncode == -signal.SIGKILL, errors
    script.killed = True
    script.release.set()
    assert script.answered == ["global"]

    # what the checkpoints hold: every step up to the summarizer's, the reasoner's not finished
    saved = history("killed-1", env=env)
    assert saved.returncode == 0, saved.stderr
    assert "summarize" in saved.stdout and "LLM summarizer: 1 call" in saved.stdout
    assert "unfinished: judge did not finish" in saved.stdout

    again = hopgraph(*ask, env=env)
    out, errors = again.communicate(timeout=600)
    assert again.returncode == 0, errors
    assert "resuming at judge" in out and "Answer: Cybertruck" in out
    # every call was answered once: the summarizer's was not made again
    assert script.answered == ["global", "judge", "generate"]
    assert [kind(request.prompt) for request in stub.requests] == ["global", "judge", "judge", "generate"]

    replayed = history("killed-1", env=env)
    assert replayed.returncode == 0, replayed.stderr
    nodes = re.findall(r"^(\w+) \d+\.\d\d s ─", replayed.stdout, re.MULTILINE)
    assert nodes == ["retrieve", "summarize", "judge", "generate"]
    assert "unfinished" not in replayed.stdout
