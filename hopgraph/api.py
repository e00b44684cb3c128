"""The Python API: build a method's graph, index a corpus, open the checkpoint store.

from hopgraph import build_graph, Settings
graph = build_graph("naive", Settings())
out = graph.invoke({"question": "..."}, {"configurable": {"thread_id": "q1"}}, context={"index": "mydocs"})
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph.state import CompiledStateGraph

from graphs.registry import METHODS, builder, extras_for
from hopgraph.providers import ConfigError, Services
from hopgraph.settings import Settings
from stores.documents import Document
from stores.extra_registry import extra_named, in_build_order
from stores.index import BuildResult, IndexParams

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
    extras: Sequence[str] | None = None,
) -> BuildResult:
    """Build (or resume, or confirm unchanged) the index NAME from a corpus path or documents.

    `method` builds exactly the index extras that method retrieves from beyond chunks (graphs.registry;
    `naive` has none, so it drops any the index had), so one index serves the method and its baselines.
    Without one, a rebuild keeps the extras the current build of NAME has, with their parameters:
    re-indexing an edited corpus must not silently drop what a method runs on. `extras` adds extras by
    name (`hopgraph index --with NAME`); on an unchanged corpus only they are built.
    """
    settings = settings or Settings()
    services = services_for(settings)
    store = services.indexes.store
    params = IndexParams(
        chunk_size=settings.chunk_size,
        chunk_overlap=settings.chunk_overlap,
        embed_metadata=list(settings.embed_metadata),
    )
    wanted: dict[str, Any] = {}
    if method is not None:
        wanted = {extra: extra_named(extra).params_type() for extra in extras_for(method)}
    elif (current := store.current_manifest(name)) is not None:
        wanted = {extra: info.params for extra, info in current.extras.items()}
    for extra in extras or ():
        wanted.setdefault(extra, extra_named(extra).params_type())
    # an extra's models are named after the Services attribute that provides them; none loads unneeded
    models = {model: getattr(services, model) for extra in in_build_order(wanted) for model in extra.models}
    return store.build(name, path, services.embedder, params, progress=progress, extras=wanted, models=models)


def methods() -> list[str]:
    return sorted(METHODS)
