"""The Python API: build a method's graph, index a corpus, open the checkpoint store.

from hopgraph import build_graph, Settings
graph = build_graph("naive", Settings())
out = graph.invoke({"question": "..."}, {"configurable": {"thread_id": "q1"}}, context={"index": "mydocs"})
"""

from __future__ import annotations

import json
import logging
import statistics
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langgraph._internal._constants import CONFIG_KEY_DURABILITY  # a run's default, read by Pregel.stream
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.serde.event_hooks import register_serde_event_listener
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.graph.state import CompiledStateGraph
from pydantic import SecretStr

from graphs.registry import METHODS, builder, extras_for
from hopgraph.providers import ConfigError, Services
from hopgraph.settings import Settings
from stores.chunking import Chunk, chunk_corpus
from stores.documents import Document, load_corpus
from stores.errors import HopgraphError
from stores.extra_registry import extra_named, in_build_order
from stores.files import connect_sqlite
from stores.index import BuildResult, IndexParams, IndexStore
from stores.locks import taking_turns
from stores.question_graph import JOURNAL as EDGE_JOURNAL
from stores.question_graph import QUESTION_GRAPH, QuestionGraphParams, read_judgements
from stores.questions import JOURNAL, QUESTIONS, QuestionParams, read_journal, written_records
from stores.redaction import redact

_log = logging.getLogger("hopgraph")
_services: dict[str, Services] = {}
_open_dirs_named: set[Path] = set()  # data directories others can read, already named in this process
_savers: dict[str, BaseCheckpointSaver] = {}
_lock = threading.Lock()


def private_data_dir(settings: Settings) -> Path:
    """The data directory, created readable by its owner only (0700) if it is missing: it holds indexes of
    private corpora, every run's checkpoints and the response cache. One that exists and others can read
    (made by an older hopgraph, or by hand) is left as it is, since its owner may share it on purpose, and
    named once per process with the command that makes it private."""
    data_dir = settings.data_dir
    data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    mode = data_dir.stat().st_mode & 0o777
    if mode & 0o077 and data_dir not in _open_dirs_named:
        _open_dirs_named.add(data_dir)
        _log.warning(
            "hopgraph's data directory %s can be read by other users (mode %s): it holds your indexes, "
            "checkpoints and cached replies. Run `chmod 700 %s` unless you share it on purpose.",
            data_dir,
            oct(mode),
            data_dir,
        )
    return data_dir


def services_for(settings: Settings) -> Services:
    """The process-wide services for these settings: models load once however many graphs are built."""
    private_data_dir(settings)
    key = _identity(settings)
    with _lock:
        if key not in _services:
            _services[key] = Services(settings)
        return _services[key]


def _identity(settings: Settings) -> str:
    """The settings as a key, secrets included: a dump shows a SecretStr as stars, and two API keys must
    not share one set of services."""

    def revealed(value: Any) -> Any:
        if isinstance(value, SecretStr):
            return value.get_secret_value()
        if isinstance(value, dict):
            return {key: revealed(item) for key, item in value.items()}
        return value

    return json.dumps(revealed(settings.model_dump()), sort_keys=True, default=str)


def checkpointer_for(settings: Settings) -> BaseCheckpointSaver:
    """SQLite under the data directory by default; Postgres when `checkpointer` is a postgresql:// URL."""
    private_data_dir(settings)
    url = settings.checkpoint_url
    with _lock:
        if url not in _savers:
            _savers[url] = _open_saver(url)
        return _savers[url]


class UnsafeCheckpointError(HopgraphError):
    """A checkpoint row names a type hopgraph never writes: planted, or written by other software."""


_blocked = threading.local()  # the types the serializer refused while reading the current row


def _note_blocked(event: Mapping[str, Any]) -> None:
    """LangGraph's serde event listener: record a refused type for the row being read in this thread."""
    refused = getattr(_blocked, "types", None)
    if refused is not None and event["kind"] in ("msgpack_blocked", "msgpack_method_blocked"):
        refused.append(".".join(str(event[part]) for part in ("module", "name", "method") if part in event))


