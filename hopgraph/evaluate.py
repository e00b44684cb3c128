"""Evaluate methods on a benchmark: the wiring of Settings, indexes and graphs into evals.runner.

    from hopgraph import Settings
    from hopgraph.evaluate import evaluate
    report = evaluate("hotpotqa", "../shared/data/hotpotqa", ["naive"], limit=20, out_dir="runs/hp20")

evals/ cannot import hopgraph/ (it sits below it), so everything that needs Settings lives here: the
index is built (or found unchanged) under a name derived from the corpus, the graphs are compiled with
the configured checkpointer, and the LLM response cache is switched on so that a resumed or repeated
evaluation does not pay for the same completion twice.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, fields
from pathlib import Path
from typing import Any

from langgraph.graph.state import CompiledStateGraph

from evals.datasets import DATASET_OPTIONS, Benchmark, DatasetName, load_benchmark
from evals.leaderboard import DEFAULT_BASELINE
from evals.report import write_report
from evals.runner import CHECKPOINT, STRUCTURED_OUTPUT, ProgressFn, recorded_run_name, run, writing
from graphs.prompt_versions import prompt_versions, shaped_roles
from graphs.registry import extras_for
from hopgraph.api import build_graph, index_corpus, index_params
from hopgraph.options import MethodVariant, parse_methods, typed_options
from hopgraph.providers import ConfigError, treehop_checkpoint_of
from hopgraph.settings import SECRET_FIELDS, RoleSettings, Settings
from nodes.edge_judge import ROLE as EDGE_JUDGE
from nodes.questions import ROLE as QUESTION_WRITER
from stores.documents import Document
from stores.extra_registry import in_build_order
from stores.index import BuildResult
from stores.redaction import redact

IndexProgress = Callable[[str, int, int], None]
# Settings naming a model that is not an LLM role's: the GGUF behind `local`, the embedder, the reranker.
_MODEL_FIELDS = ("local_model_path", "embedding_model", "embedding_backend", "reranker", "reranker_model")
# reranker = "embedding" was called "none" in run lines written before 2026-11-22: the same model.
_RENAMED_RERANKERS = {"none": "embedding"}


def index_name(benchmark: Benchmark, settings: Settings) -> str:
    """eval-DATASET-HASH, HASH from the corpus's document ids; with `-SETTINGS` after it, a hash of the
    index settings that differ from the defaults (`index_settings`).

    The same questions (and so the same corpus) map to the same index, which index_corpus then finds
    unchanged; a different --limit of a per-question-context dataset is a different corpus and gets its own.
    Runs that compare index settings (chunk sizes, the metadata line, an embedder) each keep their own
    index: under one name, interleaved runs would rebuild it at every switch, and two at once would wait
    on each other's builds. Defaults add nothing, so indexes built before 2026-11-26 keep their names.
    """
    ids = "\n".join(sorted(doc.id for doc in benchmark.corpus))
    name = f"eval-{benchmark.name}-{hashlib.sha256(ids.encode('utf-8')).hexdigest()[:10]}"
    chosen = index_settings(settings, benchmark.corpus)
    defaults = index_settings(Settings.model_construct(), benchmark.corpus)
    changed = {key: value for key, value in chosen.items() if value != defaults[key]}
    if not changed:
        return name
    digest = hashlib.sha256(json.dumps(changed, sort_keys=True).encode("utf-8")).hexdigest()[:8]
    return f"{name}-{digest}"


def index_settings(settings: Settings, corpus: Sequence[Document]) -> dict[str, Any]:
    """What decides an index's content: its chunking and metadata line as this corpus carries them (a field
    no document has changes nothing), and the embedder."""
    params = index_params(settings).carried_by(corpus)
    return asdict(params) | {
        "embedding_model": settings.embedding_model,
        "embedding_backend": settings.embedding_backend,
    }


def settings_summary(settings: Settings, built: BuildResult) -> dict[str, Any]:
    """What the run line records about models and settings, plus the index: every setting but the secret ones,
    and URLs (base_url, chroma_url, checkpointer) without their credentials or query: results files are
    shared."""
    public = _redacted(settings.model_dump(mode="json", exclude=SECRET_FIELDS))
    public["roles"] = {
        name: _redacted(role.model_dump(mode="json", exclude=SECRET_FIELDS))
        for name, role in settings.roles.items()
    }
    m = built.manifest
    public["index"] = {
        "name": m.name,
        "status": built.status,
        "documents": m.documents,
        "chunks": m.chunks,
        "embedding_model": m.embedding_model,
        "embedding_backend": m.embedding_backend,
        "chunk_size": m.params.chunk_size,
        "chunk_overlap": m.params.chunk_overlap,
        "embed_metadata": m.params.embed_metadata,
        "corpus_hash": m.corpus_hash,
        # how each extra was built (questions a chunk, judge candidates ...): they change what is retrieved
        "extras": {extra: asdict(info.params) for extra, info in m.extras.items()},
    }
    return public


def _redacted(value: Any) -> Any:
    """Every text in a dumped setting redacted, so no URL setting added later can slip through."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {key: _redacted(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_redacted(item) for item in value]
    return value


