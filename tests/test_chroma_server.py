"""Indexes on a Chroma server (`chroma_url`): a real `chroma run` on 127.0.0.1, started and stopped here.

What must hold with a server as with the embedded database: a build is atomic (queries keep reaching the
previous build while a new one is written or after it was interrupted), resumable (the interrupted build
continues in its own collections), and incremental (an added extra copies the chunk collection). What a
shared server adds: every collection name carries the index name and the build id, a superseded build's
collections are deleted from the server, and nothing Chroma writes lands in the build folder.
The end-to-end test runs index, ask and a small eval with the LLM replaced by a stub OpenAI-compatible
server (tests/openai_stub.py): the test is about where vectors live, not about answers.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import chromadb
import httpx
import pytest
import tiny_hotpot
from conftest import free_port
from embedders import Counting, MiniLM
from openai_stub import OpenAIStub, serve
from servers import serving, stop, wait_until_up

from evals.runner import read_records, results_path
from hopgraph import Settings, build_graph, index_corpus
from hopgraph.cli import SAMPLE_CORPUS
from hopgraph.evaluate import evaluate
from hopgraph.providers import index_store
from stores.chroma import ChromaServer, ChromaUnreachableError
from stores.documents import Document, load_corpus
from stores.index import EMBED_BATCH, IndexParams, IndexStore
from stores.sentence_graph import SentenceGraphParams
from stores.sentence_graph.extra import SentenceGraphExtra

pytestmark = [pytest.mark.server, pytest.mark.timeout(900)]

CHROMA = Path(sys.executable).parent / "chroma"
STARTUP_SECONDS = 60.0
MULTIHOP = Path(__file__).parent / "fixtures" / "corpora" / "multihop_rag.json"
SMALL = IndexParams(chunk_size=8, chunk_overlap=2)  # many chunks, so a crash lands after one stored batch


@pytest.fixture(scope="module")
def chroma_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`chroma run --host 127.0.0.1 --port N --path TMP` in its own process group; yields its URL."""
    folder = tmp_path_factory.mktemp("chroma-server")
    log = folder / "server.log"
    port = free_port()
    command = [str(CHROMA), "run", "--host", "127.0.0.1", "--port", str(port), "--path", str(folder / "db")]
    with log.open("wb") as out:
        proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_up(proc, f"{url}/api/v2/heartbeat", log, "chroma run", STARTUP_SECONDS)
        yield url
    finally:
        stop(proc, log, "chroma run")


def on_server(url: str, index: str) -> dict[str, int]:
    """The server's collections of `index` with their record counts, read by a client of the test's own."""
    host, port = url.removeprefix("http://").split(":")
    client = chromadb.HttpClient(
        host=host, port=int(port), settings=chromadb.config.Settings(anonymized_telemetry=False)
    )
    try:
        return {c.name: c.count() for c in client.list_collections() if c.name.startswith(f"{index}--")}
    finally:
        client.close()


def test_builds_on_a_server_are_atomic_resumable_and_dropped_when_superseded(
    chroma_url: str, minilm: MiniLM, tmp_path: Path
) -> None:
    store = IndexStore(tmp_path / "indexes", ChromaServer(chroma_url))
    docs = load_corpus(MULTIHOP)
    first = store.build("news", docs[:2], minilm, SMALL).manifest
    assert on_server(chroma_url, "news") == {f"news--{first.build_id}--chunks": first.chunks}
    assert not (store.root / "news" / "current" / "chroma").exists()  # only manifest and BM25 are local
    old = store.open("news", minilm)
    assert old.search("Robin Williams cocaine", k=1, mode="dense")[0].chunk.doc_id == docs[0].id

    # An interrupted build of a changed corpus: its collection is on the server, queries never see it.
    crashing = Counting(minilm, fail_after=1)
    with pytest.raises(RuntimeError, match="simulated crash"):
        store.build("news", docs, crashing, SMALL)
    partial = [n for n in on_server(chroma_url, "news") if not n.startswith(f"news--{first.build_id}--")]
    assert len(partial) == 1 and on_server(chroma_url, "news")[partial[0]] == EMBED_BATCH
    for reader in (store, IndexStore(store.root, ChromaServer(chroma_url))):
        index = reader.open("news", minilm)
        assert index.manifest.build_id == first.build_id and len(index.all_chunks()) == first.chunks
        assert {hit.chunk.doc_id for hit in index.search("FTX trial", k=50, mode="dense")} <= {
            d.id for d in docs[:2]
        }

    counting = Counting(minilm)
    resumed = store.build("news", docs, counting, SMALL)
    second = resumed.manifest
    assert resumed.status == "resumed" and partial == [f"news--{second.build_id}--chunks"]
    # the first batch reused the first build's 43 vectors from the server and was stored before the
    # crash, so the resumed build embeds only the chunks after it
    assert crashing.texts == EMBED_BATCH - first.chunks
    assert counting.texts == second.chunks - EMBED_BATCH
    assert on_server(chroma_url, "news") == {f"news--{second.build_id}--chunks": second.chunks}
    latest = store.open("news", minilm)
    assert latest.search("Sam Bankman-Fried FTX trial", k=1, mode="dense")[0].chunk.doc_id == docs[2].id