register_serde_event_listener(_note_blocked)


class _RefusingSerializer(JsonPlusSerializer):
    """LangGraph's serializer reviving only its built-in safe types, and refusing a row naming any other.

    The default rebuilds any importable type named in a row (`os.system` included), so anyone who can
    write a shared checkpoint database or a copied data folder could run code on `history`, `ask
    --thread-id` or a resumed `eval`. Strict msgpack (allowed_msgpack_modules=None) only hands such a type
    back as its raw arguments; hopgraph's states hold plain values only (dicts, lists, strings, numbers),
    so a row naming another type was not written by hopgraph, and reading on would show or resume a run
    someone else wrote: the row is refused in one line instead."""

    def _reviver(self, value: dict[str, Any]) -> Any:
        """A JSON row's objects: hopgraph writes msgpack rows of plain values, so a LangChain envelope (`lc`,
        a constructor or secret) in a JSON row was not written by hopgraph and is refused as the msgpack
        types above are, instead of reaching LangChain's loader."""
        if "lc" in value and "type" in value:
            refused = getattr(_blocked, "types", None)
            if refused is not None:
                refused.append(".".join(str(part) for part in value.get("id") or ("lc", value["type"])))
            return value
        return super()._reviver(value)

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        _blocked.types = []
        try:
            value = super().loads_typed(data)
        finally:
            refused, _blocked.types = _blocked.types, None
        if refused:
            raise UnsafeCheckpointError(
                f"A saved checkpoint names {', '.join(sorted(set(refused)))}, a type hopgraph never "
                "writes: it was planted or written by other software, and is not read. Use another thread "
                "id, or another checkpointer."
            )
        return value


def checkpoint_serializer() -> JsonPlusSerializer:
    """The serializer of hopgraph's checkpoint savers (SQLite and Postgres): see _RefusingSerializer."""
    return _RefusingSerializer(allowed_msgpack_modules=None)


def _open_saver(url: str) -> BaseCheckpointSaver:
    if url.startswith("sqlite:///"):
        from langgraph.checkpoint.sqlite import SqliteSaver

        path = Path(url.removeprefix("sqlite:///"))
        saver = SqliteSaver(connect_sqlite(path), serde=checkpoint_serializer())
        with taking_turns(path.parent):  # one process at a time sets a new database up
            saver.setup()  # WAL journal
        # In WAL mode, synchronous=NORMAL leaves a commit in the log without waiting for the disk: it survives
        # the process's death (a kill -9, which resuming needs) though not the machine's power loss, and a
        # step's writes cost 0.4 ms instead of 4 ms a commit here (a NaiveRAG question commits about ten).
        saver.conn.execute("PRAGMA synchronous=NORMAL")
        return saver
    if url.startswith(("postgresql://", "postgres://")):
        try:
            from langgraph.checkpoint.postgres import PostgresSaver
            from psycopg import Connection, OperationalError
            from psycopg.rows import dict_row
        except ImportError as exc:
            raise ConfigError(
                "checkpointer is a Postgres URL but the postgres extra is missing: "
                "pip install -e '.[postgres]'."
            ) from exc
        try:
            conn = Connection.connect(url, autocommit=True, prepare_threshold=0, row_factory=dict_row)
        except OperationalError as exc:
            raise ConfigError(
                f"checkpointer = {redact(url)!r}: cannot connect ({redact(str(exc).strip())}); start the "
                "server or correct the URL."
            ) from None
        saver = PostgresSaver(conn, serde=checkpoint_serializer())
        saver.setup()
        return saver
    raise ConfigError(f"checkpointer = {redact(url)!r}: use sqlite:///PATH or a postgresql:// URL.")


