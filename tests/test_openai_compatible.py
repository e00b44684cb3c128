"""Swapping the LLM by config: a real OpenAI-compatible server, per-role routing, and provider failures.

Why real servers: `openai:MODEL` + base_url goes through LangChain's init_chat_model to ChatOpenAI and the
OpenAI SDK, whose HTTP behaviour (request shape, usage reporting, timeouts, retry count and backoff) is
what users of vLLM, Ollama or a llama.cpp server get. A fake chat model would test none of that. The
servers here are llama.cpp's own OpenAI-compatible server over the embedded GGUF, a stdlib HTTP server that
answers every request with 503, and a socket that accepts connections and never answers.
"""

from __future__ import annotations

import json
import socket
import subprocess
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import httpx
import pytest
from conftest import MODEL_DIR, REPO, free_port
from openai_stub import Fault, OpenAIStub, serve
from servers import serving, stop, wait_until_up
from test_naive_local import GOLD_TITLES, QUESTION

from evals.runner import latest_results, read_records, results_path
from hopgraph import Settings, build_graph, services_for
from hopgraph.evaluate import evaluate
from hopgraph.settings import RoleSettings
from nodes.llm import ProviderError
from tests import tiny_hotpot

pytestmark = [pytest.mark.server, pytest.mark.timeout(600)]

PYTHON = REPO / ".venv" / "bin" / "python"
MODEL = "openai:local-qwen"
ALIAS = "local-qwen"
STARTUP_SECONDS = 120.0
CONTEXT = {"index": "sample", "top_k": 2}  # every passage read is a prompt the server evaluates
ANSWER_TIMEOUT = 300.0
"""Per-request timeout against the llama.cpp server: ~5 s idle, minutes when other sessions share the CPUs.
With max_retries=0 a slow answer fails plainly instead of being silently re-sent."""


