"""A question killed with `kill -9` between two LLM calls resumes from its last finished node, and no LLM
call that was answered is made again; each step is saved before the next step's LLM call is made.

`hopgraph ask` runs ReSP in its own process over the real sample index, with the response cache off (the
default) so that only the checkpoints can spare a call. Its LLM is a stub OpenAI-compatible server in this
process (tests/openai_stub.py) that holds the reasoner's first call until the test has killed the process:
the kill comes right after one LLM step (the summarizer's) finished, with the next LLM step under way.

Each step's checkpoint must be written before the next step starts (durability "sync"): LangGraph's
default ("async") writes it while the next step already runs, so a kill there loses the finished step and
its LLM call is paid again. On an idle disk that write takes a millisecond and a kill would rarely find the
gap, so no test waits for it. The subprocess test reads the database when the reasoner's call arrives (the
summarizer's memory must be saved by then); the in-process test makes the summarizer's save fail, which
must end the run before any later LLM call: under "async" the reasoner is called while the save runs, so
that test fails whatever the machine's speed, and without a clock.
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
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import ChannelVersions, Checkpoint, CheckpointMetadata
from langgraph.checkpoint.sqlite import SqliteSaver
from openai_stub import OpenAIStub, serve

from graphs.resp.context import ReSPContext
from hopgraph import Settings, build_graph
from hopgraph.api import checkpoint_serializer, services_for
from stores.files import connect_sqlite
from tests.scripted import scripted_gateway
from tests.test_resp import SUMMARY, kind

pytestmark = pytest.mark.timeout(900)

QUESTION = "Which electric pickup did Elon Musk say is safer for pedestrians?"
THREAD = "killed-1"
REPLIES = {"global": f"{SUMMARY} [DONE]", "judge": "Yes", "generate": "Cybertruck"}


def saved_global_memory(settings: Settings, thread_id: str) -> list[str]:
    """ReSP's global memory in THREAD_ID's newest checkpoint, read from the database as another process
    would (its own connection): what a kill at this moment would keep."""
    path = Path(settings.checkpoint_url.removeprefix("sqlite:///"))
    saver = SqliteSaver(connect_sqlite(path), serde=checkpoint_serializer())
    try:
        saved = saver.get_tuple({"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}})
    finally:
        saver.conn.close()
    return list(saved.checkpoint["channel_values"].get("global_memory", [])) if saved else []


@dataclass
class HeldJudge:
    """Answers ReSP's calls by kind; the reasoner's first call is held (`arrived` set) until `release`, and
    on its arrival `saved_then` is what the checkpoints held of the summarizer's work.

    `answered` lists the kind of every call whose reply was sent; a held call released after its process
    was killed is answered to no one and not listed."""

    settings: Settings
    arrived: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)
    answered: list[str] = field(default_factory=list)
    saved_then: list[str] | None = None
    killed: bool = False

    def reply(self, prompt: str) -> str:
        called = kind(prompt)
        if called == "judge" and not self.arrived.is_set():
            self.saved_then = saved_global_memory(self.settings, THREAD)
            self.arrived.set()
            self.release.wait(timeout=600)
            if self.killed:
                return ""
        self.answered.append(called)
        return REPLIES[called]


@pytest.fixture
def held(settings: Settings) -> Iterator[tuple[HeldJudge, OpenAIStub]]:
    script = HeldJudge(settings)
    with serve(OpenAIStub(reply=script.reply)) as stub:
        try:
            yield script, stub
        finally:
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
    ask = ["ask", QUESTION, "--index", sample_index, "--method", "resp", "--thread-id", THREAD]

    first = hopgraph(*ask, env=env)
    try:
        assert script.arrived.wait(timeout=600), "the reasoner was never called"
        first.send_signal(signal.SIGKILL)
    finally:
        first.kill()
        out, errors = first.communicate(timeout=60)
    assert first.returncode == -signal.SIGKILL, errors
    script.killed = True
    script.release.set()
    assert script.answered == ["global"]
    # the summarizer's step was saved before the reasoner was called
    assert script.saved_then == [SUMMARY]

    # what the checkpoints hold: every step up to the summarizer's, the reasoner's not finished
    saved = history(THREAD, env=env)
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

    replayed = history(THREAD, env=env)
    assert replayed.returncode == 0, replayed.stderr
    nodes = re.findall(r"^(\w+) \d+\.\d\d s ─", replayed.stdout, re.MULTILINE)
    assert nodes == ["retrieve", "summarize", "judge", "generate"]
    assert "unfinished" not in replayed.stdout


class SaveFailed(RuntimeError):
    """The checkpoint database refused a write (a full disk, a lost server)."""


class FailingSummarySaver(SqliteSaver):
    """SQLite checkpoints in memory that refuse the first checkpoint holding the summarizer's memory."""

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        if checkpoint["channel_values"].get("global_memory"):
            raise SaveFailed("the summarizer's step could not be saved")
        return super().put(config, checkpoint, metadata, new_versions)


def test_a_step_whose_save_failed_makes_no_later_llm_call(
    settings: Settings, sample_index: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A graph from `build_graph` with a checkpointer (the Python API's and `hopgraph ask`'s) saves each
    step before the next starts: when the summarizer's step cannot be saved, the run stops with that error
    and the reasoner is never called; LangGraph's default durability would call it while the save ran."""
    llm, model = scripted_gateway(lambda prompt: REPLIES[kind(prompt)])
    monkeypatch.setitem(services_for(settings)._built, "llm", llm)
    saver = FailingSummarySaver(sqlite3.connect(":memory:", check_same_thread=False))
    graph = build_graph("resp", settings, checkpointer=saver)
    config = {"configurable": {"thread_id": "save-fails"}}
    with pytest.raises(SaveFailed):
        graph.invoke({"question": QUESTION}, config, context=ReSPContext(index=sample_index))
    assert [kind(prompt) for prompt in model.prompts] == ["global"]
