"""The graphs as LangGraph Studio sees them: a real `langgraph dev` server over the bundled sample index.

Why a real server: Studio talks to `langgraph dev` over HTTP, and what it can show (the graph list, the
context form, a run's result) depends on how langgraph.json, hopgraph/studio.py and the graphs' schemas
load inside that server's own process, with settings taken from its environment. Unit tests of the
compiled graph cannot catch a graph missing from langgraph.json, a schema the server cannot serialise, or
a graph that only works with a checkpointer the server does not bring. That langgraph.json and
hopgraph/studio.py name exactly the registry's methods is checked without a server, in test_registry.py.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from conftest import MODEL_DIR, REPO, free_port
from servers import stop, wait_until_up
from test_naive_local import GOLD_TITLES, QUESTION

from graphs.registry import METHODS
from hopgraph import Settings

# In the `llm` tests' xdist group (tests/conftest.py), though only two of these tests run the embedded model
# (in the server's process): one worker starts the one server and runs the module, its model runs in turn
# with the other real-model tests rather than beside them.
pytestmark = [pytest.mark.server, pytest.mark.timeout(600), pytest.mark.xdist_group("llm")]

LANGGRAPH = REPO / ".venv" / "bin" / "langgraph"
STARTUP_SECONDS = 120.0
RUN_SECONDS = 300.0
TOKEN = secrets.token_urlsafe(24)
AUTH = {"Authorization": f"Bearer {TOKEN}"}  # every request of the tests' own, as Studio sends it
"""Upper bound for one run: ~5 s on an idle machine, far more when other test sessions share the CPUs."""
CONTEXT = {"index": "sample", "top_k": 2}  # each passage read is prompt tokens the server evaluates


@pytest.fixture(scope="module")
def studio(settings: Settings, sample_index: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`langgraph dev` on 127.0.0.1 over the session's data directory (index 'sample' is built there).

    --no-reload because other files in the repo change while tests run and a reload mid-run would drop the
    run; no tracing or CLI analytics so the server needs no network. The in-memory runtime keeps its state
    in ./.langgraph_api of its working directory (and loads what it finds there on start): the server runs
    in a folder of this test session's own whose entries link to the repo's, so langgraph.json and its
    relative paths are the repo's own while the state stays out of the repo, where another server (a
    second pytest-xdist worker's, another session's) would read it or delete it under this one.
    """
    tmp = tmp_path_factory.mktemp("studio")
    log = tmp / "langgraph-dev.log"
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("HOPGRAPH_")}
    env.update(
        HOPGRAPH_DATA_DIR=str(settings.data_dir),
        HOPGRAPH_MODEL_DIR=str(MODEL_DIR),
        HOPGRAPH_CONFIG="",
        LANGSMITH_TRACING="false",
        LANGCHAIN_TRACING_V2="false",
        LANGGRAPH_CLI_NO_ANALYTICS="1",
        HOPGRAPH_STUDIO_TOKEN=TOKEN,
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
    )
    root = tmp / "repo"
    root.mkdir()
    for entry in REPO.iterdir():
        if entry.name not in {".git", ".langgraph_api"}:
            (root / entry.name).symlink_to(entry)
    command = [
        str(LANGGRAPH), "dev", "--no-browser", "--no-reload",
        "--host", "127.0.0.1", "--port", str(port), "--config", "langgraph.json",
    ]  # fmt: skip
    with log.open("wb") as out:
        proc = subprocess.Popen(
            command, cwd=root, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_up(proc, f"{url}/ok", log, "langgraph dev", STARTUP_SECONDS)
        yield url
    finally:
        stop(proc, log, "langgraph dev")
        assert proc.returncode is not None
        with pytest.raises(httpx.TransportError):
            httpx.get(f"{url}/ok", timeout=2.0)


def _post(url: str, path: str, body: dict[str, Any], timeout: float = 30.0) -> Any:
    response = httpx.post(f"{url}{path}", json=body, timeout=timeout, headers=AUTH)
    assert response.status_code == 200, f"POST {path}: {response.status_code} {response.text[:2000]}"
    return response.json()


def _assistant_id(url: str, graph_id: str) -> str:
    [assistant] = _post(url, "/assistants/search", {"graph_id": graph_id, "limit": 10})
    return str(assistant["assistant_id"])


def test_server_lists_an_assistant_for_every_method(studio: str) -> None:
    """Each graph imported inside the server process (settings from its environment) and got an assistant."""
    assistants = _post(studio, "/assistants/search", {"limit": 100})
    assert set(METHODS) <= {a["graph_id"] for a in assistants}


def test_context_schema_is_what_studio_offers_for_editing(studio: str) -> None:
    """Per-run parameters reach Studio's form only through the graph's context_schema."""
    assistant = _assistant_id(studio, "naive")
    response = httpx.get(f"{studio}/assistants/{assistant}/schemas", timeout=30.0, headers=AUTH)
    assert response.status_code == 200, response.text
    schemas = response.json()
    properties = schemas["context_schema"]["properties"]
    assert {"index", "top_k", "retrieval_mode"} <= set(properties)
    assert properties["top_k"]["type"] == "integer"
    assert set(properties["retrieval_mode"]["enum"]) == {"dense", "bm25", "hybrid"}

    drawn = httpx.get(f"{studio}/assistants/{assistant}/graph", timeout=30.0, headers=AUTH).json()
    assert {"retrieve", "generate"} <= {node["id"] for node in drawn["nodes"]}


@pytest.mark.parametrize("graph_id", sorted(METHODS))
def test_studio_shows_what_every_context_field_means(studio: str, graph_id: str) -> None:
    """The server's schema (what Studio's context form renders) carries each field's description."""
    assistant = _assistant_id(studio, graph_id)
    response = httpx.get(f"{studio}/assistants/{assistant}/schemas", timeout=30.0, headers=AUTH)
    assert response.status_code == 200, response.text
    properties = response.json()["context_schema"]["properties"]
    assert {"index", "top_k"} <= set(properties)
    undescribed = [name for name, prop in properties.items() if not prop.get("description", "").strip()]
    assert not undescribed, f"{graph_id}: Studio shows no description for {undescribed}"


def test_input_and_output_schemas_serialise_for_studio(studio: str) -> None:
    """Studio builds its input form from input_schema and shows output_schema; null means it cannot.

    The server logs why a schema is null (pydantic cannot read a typing.TypedDict on Python < 3.12, it needs
    typing_extensions.TypedDict), so this fails until the state types are declared that way.
    """
    assistant = _assistant_id(studio, "naive")
    schemas = httpx.get(f"{studio}/assistants/{assistant}/schemas", timeout=30.0, headers=AUTH).json()
    assert schemas["input_schema"] is not None, "input_schema is null: see the server log"
    assert set(schemas["input_schema"]["properties"]) == {"question"}
    assert schemas["output_schema"] is not None, "output_schema is null: see the server log"
    assert {"answer", "evidence", "usage"} <= set(schemas["output_schema"]["properties"])


def test_a_stateless_run_answers_from_the_sample_index(studio: str) -> None:
    """A run through the server's own runtime: context from the request, the embedded LLM in its process.

    The graph is compiled without a checkpointer (the server brings one), so this also shows the exported
    graph works with the server's checkpointer and a context given as JSON.
    """
    out = _post(
        studio,
        "/runs/wait",
        {
            "assistant_id": "naive",
            "input": {"question": QUESTION},
            "context": CONTEXT,
        },
        timeout=RUN_SECONDS,
    )
    assert "__error__" not in out, out
    assert "cybertruck" in out["answer"].lower(), out["answer"]
    assert len(out["evidence"]) == 2
    assert {item["title"] for item in out["evidence"]} & GOLD_TITLES
    assert all(item["doc_id"].startswith("https://") for item in out["evidence"])
    [usage] = out["usage"]
    assert usage["node"] == "generate" and usage["prompt_tokens"] > 200


def _events(url: str, path: str, body: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    """(event, data) of each server-sent event a streaming endpoint answers with."""
    with httpx.stream("POST", f"{url}{path}", json=body, timeout=RUN_SECONDS, headers=AUTH) as response:
        assert response.status_code == 200, response.read()[:2000]
        event = ""
        for line in response.iter_lines():
            if line.startswith("event:"):
                event = line.removeprefix("event:").strip()
            elif line.startswith("data:"):
                yield event, json.loads(line.removeprefix("data:"))


def test_a_streamed_run_sends_the_generators_tokens_as_they_come(studio: str) -> None:
    """What Studio's message view reads: stream_mode "messages-tuple" gives each LLM token with the node that
    generated it, from the embedded model inside the server's process, before that node's update."""
    events = list(
        _events(
            studio,
            "/runs/stream",
            {
                "assistant_id": "naive",
                "input": {"question": QUESTION},
                "context": CONTEXT,
                "stream_mode": ["updates", "messages-tuple"],
            },
        )
    )
    assert not [data for event, data in events if event == "error"], events[-3:]
    tokens = [data for event, data in events if event == "messages"]
    from_generator = [chunk for chunk, meta in tokens if meta["langgraph_node"] == "generate"]
    first_call = [c["content"] for c in from_generator if c["id"] == from_generator[0]["id"] and c["content"]]
    assert len(first_call) > 1, from_generator  # token by token, not one whole reply
    assert "cybertruck" in "".join(first_call).lower()
    [(generated, update)] = [
        (position, data)
        for position, (event, data) in enumerate(events)
        if event == "updates" and "generate" in data
    ]
    last_token = max(position for position, (event, _) in enumerate(events) if event == "messages")
    assert last_token < generated  # the tokens came as they were generated, before the node's update
    assert "cybertruck" in update["generate"]["answer"].lower()


def test_the_server_answers_only_its_user(studio: str) -> None:
    """What a web page open in the user's browser could do before (issue 40 item 3): run any graph without a
    token, from its own origin, or through DNS rebinding (its own host name re-pointed at 127.0.0.1, so the
    request names the page's host). Each is refused; Studio's own request is answered, and CORS lets only
    Studio's origin read answers."""
    search = f"{studio}/assistants/search"
    body = {"limit": 1}
    assert httpx.post(search, json=body, timeout=30.0).status_code == 401
    wrong = {"Authorization": "Bearer guessed"}
    assert httpx.post(search, json=body, timeout=30.0, headers=wrong).status_code == 401
    # `langgraph dev` lets a request saying it comes from Studio skip custom auth unless langgraph.json
    # turns that off (disable_studio_auth): any page could say so
    studio_says = {"x-auth-scheme": "langsmith", "Origin": "https://smith.langchain.com"}
    assert httpx.post(search, json=body, timeout=30.0, headers=studio_says).status_code == 401
    foreign = {**AUTH, "Origin": "https://attacker.example"}
    assert httpx.post(search, json=body, timeout=30.0, headers=foreign).status_code == 403
    rebound = {**AUTH, "Host": "attacker.example:2024"}
    assert httpx.post(search, json=body, timeout=30.0, headers=rebound).status_code == 403
    studio_page = {**AUTH, "Origin": "https://smith.langchain.com"}
    answered = httpx.post(search, json=body, timeout=30.0, headers=studio_page)
    assert answered.status_code == 200
    assert answered.headers["access-control-allow-origin"] == "https://smith.langchain.com"
    preflight = {"Origin": "https://attacker.example", "Access-Control-Request-Method": "POST"}
    asked = httpx.options(f"{studio}/runs/wait", headers=preflight, timeout=30.0)
    assert "access-control-allow-origin" not in asked.headers
    # Studio's own preflight for a request carrying the token: allowed, so its browser sends the header
    own = {
        **preflight,
        "Origin": "https://smith.langchain.com",
        "Access-Control-Request-Headers": "authorization",
    }
    allowed = httpx.options(f"{studio}/runs/wait", headers=own, timeout=30.0)
    assert allowed.headers["access-control-allow-origin"] == "https://smith.langchain.com"
    assert "authorization" in allowed.headers["access-control-allow-headers"].lower()


def _run_error(studio: str, question: str, context: dict[str, Any]) -> str:
    """The message of a run the server refused or that failed before its LLM ran."""
    out = _post(
        studio, "/runs/wait", {"assistant_id": "naive", "input": {"question": question}, "context": context}
    )
    assert "__error__" in out, out
    return str(out["__error__"])


def test_a_caller_learns_no_index_names_and_runs_no_unbounded_or_chosen_work(studio: str) -> None:
    """An unknown index says so without naming the others; counts have upper bounds Studio's form shows;
    no run parameter names a file to load (TreeHop's checkpoint is a setting); a question has a size."""
    missing = _run_error(studio, QUESTION, {"index": "nope"})
    assert "No index named 'nope'" in missing and "sample" not in missing
    assert "at most 100" in _run_error(studio, QUESTION, {"index": "sample", "top_k": 1_000_000})
    assert "more than the 4,000" in _run_error(studio, "why? " * 1000, {"index": "sample"})
    naive = httpx.get(
        f"{studio}/assistants/{_assistant_id(studio, 'naive')}/schemas", timeout=30.0, headers=AUTH
    )
    assert naive.json()["context_schema"]["properties"]["top_k"]["maximum"] == 100
    treehop = httpx.get(
        f"{studio}/assistants/{_assistant_id(studio, 'treehop')}/schemas", timeout=30.0, headers=AUTH
    )
    assert "checkpoint" not in treehop.json()["context_schema"]["properties"]
