"""Tracing to LangSmith by environment only: `hopgraph ask` with LANGSMITH_TRACING=true and
LANGSMITH_ENDPOINT pointed at a collector of the test's own on 127.0.0.1 (standing in for a self-hosted
LangSmith).

What must arrive: the run tree of the NaiveRAG graph (the graph, its nodes, the LLM call under its node,
tagged with its role and node). What must not appear anywhere: the LLM's API key or LangSmith's, in a
traced payload, in anything written under the data directory (checkpoints), or in what the command
printed. The LLM is a stub OpenAI-compatible server (tests/openai_stub.py) that requires nothing of the
key it is sent; the collector accepts what the installed langsmith sends (multipart or batch JSON, gzip
if compressed) and answers 200.
"""

from __future__ import annotations

import email
import email.policy
import gzip
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest
from openai_stub import OpenAIStub, serve
from servers import serving

from hopgraph import Settings, index_corpus
from hopgraph.cli import SAMPLE_CORPUS

pytestmark = [pytest.mark.server, pytest.mark.timeout(600)]

LLM_KEY = "sk-test-LLMKEY-0f3b9c2e"
LANGSMITH_KEY = "lsv2_pt_test-LSKEY-7d1e4a90"


@dataclass
class Collector:
    """What reached the fake LangSmith: every request's method, path, headers and (decompressed) body."""

    url: str = ""
    requests: list[tuple[str, str, dict[str, str], bytes]] = field(default_factory=list)

    def runs(self) -> dict[str, dict[str, Any]]:
        """Every traced run by id, its posted fields merged with its patches (outputs, end time)."""
        runs: dict[str, dict[str, Any]] = {}
        for method, path, headers, body in self.requests:
            if method != "POST" or not path.startswith("/runs"):
                continue
            for run in _runs_in(path, headers, body):
                runs.setdefault(run["id"], {}).update({k: v for k, v in run.items() if v is not None})
        return runs


def _runs_in(path: str, headers: dict[str, str], body: bytes) -> list[dict[str, Any]]:
    """The run dicts of one ingestion request: /runs/multipart parts or a /runs/batch JSON body."""
    if path == "/runs/batch":
        batch = json.loads(body)
        return [*batch.get("post", []), *batch.get("patch", [])]
    assert path == "/runs/multipart", path
    message = email.message_from_bytes(
        b"Content-Type: " + headers["content-type"].encode() + b"\r\n\r\n" + body, policy=email.policy.HTTP
    )
    runs: dict[str, dict[str, Any]] = {}
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        _, run_id, *section = name.split(".")
        value = json.loads(part.get_payload(decode=True))
        run = runs.setdefault(run_id, {"id": run_id})
        run.update(value if not section else {section[0]: value})
    return list(runs.values())


@pytest.fixture
def collector() -> Iterator[Collector]:
    collected = Collector()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _record(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length", 0) or 0))
            if self.headers.get("content-encoding") == "gzip":
                body = gzip.decompress(body)
            assert self.headers.get("content-encoding") in (None, "gzip"), self.headers
            headers = {k.lower(): v for k, v in self.headers.items()}
            collected.requests.append((self.command, self.path, headers, body))
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", "2")
            self.end_headers()
            self.wfile.write(b"{}")

        do_GET = do_POST = do_PATCH = do_PUT = _record

        def log_message(self, format: str, *args: object) -> None:
            pass

    with serving(Handler) as url:
        collected.url = url
        yield collected


def test_naive_rag_is_traced_to_langsmith_by_environment_without_any_key(
    collector: Collector, tmp_path: Path
) -> None:
    data_dir = tmp_path / "data"
    index_corpus(SAMPLE_CORPUS, "sample", Settings(data_dir=data_dir))
    with serve(OpenAIStub(reply=lambda prompt: "Cybertruck")) as llm:
        env = {
            **os.environ,
            "HOPGRAPH_DATA_DIR": str(data_dir),
            "HOPGRAPH_CONFIG": "",
            "HOPGRAPH_LLM": "openai:stub",
            "HOPGRAPH_BASE_URL": llm.base_url,
            "HOPGRAPH_API_KEY": LLM_KEY,
            "LANGSMITH_TRACING": "true",
            "LANGSMITH_ENDPOINT": collector.url,
            "LANGSMITH_API_KEY": LANGSMITH_KEY,
            "COLUMNS": "200",
        }
        done = subprocess.run(
            [sys.executable, "-m", "hopgraph", "ask", "Which truck is discussed?", "--index", "sample"],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        assert llm.requests[0].headers["authorization"] == f"Bearer {LLM_KEY}"  # the key was in use

    runs = collector.runs()
    (root,) = [run for run in runs.values() if run.get("parent_run_id") is None]
    assert root["name"] == "naive" and root["run_type"] == "chain"
    children = {run["name"]: run for run in runs.values() if run.get("parent_run_id") == root["id"]}
    assert {"retrieve", "generate"} <= set(children)
    (call,) = [run for run in runs.values() if run["run_type"] == "llm"]
    assert call["parent_run_id"] == children["generate"]["id"]
    assert {"role:generator", "node:generate"} <= set(call["tags"])
    metadata = call["extra"]["metadata"]
    assert metadata["role"] == "generator" and metadata["node"] == "generate"
    assert "Cybertruck" in json.dumps(call["outputs"])
    assert root["outputs"]["answer"] == "Cybertruck"
    assert all(run.get("end_time") for run in runs.values())  # every run was closed (patched) and flushed

    # LangSmith's key authenticates the requests (a header); neither key is in any payload or elsewhere
    assert all(headers["x-api-key"] == LANGSMITH_KEY for _, _, headers, _ in collector.requests)
    for secret in (LLM_KEY, LANGSMITH_KEY):
        assert not [path for _, path, _, body in collector.requests if secret.encode() in body]
        assert secret not in done.stdout and secret not in done.stderr
        written = [path for path in data_dir.rglob("*") if path.is_file()]  # checkpoints, index, caches
        assert data_dir / "checkpoints.sqlite" in written
        assert not [path for path in written if secret.encode() in path.read_bytes()]