@pytest.fixture(scope="module")
def llama_server(gguf_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """llama.cpp's OpenAI-compatible server over the embedded GGUF on 127.0.0.1; yields its /v1 base URL.

    Its own process group, so teardown stops it and anything it spawned; fails teardown if SIGTERM is
    ignored (a server left behind would hold 1 GB and two CPUs for the rest of the session).
    """
    log = tmp_path_factory.mktemp("llama-server") / "server.log"
    port = free_port()
    command = [
        str(PYTHON), "-m", "llama_cpp.server", "--model", str(gguf_path), "--model_alias", ALIAS,
        "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "4096", "--n_threads", "2",
        "--verbose", "false",
    ]  # fmt: skip
    with log.open("wb") as out:
        proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        wait_until_up(proc, f"{base_url}/models", log, "llama_cpp.server", STARTUP_SECONDS)
        assert [m["id"] for m in httpx.get(f"{base_url}/models").json()["data"]] == [ALIAS]
        yield base_url
    finally:
        stop(proc, log, "llama_cpp.server")
        assert proc.returncode is not None


@dataclass
class FakeProvider:
    """A local endpoint standing in for a failing provider; records what reached it."""

    base_url: str
    requests: list[str] = field(default_factory=list)


@pytest.fixture
def unavailable_provider() -> Iterator[FakeProvider]:
    """An HTTP server that answers every request with 503 Service Unavailable (an overloaded provider)."""
    provider = FakeProvider("")

    class Unavailable(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            provider.requests.append(f"{self.command} {self.path}")
            self.rfile.read(int(self.headers.get("content-length", 0)))
            body = json.dumps({"error": {"message": "model overloaded", "type": "server_error"}}).encode()
            self.send_response(503)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST

        def log_message(self, format: str, *args: object) -> None:  # quiet test output
            pass

    with serving(Unavailable) as url:
        provider.base_url = f"{url}/v1"
        yield provider


@pytest.fixture
def hanging_provider() -> Iterator[FakeProvider]:
    """A socket that accepts connections and never answers (a provider stuck mid-request)."""
    provider = FakeProvider("")
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.1)  # closing a socket does not wake a blocked accept(); poll a stop flag instead
    stop = threading.Event()
    held: list[socket.socket] = []

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            held.append(conn)
            provider.requests.append("connection")

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    provider.base_url = f"http://127.0.0.1:{listener.getsockname()[1]}/v1"
    try:
        yield provider
    finally:
        stop.set()
        thread.join(timeout=5)
        listener.close()
        for conn in held:
            conn.close()


def _remote(settings: Settings, **overrides: object) -> Settings:
    """The session's data directory (index 'sample') with a remote LLM instead of the embedded one."""
    return Settings(data_dir=settings.data_dir, model_dir=MODEL_DIR, llm=MODEL, **overrides)


@pytest.mark.llm  # the embedded model, served by llama_cpp.server
def test_naive_runs_on_an_openai_compatible_server(
    settings: Settings, sample_index: str, llama_server: str
) -> None:
    """`openai:MODEL` + base_url answers through the server and reports the server's token usage."""
    remote = _remote(settings, base_url=llama_server, timeout=ANSWER_TIMEOUT, max_retries=0)
    graph = build_graph("naive", remote)
    out = graph.invoke(
        {"question": QUESTION}, {"configurable": {"thread_id": "openai-compatible-naive"}}, context=CONTEXT
    )

    assert "cybertruck" in out["answer"].lower(), out["answer"]
    assert {item["title"] for item in out["evidence"]} & GOLD_TITLES
    [usage] = out["usage"]
    assert usage["role"] == "generator" and usage["calls"] == 1 and usage["cache_hits"] == 0
    assert usage["prompt_tokens"] > 200 and usage["completion_tokens"] > 0

    chosen = services_for(remote).llm.model_for("generator")
    assert llama_server in chosen.model_id and chosen.model_id.startswith(MODEL)
    assert llama_server in chosen.describe
    assert services_for(remote) is not services_for(settings)  # the embedded model is not reused


@pytest.mark.llm  # the embedded model, served by llama_cpp.server
def test_a_role_override_routes_only_that_role(
    settings: Settings, sample_index: str, llama_server: str, unavailable_provider: FakeProvider
) -> None:
    """roles.generator points at the live server while the default points at a dead one.

    The default is deliberately unusable: if the override were ignored, the run would fail on the 503
    server instead of answering, so a passing run proves the generator call went where its role says.
    """
    remote = _remote(
        settings,
        base_url=unavailable_provider.base_url,
        max_retries=0,
        timeout=ANSWER_TIMEOUT,
        roles={"generator": RoleSettings(llm=MODEL, base_url=llama_server)},
    )
    out = build_graph("naive", remote, checkpointer=False).invoke({"question": QUESTION}, context=CONTEXT)

    assert "cybertruck" in out["answer"].lower(), out["answer"]
    assert unavailable_provider.requests == []
    gateway = services_for(remote).llm
    assert llama_server in gateway.model_for("generator").model_id
    assert unavailable_provider.base_url in gateway.model_for("rewriter").model_id  # unset roles: default


def _provider_failure(remote: Settings) -> str:
    """Run the naive graph against a failing provider: the ProviderError's message."""
    graph = build_graph("naive", remote, checkpointer=False)
    with pytest.raises(ProviderError) as info:
        graph.invoke({"question": QUESTION}, context=CONTEXT)
    return str(info.value)


def test_an_unavailable_provider_fails_with_one_clear_error_after_its_retries(
    settings: Settings, sample_index: str, unavailable_provider: FakeProvider
) -> None:
    """503 on every attempt: the OpenAI SDK retries max_retries times with backoff, then ProviderError.

    ChatOpenAI hands max_retries to the SDK, which makes 1 + max_retries attempts (no second retry layer in
    LangChain), so max_retries=1 means exactly two requests.
    """
    remote = _remote(settings, base_url=unavailable_provider.base_url, max_retries=1, timeout=5)
    message = _provider_failure(remote)
    assert "'generator'" in message
    assert MODEL in message and unavailable_provider.base_url in message
    assert "503" in message
    assert "Check that the server is running" in message and "max_retries" in message
    # the attempts are counted, not timed: 1 + max_retries requests, then the error
    assert unavailable_provider.requests == ["POST /v1/chat/completions"] * 2


def test_a_provider_echoing_the_key_is_reported_without_it(settings: Settings, sample_index: str) -> None:
    """A server that answers 401 with the whole key it was sent in its error text: the one-line error
    names the fault and the server, and shows stars where the key stood."""
    key = "sk-echoed-by-the-server-0123456789"
    stub = OpenAIStub(reply=lambda prompt: "unused", fault=lambda prompt, earlier: "401")
    with serve(stub):
        message = _provider_failure(_remote(settings, base_url=stub.base_url, api_key=key, max_retries=0))
    assert stub.requests[0].headers["authorization"] == f"Bearer {key}"  # the server did get the key
    assert key not in message and "Incorrect API key provided: ***" in message and "401" in message


def test_a_hanging_provider_times_out_within_the_configured_timeout(
    settings: Settings, sample_index: str, hanging_provider: FakeProvider
) -> None:
    """A server that never answers costs `timeout` seconds per attempt, not a hung run."""
    remote = _remote(settings, base_url=hanging_provider.base_url, max_retries=0, timeout=1)
    message = _provider_failure(remote)
    assert "timed out" in message.lower(), message
    assert "'generator'" in message and hanging_provider.base_url in message
    assert "timeout" in message  # the advice names the setting to raise
    # one connection, given up after its timeout and not retried (max_retries=0): the run did not hang
    assert hanging_provider.requests == ["connection"]


def test_the_cli_reports_a_provider_failure_as_one_paragraph_and_exit_code_2(
    cli_env: dict[str, str], sample_index: str, unavailable_provider: FakeProvider
) -> None:
    """`hopgraph ask` against a failing provider: the user sees the message, not a traceback."""
    env = dict(cli_env)
    env.update(
        HOPGRAPH_LLM=MODEL,
        HOPGRAPH_BASE_URL=unavailable_provider.base_url,
        HOPGRAPH_MAX_RETRIES="0",
        HOPGRAPH_TIMEOUT="5",
    )
    done = subprocess.run(
        [str(REPO / ".venv" / "bin" / "hopgraph"), "ask", QUESTION, "--index", sample_index, "--k", "4"],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )

    assert done.returncode == 2, (done.stdout[-2000:], done.stderr[-2000:])
    stderr = done.stderr.strip()
    assert "Traceback" not in done.stderr and "Traceback" not in done.stdout
    assert stderr.startswith("error:") and "\n\n" not in stderr, stderr
    assert "'generator'" in stderr and unavailable_provider.base_url in stderr and "503" in stderr
    assert unavailable_provider.requests == ["POST /v1/chat/completions"]  # max_retries=0: one attempt
    assert "retrieve" in done.stdout  # the nodes before the failure were still shown


def _answering_stub(fault: Callable[[str, int], Fault | None]) -> OpenAIStub:
    """The stub provider: the sample's answer to the sample's question, the tiny benchmark's gold answers
    to its questions, and `fault` where it says so."""
    return OpenAIStub(
        reply=lambda prompt: tiny_hotpot.answer(prompt) if tiny_hotpot.question_in(prompt) else "Cybertruck",
        fault=fault,
    )


@pytest.mark.parametrize("fault", ["not-json", "truncated", "no-choices"])
def test_a_malformed_reply_is_retried_like_a_500_then_reported_in_one_line(
    settings: Settings, sample_index: str, fault: Fault
) -> None:
    """A 200 whose body the SDK cannot read (JSONDecodeError, IndexError) failed at the first request; now
    it is asked again `max_retries` times as a 500 is, then ends in the one line every provider fault has."""
    with serve(_answering_stub(lambda prompt, earlier: fault)) as stub:
        message = _provider_failure(_remote(settings, base_url=stub.base_url, max_retries=2, timeout=5))
    assert [request.outcome for request in stub.requests] == [fault] * 3  # 1 + max_retries
    assert message.startswith(f"The model for role 'generator' ({MODEL} at {stub.base_url}; "), message
    assert "failed: a malformed reply, 3 times (" in message and "\n" not in message
    assert "Check that the server is running" in message and "max_retries" in message


def test_a_reply_that_is_fine_on_the_retry_answers(settings: Settings, sample_index: str) -> None:
    with serve(_answering_stub(lambda prompt, earlier: "truncated" if earlier == 0 else None)) as stub:
        remote = _remote(settings, base_url=stub.base_url, max_retries=1, timeout=5)
        out = build_graph("naive", remote, checkpointer=False).invoke({"question": QUESTION}, context=CONTEXT)
    assert out["answer"] == "Cybertruck"
    assert [request.outcome for request in stub.requests] == ["truncated", "ok"]


def test_an_empty_completion_is_asked_again_once_then_fails_the_call(
    settings: Settings, sample_index: str
) -> None:
    """Not `max_retries` times: a server that replied nothing may do so again; once, then the call fails."""
    with serve(_answering_stub(lambda prompt, earlier: "empty")) as stub:
        message = _provider_failure(_remote(settings, base_url=stub.base_url, max_retries=3, timeout=5))
    assert [request.outcome for request in stub.requests] == ["empty"] * 2
    assert "failed: an empty completion, twice (asked again once)" in message and "\n" not in message

    with serve(_answering_stub(lambda prompt, earlier: "empty" if earlier == 0 else None)) as stub:
        remote = _remote(settings, base_url=stub.base_url, max_retries=0, timeout=5)
        out = build_graph("naive", remote, checkpointer=False).invoke({"question": QUESTION}, context=CONTEXT)
    assert out["answer"] == "Cybertruck" and [usage["calls"] for usage in out["usage"]] == [2]


def test_an_evaluation_records_an_empty_completion_as_a_failed_question_and_asks_it_again(
    settings: Settings, tmp_path: Path
) -> None:
    """Before, the empty reply was scored as the answer '' (and cached): a re-run never asked again."""
    broken, gold = tiny_hotpot.QUESTIONS[0][:2]
    empty = True
    data, out = tiny_hotpot.write(tmp_path / "tiny"), tmp_path / "run"
    with serve(
        _answering_stub(lambda prompt, earlier: "empty" if empty and broken in prompt else None)
    ) as stub:
        remote = _remote(settings, base_url=stub.base_url, max_retries=0, timeout=30)
        evaluate("hotpotqa", data, ["naive"], limit=2, out_dir=out, settings=remote)
        [failed] = [r for r in latest_results(read_records(results_path(out))).values() if r["error"]]
        assert failed["question"] == broken and failed["prediction"] is None
        assert failed["error"].startswith("ProviderError: The model for role 'generator'")
        assert "an empty completion, twice" in failed["error"]

        empty = False
        asked = len(stub.requests)
        evaluate("hotpotqa", data, ["naive"], limit=2, out_dir=out, settings=remote)
    latest = latest_results(read_records(results_path(out)))
    assert {r["question"]: r["prediction"] for r in latest.values() if r["question"] == broken} == {
        broken: gold
    }
    assert all(r["error"] is None for r in latest.values())
    assert all(broken in request.prompt for request in stub.requests[asked:])  # only it was asked again