def build_graph(
    method: str, settings: Settings | None = None, *, checkpointer: BaseCheckpointSaver | bool = True
) -> CompiledStateGraph:
    """Compile a method's graph.

    checkpointer=True (default) persists every step to the configured store (SQLite by default), so each
    thread id can be inspected and replayed; False compiles without one (what the Studio server wants,
    since it brings its own); or pass any LangGraph checkpointer.

    With a checkpointer, runs default to `durability="sync"`: LangGraph's own default ("async") writes a
    step's checkpoint while the next step already runs, so a process killed then can lose finished steps
    and pay for their LLM calls again on resuming; "sync" writes each step before the next starts. A call's
    own `durability=` still chooses.
    """
    settings = settings or Settings()
    graph = builder(method)(services_for(settings))
    saver = checkpointer_for(settings) if checkpointer is True else (checkpointer or None)
    compiled = graph.compile(checkpointer=saver, name=method)
    if saver is None:
        return compiled
    return compiled.with_config(configurable={CONFIG_KEY_DURABILITY: "sync"})


def question_params(
    per_chunk: int | None = None, max_chunks: int | None = None, candidates: int | None = None
) -> dict[str, Any]:
    """`extra_params` for `index_corpus` / `question_cost` / `evaluate` from the questions and question-graph
    options a user gave (None: not given, so that extra keeps its defaults, or what the index has)."""
    params: dict[str, Any] = {}
    if per_chunk is not None or max_chunks is not None:
        defaults = QuestionParams()
        params[QUESTIONS.name] = QuestionParams(
            per_chunk=defaults.per_chunk if per_chunk is None else per_chunk,
            max_chunks=defaults.max_chunks if max_chunks is None else max_chunks,
        )
    if candidates is not None:
        params[QUESTION_GRAPH.name] = QuestionGraphParams(candidates=candidates)
    return params


def index_params(settings: Settings) -> IndexParams:
    """The chunking and metadata-line settings an index is built with."""
    return IndexParams(
        chunk_size=settings.chunk_size,
        chunk_overlap=settings.chunk_overlap,
        embed_metadata=list(settings.embed_metadata),
    )


def index_corpus(
    path: str | Path | list[Document],
    name: str,
    settings: Settings | None = None,
    progress: Callable[[str, int, int], None] | None = None,
    method: str | None = None,
    extras: Sequence[str] | None = None,
    extra_params: Mapping[str, Any] | None = None,
) -> BuildResult:
    """Build (or resume, or confirm unchanged) the index NAME from a corpus path or documents.

    `method` builds exactly the index extras that method retrieves from beyond chunks (graphs.registry;
    `naive` has none, so it drops any the index had), so one index serves the method and its baselines.
    Without one, a rebuild keeps the extras the current build of NAME has, with their parameters:
    re-indexing an edited corpus must not silently drop what a method runs on. `extras` adds extras by
    name (`hopgraph index --with NAME`); on an unchanged corpus only they are built. `extra_params` gives
    an extra of the build parameters other than its defaults (e.g. {"questions": QuestionParams(...)}).
    """
    settings = settings or Settings()
    services = services_for(settings)
    plan = _BuildPlan.of(settings, services, name, method, extras, extra_params)
    return services.indexes.store.build(
        name, path, services.embedder, plan.params, progress=progress, extras=plan.extras, models=plan.models
    )