def test_an_extra_on_a_server_copies_the_chunks_and_its_own_collection_goes_with_it(
    chroma_url: str, minilm: MiniLM, spacy_nlp: Any, tmp_path: Path
) -> None:
    store = IndexStore(tmp_path / "indexes", ChromaServer(chroma_url))
    docs = [
        Document("curie", "Marie Curie", "Marie Curie won two Nobel Prizes. She was born in Warsaw."),
        Document("warsaw", "Warsaw", "Warsaw is the capital of Poland. The Vistula flows through it."),
    ]
    plain = store.build("bio", docs, minilm).manifest
    counting = Counting(minilm)
    graph = store.build(
        "bio", docs, counting, extras={"sentence_graph": SentenceGraphParams()}, models={"nlp": spacy_nlp}
    ).manifest
    assert on_server(chroma_url, "bio") == {
        f"bio--{graph.build_id}--chunks": plain.chunks,  # copied, not embedded again
        f"bio--{graph.build_id}--sentences": 4,
    }
    assert counting.texts == 4  # the sentences only
    assert store.open("bio", minilm).extra(SentenceGraphExtra) is not None

    again = store.build("bio", docs, counting).manifest  # back to chunks only: the copy leaves sentences out
    assert again.build_id == plain.build_id
    assert on_server(chroma_url, "bio") == {f"bio--{plain.build_id}--chunks": plain.chunks}