#: Methods that load trained weights, and where a run's settings find them.
CHECKPOINTS: dict[str, Callable[[Settings], Path]] = {"treehop": treehop_checkpoint_of}


def method_versions(method: str, settings: Settings) -> dict[str, str]:
    """What a method's answers depend on besides its context and the models, for its settings key: the
    text of its prompts (role -> hash, graphs.prompt_versions) and, for a method loading trained weights,
    their file (CHECKPOINT -> hash): a folder never holds answers of two checkpoints under one label; with
    structured output on, for a method with a shaped role or an index extra one writes, STRUCTURED_OUTPUT ->
    "on" (the shapes' text is in their roles' hashes), so answers with and without it never share a label."""
    versions = dict(prompt_versions(method))
    if settings.structured_output and (shaped_roles(method) or _written_by_shaped_roles(method)):
        versions[STRUCTURED_OUTPUT] = "on"
    if method in CHECKPOINTS:
        path = CHECKPOINTS[method](settings)
        if not path.is_file():
            raise ConfigError(f"{method}'s checkpoint {path} is not a file: set treehop_checkpoint to one.")
        versions[CHECKPOINT] = hashlib.sha256(path.read_bytes()).hexdigest()[:10]
    return versions


def _written_by_shaped_roles(method: str) -> bool:
    """Whether an index extra `method` retrieves from is written by an LLM role with a reply shape (QuOTE's
    and BiQOG's questions, BiQOG's edges): the index keeps the name it has either way, so the key must
    tell the answers apart."""
    models = {name for extra in in_build_order(extras_for(method)) for name in extra.models}
    return bool(models & {QUESTION_WRITER, EDGE_JUDGE})


def model_identity(summary: Mapping[str, Any]) -> dict[str, Any]:
    """The models a settings summary stands for: the default LLM (`llm`), each role's that differs
    (`llm.ROLE`), as MODEL or MODEL@BASE_URL, and the other models settings name.

    Read from this run's summary or from one an older run line recorded (the same fields), it is part of
    every result's settings key (evals.runner), so answers are reused only under the same models. Roles are
    resolved as Settings.role does, so an override that changes nothing changes no key.
    """
    settings = Settings.model_construct(
        llm=summary["llm"],
        base_url=summary["base_url"],
        roles={name: RoleSettings(**role) for name, role in summary["roles"].items()},
    )

    def llm_of(role: RoleSettings) -> str:
        return f"{role.llm}@{role.base_url}" if role.base_url else str(role.llm)

    default = llm_of(settings.role("default"))
    identity: dict[str, Any] = {"llm": default}
    for name in sorted(settings.roles):
        if llm_of(settings.role(name)) != default:
            identity[f"llm.{name}"] = llm_of(settings.role(name))
    identity.update({field: summary[field] for field in _MODEL_FIELDS})
    identity["reranker"] = _RENAMED_RERANKERS.get(identity["reranker"], identity["reranker"])
    return identity


