"""The Python API: build a method's graph, index a corpus, open the checkpoint store.

from hopgraph import build_graph, Settings
graph = build_graph("naive", Settings())
out = graph.invoke({"question": "..."}, {"configurable": {"thread_id": "q1"}}, context={"index": "mydocs"})
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph.state import CompiledStateGraph

from graphs.registry import METHODS, SENTENCE_GRAPH_METHODS, builder
from hopgraph.providers import ConfigError, Services
from hopgraph.settings import Settings
from stores.documents import Document
from stores.index import BuildResult, IndexParams
from stores.sentence_graph import SentenceGraphParams

_services: dict[str, Services] = {}
_savers: dict[str, BaseCheckpointSaver] = {}
_lock = threading.Lock()


def services_for(settings: Settings) -> Services:
    """The process-wide services for these settings: models load once however many graphs are built."""
    key = settings.model_dump_json()
    with _lock:
        if key not in _services:
            _services[key] = Services(settings)
        return _services[key]


def checkpointer_for(settings: Settings) -> BaseCheckpointSaver:
    """SQLite under the data directory by default; Postgres when `checkpointer` is a postgresql:// URL."""
    url = settings.checkpoint_url
    with _lock:
        if url not in _savers:
            _savers[url] = _open_saver(url)
        return _savers[url]


def _open_saver(url: str) -> BaseCheckpointSaver:
    if url.startswith("sqlite:///"):
        from langgraph.checkpoint.sqlite import SqliteSaver

        path = Path(url.removeprefix("sqlite:///"))
        path.parent.mkdir(parents=True, exist_ok=True)
        saver = SqliteSaver(sqlite3.connect(path, check_same_thread=False))
        saver.setup()
        return saver
    if url.startswith(("postgresql://", "postgres://")):
        try:
            from langgraph.checkpoint.postgres import PostgresSaver
            from psycopg import Connection
            from psycopg.rows import dict_row
        except ImportError as exc:
            raise ConfigError(
                "checkpointer is a Postgres URL but the postgres extra is missing: "
                "pip install -e '.[postgres]'."
            ) from exc
        conn = Connection.connect(url, autocommit=True, prepare_threshold=0, row_factory=dict_row)
        saver = PostgresSaver(conn)
        saver.setup()
        return saver
    raise ConfigError(f"checkpointer = {url!r}: use sqlite:///PATH or a postgresql:// URL.")


def build_graph(
    method: str, settings: Settings | None = None, *, checkpointer: BaseCheckpointSaver | bool = True
) -> CompiledStateGraph:
    """Compile a method's graph.

    checkpointer=True (default) persists every step to the configured store (SQLite by default), so each
    thread id can be inspected and replayed; False compiles without one (what the Studio server wants,
    since it brings its own); or pass any LangGraph checkpointer.
    """
    settings = settings or Settings()
    graph = builder(method)(services_for(settings))
    saver = checkpointer_for(settings) if checkpointer is True else (checkpointer or None)
    return graph.compile(checkpointer=saver, name=method)


def index_corpus(
    path: str | Path | list[Document],
    name: str,
    settings: Settings | None = None,
    progress: Callable[[str, int, int], None] | None = None,
    method: str | None = None,
) -> BuildResult:
    """Build (or resume, or confirm unchanged) the index NAME from a corpus path or documents.

    `method` adds what that method retrieves from beyond chunks (ChainRAG: the sentence graph), so one
    index serves the method and its baselines. Without one, a rebuild keeps what the current build of NAME
    has: re-indexing an edited corpus must not silently drop the sentence graph ChainRAG runs on.
    """
    settings = settings or Settings()
    services = services_for(settings)
    params = IndexParams(chunk_size=settings.chunk_size, chunk_overlap=settings.chunk_overlap)
    graph: SentenceGraphParams | None = None
    if method is not None:
        builder(method)  # an unknown method is an error here too, not a silently chunk-only index
        graph = SentenceGraphParams() if method in SENTENCE_GRAPH_METHODS else None
    elif (current := services.indexes.store.current_manifest(name)) and current.sentence_graph:
        graph = current.sentence_graph.params
    return services.indexes.store.build(
        name,
        path,
        services.embedder,
        params,
        progress=progress,
        sentence_graph=graph,
        nlp=services.nlp if graph else None,
    )


def methods() -> list[str]:
    return sorted(METHODS)