def test_index_ask_and_eval_against_a_chroma_server(chroma_url: str, tmp_path: Path) -> None:
    """`hopgraph index` with HOPGRAPH_CHROMA_URL, then a NaiveRAG question and a 4-question eval."""
    data_dir = tmp_path / "data"
    env = {
        **os.environ,
        "HOPGRAPH_DATA_DIR": str(data_dir),
        "HOPGRAPH_CHROMA_URL": chroma_url,
        "HOPGRAPH_CONFIG": "",
    }
    done = subprocess.run(
        [sys.executable, "-m", "hopgraph", "index", str(SAMPLE_CORPUS), "--name", "sample"],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    (build,) = (data_dir / "indexes" / "sample" / "builds").iterdir()
    assert not (build / "chroma").exists()
    manifest = json.loads((build / "manifest.json").read_text())
    assert on_server(chroma_url, "sample") == {f"sample--{build.name}--chunks": manifest["chunks"]}

    with serve(OpenAIStub(reply=lambda prompt: "Cybertruck")) as llm:
        settings = Settings(
            data_dir=data_dir, chroma_url=chroma_url, llm="openai:stub", base_url=llm.base_url, max_retries=0
        )
        question = "Which vehicle is discussed in the articles about pedestrian safety?"
        out = build_graph("naive", settings, checkpointer=False).invoke(
            {"question": question}, context={"index": "sample", "top_k": 4}
        )
        assert out["answer"] == "Cybertruck" and len(out["evidence"]) == 4
        assert any(item["text"] in llm.requests[0].prompt for item in out["evidence"])

    with serve(OpenAIStub(reply=tiny_hotpot.answer)) as llm:
        settings = settings.model_copy(update={"base_url": llm.base_url})
        out_dir = tmp_path / "run"
        evaluate(
            "hotpotqa", tiny_hotpot.write(tmp_path / "tiny"), ["naive"], limit=4, out_dir=out_dir,
            settings=settings, cache=False,
        )  # fmt: skip
    results = [r for r in read_records(results_path(out_dir)) if r["type"] == "result"]
    assert len(results) == 4 and all(r["error"] is None for r in results)
    assert [r["metrics"]["em"] for r in results] == [1.0] * 4
    (eval_index,) = (p for p in (data_dir / "indexes").iterdir() if p.name.startswith("eval-hotpotqa-"))
    (eval_build,) = (eval_index / "builds").iterdir()
    assert on_server(chroma_url, eval_index.name) == {f"{eval_index.name}--{eval_build.name}--chunks": 8}


def test_a_chroma_url_nobody_answers_at_is_named_with_the_fix(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    settings = Settings(data_dir=tmp_path, chroma_url=url)
    with pytest.raises(ChromaUnreachableError) as info:
        index_corpus(SAMPLE_CORPUS, "sample", settings)
    message = str(info.value)
    assert f"Chroma server at {url} is not reachable" in message
    assert "chroma run --host 127.0.0.1" in message and "unset chroma_url" in message


def test_embedded_indexes_work_beside_a_server_in_one_process(
    chroma_url: str, minilm: MiniLM, tmp_path: Path
) -> None:
    """chromadb's clients write into the settings object they are given; one shared between a server
    client and an embedded one sent the embedded index to the server (found by running the suites in one
    process). Each client gets its own settings."""
    docs = load_corpus(MULTIHOP)[:1]
    served = IndexStore(tmp_path / "served", ChromaServer(chroma_url))
    served.build("one", docs, minilm)
    embedded = IndexStore(tmp_path / "embedded")
    built = embedded.build("one", docs, minilm).manifest
    assert (tmp_path / "embedded" / "one" / "current" / "chroma").is_dir()
    assert len(embedded.open("one", minilm).all_chunks()) == built.chunks
    assert len(served.open("one", minilm).all_chunks()) == built.chunks


class _TokenGate(BaseHTTPRequestHandler):
    """What a deployment puts in front of a Chroma server that checks no token itself (`chroma run` has no
    auth): a reverse proxy forwarding only requests that carry `Authorization: Bearer TOKEN`, refusing the
    others as Chroma's own token check does (401, AuthorizationError)."""

    upstream: str
    token: str
    seen: list[str]

    def _forward(self) -> None:
        sent = self.headers.get("Authorization", "")
        self.seen.append(sent)
        if sent != f"Bearer {self.token}":
            self._answer(401, b'{"error": "AuthorizationError", "message": "token required"}')
            return
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        kind = self.headers.get("Content-Type", "application/json")
        reply = httpx.request(
            self.command, self.upstream + self.path, content=body, headers={"Content-Type": kind}
        )
        self._answer(reply.status_code, reply.content)

    def _answer(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = do_PUT = do_DELETE = _forward

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the test reads what the gate saw from `seen`."""


@contextmanager
def token_gate(upstream: str, token: str) -> Iterator[tuple[str, list[str]]]:
    """(the gate's URL, the Authorization header of every request it got) while it runs."""
    seen: list[str] = []
    handler = type("Gate", (_TokenGate,), {"upstream": upstream, "token": token, "seen": seen})
    with serving(handler) as url:
        yield url, seen


def test_the_chroma_token_setting_reaches_a_server_that_requires_one(
    chroma_url: str, minilm: MiniLM, tmp_path: Path
) -> None:
    """The server client sent no credentials, so a Chroma server behind a token could not be used. With
    `chroma_token` every request carries it; without, the server's refusal is one line saying what to set."""
    docs = load_corpus(MULTIHOP)[:1]
    with token_gate(chroma_url, "gate-token-1") as (gate, seen):
        settings = Settings(data_dir=tmp_path / "with", chroma_url=gate, chroma_token="gate-token-1")
        built = index_store(settings).build("gated", docs, minilm).manifest
        assert on_server(chroma_url, "gated") == {f"gated--{built.build_id}--chunks": built.chunks}
        assert seen and set(seen) == {"Bearer gate-token-1"}
        without = Settings(data_dir=tmp_path / "without", chroma_url=gate)
        with pytest.raises(ChromaUnreachableError, match="HOPGRAPH_CHROMA_TOKEN") as refused:
            index_store(without).build("gated", docs, minilm)
        assert "\n" not in str(refused.value) and "gate-token-1" not in str(refused.value)