def _variant_contexts(
    variants: Sequence[MethodVariant],
    graphs: Mapping[str, CompiledStateGraph],
    shared: Mapping[str, Any],
    implied: Mapping[str, Any] | None = None,
) -> dict[str, dict[str, Any]]:
    """Each variant's options: the shared ones its method declares, then the variant's own.

    A shared option no method declares is a typo, and an error; one only some declare (word_limit with
    naive and chainrag) goes to those that do. `implied` are the benchmark's own options
    (evals.datasets.DATASET_OPTIONS): applied under the shared ones where some method declares them, and
    silently left out where none does.
    """
    schemas = {v.label: graphs[v.method].builder.context_schema for v in variants}
    declared = {f.name for schema in schemas.values() for f in fields(schema)}
    shared = {**{k: v for k, v in (implied or {}).items() if k in declared}, **shared}
    unknown = sorted(set(shared) - declared)
    if unknown:
        raise ConfigError(
            f"option {', '.join(unknown)} is not a parameter of any method in this run; "
            f"they take: {', '.join(sorted(declared))}."
        )
    contexts = {}
    for v in variants:
        names = {f.name for f in fields(schemas[v.label])}
        mine = {k: value for k, value in shared.items() if k in names}
        contexts[v.label] = {
            **typed_options(schemas[v.label], mine, "option"),
            **typed_options(schemas[v.label], v.options, f"--methods entry {v.label!r}"),
        }
    return contexts


def evaluate(
    dataset: DatasetName,
    data_path: str | Path,
    methods: Sequence[str],
    *,
    limit: int | None = None,
    out_dir: str | Path,
    settings: Settings | None = None,
    concurrency: int = 1,
    context: Mapping[str, Any] | None = None,
    cache: bool = True,
    progress: ProgressFn | None = None,
    index_progress: IndexProgress | None = None,
    extra_params: Mapping[str, Any] | None = None,
    baseline: str = DEFAULT_BASELINE,
) -> Path:
    """Run `methods` on the first `limit` questions of `dataset`, then write report.md (returned) and plots.

    `methods` are method names or variants (`chainrag+integration=contexts`, see hopgraph.options);
    `context` holds runtime options given to every method that takes them (top_k, word_limit ...), as
    values or as text to convert to each method's declared type, over the dataset's own
    (evals.datasets.DATASET_OPTIONS: MultiHop-RAG runs with `unanswerable` on). `extra_params` gives index
    extras build parameters other than their defaults (hopgraph.api.question_params), as `hopgraph index`
    takes them.
    Re-running with the same `out_dir` resumes: the run name (and so every question's thread id) is the
    one recorded by the first run there; a fresh folder gets a new random suffix so it never picks up
    threads a deleted folder of the same name left in the checkpoint store.
    """
    variants = parse_methods(",".join(methods))
    settings = settings or Settings()
    if cache:
        settings = settings.model_copy(update={"llm_cache": True})
    out_dir = Path(out_dir)
    # Graphs and options first: a typo should fail before minutes of loading and indexing, not after.
    compiled = {v.method: build_graph(v.method, settings) for v in variants}
    contexts = _variant_contexts(variants, compiled, context or {}, DATASET_OPTIONS.get(dataset, {}))
    benchmark = load_benchmark(dataset, data_path, limit)
    name = index_name(benchmark, settings)
    # one index serves every method of the run: with every extra a method of the run retrieves from, and
    # whatever else the index already has, so a baseline run never drops an extra built earlier
    needed = sorted({extra for v in variants for extra in extras_for(v.method)})
    # the folder is held from here to its report, so a second run into it stops (naming this one) before it
    # builds or waits for the index; the runner takes the same lock again to write
    with writing(out_dir):
        built = index_corpus(
            benchmark.corpus,
            name,
            settings,
            progress=index_progress,
            extras=needed,
            extra_params=extra_params,
        )
        graph_of = {v.label: compiled[v.method] for v in variants}
        run(
            benchmark,
            [v.label for v in variants],
            graph_of.__getitem__,
            index=name,
            out_dir=out_dir,
            run_name=recorded_run_name(out_dir) or f"{out_dir.name}-{secrets.token_hex(3)}",
            context=contexts,
            concurrency=concurrency,
            limit=limit,
            progress=progress,
            summary=settings_summary(settings, built),
            model_identity=model_identity,
            prompts={v.label: method_versions(v.method, settings) for v in variants},
        )
        return write_report(out_dir, baseline=baseline)