@dataclass(frozen=True)
class _BuildPlan:
    """The arguments of IndexStore.build for an index of `name` as the settings and options ask: what both a
    build and its dry run (which must find the build a run would resume) are made from."""

    params: IndexParams
    extras: dict[str, Any]
    models: dict[str, Any]

    @classmethod
    def of(
        cls,
        settings: Settings,
        services: Services,
        name: str,
        method: str | None,
        extras: Sequence[str] | None,
        extra_params: Mapping[str, Any] | None,
    ) -> _BuildPlan:
        params = index_params(settings)
        wanted = _wanted_extras(services.indexes.store, name, method, extras, extra_params)
        # an extra's models are named after the Services attribute that provides them; none loads unneeded
        models = {
            model: getattr(services, model) for extra in in_build_order(wanted) for model in extra.models
        }
        return cls(params, wanted, models)

    def journal_directories(
        self, services: Services, name: str, docs: list[Document], extras: Sequence[str]
    ) -> dict[str, list[Path]]:
        """For each of `extras`, the folders whose journals a build would reuse: the current build's, and
        that of the build these arguments name when it was started and stopped (a killed or failed run)."""
        store = services.indexes.store
        interrupted = store.interrupted_build_directory(
            name, docs, services.embedder, self.params, self.extras, self.models
        )
        found: dict[str, list[Path]] = {}
        for extra in extras:
            current = store.extra_directory(name, extra)
            resumed = interrupted / extra_named(extra).directory if interrupted else None
            found[extra] = [folder for folder in (current, resumed) if folder is not None]
        return found


def _wanted_extras(
    store: IndexStore,
    name: str,
    method: str | None,
    extras: Sequence[str] | None,
    extra_params: Mapping[str, Any] | None,
) -> dict[str, Any]:
    """The extras a build of NAME holds, with their parameters (see `index_corpus`)."""
    wanted: dict[str, Any] = {}
    if method is not None:
        wanted = {extra: extra_named(extra).params_type() for extra in extras_for(method)}
    elif (current := store.current_manifest(name)) is not None:
        wanted = {extra: info.params for extra, info in current.extras.items()}
    for extra in extras or ():
        wanted.setdefault(extra, extra_named(extra).params_type())
    for extra in in_build_order(wanted):  # what they are built on, so its parameters can be given too
        wanted.setdefault(extra.name, extra.params_type())
    for extra, extra_param in (extra_params or {}).items():
        if extra not in wanted:
            raise ConfigError(
                f"Parameters were given for the {extra} extra, but this build of {name!r} does not include "
                f"it: add `--with {extra}`, or `--method METHOD` for a method that needs it."
            )
        wanted[extra] = extra_param
    return wanted


def _mean_time(seconds: Sequence[float], calls: int, concurrency: int) -> float | None:
    """`calls` at the measured mean time per call, `concurrency` at a time (None: nothing measured)."""
    return statistics.mean(seconds) * calls / concurrency if seconds else None


@dataclass(frozen=True)
class JudgeCost:
    """What building the `question_graph` extra would cost (part of a `--dry-run`'s QuestionCost).

    `questions`: the questions its edges are judged for (those written already, and `per_chunk` for each
    chunk still to be written: an upper bound, as the parser drops some); `calls`: at most one judge call
    per question and candidate chunk (1 + `candidates`), less `held`, the verdicts a build would reuse (the
    current build's and an interrupted run's); `warmup_seconds`: judge calls timed on the warm-up's
    questions against their own chunk.
    """

    params: QuestionGraphParams
    questions: int
    held: int
    calls: int
    concurrency: int
    warmup_seconds: list[float]

    @property
    def estimate_seconds(self) -> float | None:
        return _mean_time(self.warmup_seconds, self.calls, self.concurrency)


@dataclass(frozen=True)
class QuestionCost:
    """What building an index's `questions` extra would cost, measured before paying for it (`--dry-run`).

    `chunks`: the corpus's chunks; `asked_about`: those the build asks about (all, or `max_chunks`);
    `reused`: of those, chunks whose questions a build would reuse (not asked again); `calls`:
    LLM calls left to make, one per chunk; `warmup_seconds`: the measured calls; `sample`: what they wrote.
    `edges`: the question graph's judge calls, when the build includes that extra.
    """

    params: QuestionParams
    chunks: int
    asked_about: int
    reused: int
    calls: int
    concurrency: int
    warmup_seconds: list[float]
    sample: list[str]
    edges: JudgeCost | None = None

    @property
    def estimate_seconds(self) -> float | None:
        """The calls left at the warm-up's mean time per call, `concurrency` at a time (None: no warm-up)."""
        return _mean_time(self.warmup_seconds, self.calls, self.concurrency)


def question_cost(
    path: str | Path | list[Document],
    name: str,
    settings: Settings | None = None,
    *,
    method: str | None = None,
    extras: Sequence[str] | None = None,
    extra_params: Mapping[str, Any] | None = None,
    warmup: int = 2,
) -> QuestionCost:
    """Count the LLM calls a build's questions (and question graph) would make and time `warmup` of each
    kind; builds nothing.

    The chunks are cut as the build would cut them; chunks whose questions the index's current build
    holds are not counted (a build reuses them), nor those an interrupted run of this build journaled
    before it stopped (the next run resumes it). The warm-up's questions and verdicts are not kept: the
    build asks for them again (from the response cache when `llm_cache` is on).
    """
    settings = settings or Settings()
    services = services_for(settings)
    plan = _BuildPlan.of(settings, services, name, method, extras, extra_params)
    wanted = plan.extras
    if QUESTIONS.name not in wanted:
        raise ConfigError(
            f"A dry run measures the LLM work of the {QUESTIONS.name} extra, which this build of {name!r} "
            f"does not include: add `--method quote`, `--method biqog` or `--with {QUESTIONS.name}`."
        )
    params: QuestionParams = wanted[QUESTIONS.name]
    docs = path if isinstance(path, list) else load_corpus(path)
    chunks = chunk_corpus(docs, services.embedder.token_spans, settings.chunk_size, settings.chunk_overlap)
    asked_about = params.selected(chunks)
    folders = plan.journal_directories(services, name, docs, [QUESTIONS.name, QUESTION_GRAPH.name])
    written = written_records(
        asked_about, params.per_chunk, *(read_journal(folder / JOURNAL) for folder in folders[QUESTIONS.name])
    )
    todo = [chunk for chunk in asked_about if chunk.id not in written]
    writer = services.question_writer
    seconds: list[float] = []
    sample: list[tuple[Chunk, str]] = []
    for chunk in todo[:warmup]:
        started = time.perf_counter()
        questions, _ = writer.write(chunk.title, chunk.text, params.per_chunk)
        seconds.append(time.perf_counter() - started)
        sample.extend((chunk, question) for question in questions)
    edges = None
    if QUESTION_GRAPH.name in wanted:
        judged = [read_judgements(folder / EDGE_JOURNAL) for folder in folders[QUESTION_GRAPH.name]]
        edges = _judge_cost(
            wanted[QUESTION_GRAPH.name],
            sum(len(record.questions) for record in written.values()) + params.per_chunk * len(todo),
            len(set().union(*judged)),
            sample[:warmup],
            services,
        )
    return QuestionCost(
        params=params,
        chunks=len(chunks),
        asked_about=len(asked_about),
        reused=len(asked_about) - len(todo),
        calls=len(todo),
        concurrency=writer.concurrency,
        warmup_seconds=seconds,
        sample=[question for _, question in sample],
        edges=edges,
    )


def _judge_cost(
    params: QuestionGraphParams,
    questions: int,
    held: int,
    warmup: Sequence[tuple[Chunk, str]],
    services: Services,
) -> JudgeCost:
    """The question graph's judge calls for `questions` questions, less the `held` verdicts a build would
    reuse, timed on the `warmup` pairs."""
    judge = services.edge_judge
    seconds: list[float] = []
    for chunk, question in warmup:
        started = time.perf_counter()
        judge.judge(chunk.title, chunk.text, question)
        seconds.append(time.perf_counter() - started)
    return JudgeCost(
        params=params,
        questions=questions,
        held=held,
        calls=max(0, questions * (1 + params.candidates) - held),
        concurrency=judge.concurrency,
        warmup_seconds=seconds,
    )


def methods() -> list[str]:
    return sorted(METHODS)
