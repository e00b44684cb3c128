"""The batch runner: every method on every question of a benchmark, one result line per (method, question).

Built to be interrupted. Each question runs as its own LangGraph thread (id RUN:METHOD:KEY:QUESTION) on
the graph's checkpointer, and each finished question is appended to `results.jsonl` with a single write,
flush and fsync. Re-running the same command therefore continues where the last one stopped:
- questions with a result line are skipped (no line duplicated);
- a line cut short by a kill is truncated away and its question re-run (no line lost);
- a question whose thread was checkpointed mid-graph resumes from its last finished node, and one whose
  thread had finished but whose line was never written takes the thread's final state, so no LLM call
  is paid twice (the LLM response cache, switched on by the caller, covers the rest);
- a question that raised is recorded with its error and retried on the next run.

KEY is the method's settings key: a hash of the context it runs with (every field, defaults included), of
the models and of its prompts' text. Every result line carries it, so a re-run whose --set, method
defaults, models or prompt wording differ never takes an earlier answer or thread for its own; it is
refused instead of mixing two settings under one method label in one folder. One run writes a folder at
a time (`writing`): a second is refused, naming the first.

Nothing here knows about settings, models or graphs: the caller hands in `graph_for(method)`, the index
name, the per-method runtime context, how to read the models from a settings summary and the prompts'
hashes, so evals/ stays below hopgraph/ and graphs/ in the import order.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from contextlib import AbstractContextManager, ExitStack
from dataclasses import asdict, dataclass, fields, is_dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from threadpoolctl import threadpool_limits

from evals.datasets import Benchmark, QAExample
from evals.gold import GoldEvidence
from evals.metrics import (
    RetrievedSpan,
    dedupe_spans,
    exact_match,
    full_at_k,
    full_within_chars,
    gold_coverage,
    hop_prf,
    multihop_rag_official,
    recall_at_k,
    recall_within_chars,
    token_f1,
)
from evals.steps import record_steps, thread_steps
from prompts.answer import UNANSWERABLE
from stores.errors import HopgraphError
from stores.files import open_appending
from stores.locks import LOCK_FILE, writer_lock
from stores.redaction import redact

if TYPE_CHECKING:  # graphs are handed in; importing LangGraph here would only slow `import evals`
    from langgraph.graph.state import CompiledStateGraph

RESULTS_FILE = "results.jsonl"
#: Cut-offs of Recall@k / Full@k: 2 and 5 are BiQOG's, 10 IR-CoT's fan-out.
KS = (2, 5, 10)
#: Reading budgets in characters for Recall / Full at equal budget, the cross-method comparison: methods
#: read units of very different sizes (a chunk holds ~430 characters, a sentence ~130).
BUDGETS = (1000, 2000, 4000)
#: MultiHop-RAG's own retrieval metrics (evals.metrics.multihop_rag_official), by their names.
OFFICIAL_METRICS = ("hits@4", "hits@10", "map@10", "mrr@10")
#: Usage counters summed over a question's LLM calls (see nodes.state.LLMUsage).
_USAGE_KEYS = (
    "calls",
    "prompt_tokens",
    "cached_tokens",
    "completion_tokens",
    "cache_hits",
    "echoes",
    "structured_refused",
    "seconds",
)

Record = dict[str, Any]
ResultKey = tuple[str, str, str]  # (dataset, method, question id)
#: The models a settings summary stands for (see `run`), as flat name -> value pairs.
ModelIdentity = Callable[[Mapping[str, Any]], Mapping[str, Any]]


class ResultsError(HopgraphError):
    """A results file that cannot be used: corrupt, or holding a method's answers under other settings."""


@dataclass(frozen=True)
class MethodScore:
    """One method's running scores, for a progress display: answered and failed counts, mean EM and F1."""

    answered: int
    failed: int
    em: float
    f1: float


#: progress(done, total, scores per method); `done` counts failed questions too, since they were attempted.
ProgressFn = Callable[[int, int, Mapping[str, MethodScore]], None]


CHECKPOINT = "checkpoint"
"""The entry of a method's `prompts` that names the trained weights it loads (TreeHop's update), by a hash
of their file, rather than a prompt role: answers of two checkpoints are two measurements, as two wordings
are."""

STRUCTURED_OUTPUT = "structured_output"
"""The entry of a method's `prompts` present when its roles with a reply shape were asked for it (the
`structured_output` setting): constrained replies are another measurement, as another wording is."""


@dataclass(frozen=True)
class MethodSettings:
    """What a method's answers depend on: the context it ran with (defaults included), the models, and
    the prompts (role -> hash of its text, graphs.prompt_versions, CHECKPOINT for a method with trained
    weights, STRUCTURED_OUTPUT when replies were asked for their shape; None where a run did not record
    them: runs before 2026-11-26, or a caller of `run` that passes none)."""

    context: Mapping[str, Any]
    models: Mapping[str, Any]
    prompts: Mapping[str, str] | None = None

    @property
    def key(self) -> str:
        """A short hash of them, in result lines and thread ids: equal settings, equal key (the prompts
        enter only when recorded, so keys made before they were are unchanged)."""
        parts: dict[str, Any] = {"context": self.context, "models": self.models}
        if self.prompts is not None:
            parts["prompts"] = self.prompts
        text = json.dumps(parts, sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:10]


def results_path(out_dir: str | Path) -> Path:
    return Path(out_dir) / RESULTS_FILE


def writing(out_dir: str | Path) -> AbstractContextManager[None]:
    """Hold the results folder `out_dir` for one run (stores.locks): a second run writing it meanwhile is
    refused with a LockedError naming this one's pid, host, command and start, rather than made to wait."""
    out = Path(out_dir)
    return writer_lock(
        out / LOCK_FILE,
        f"results folder {out}",
        wait=False,
        advice="wait for it to end, or use another --out",
    )


def _complete_lines(data: bytes, path: Path) -> list[Record]:
    """The records of every newline-terminated line; text after the last newline is a write cut short."""
    records: list[Record] = []
    for lineno, line in enumerate(data[: data.rfind(b"\n") + 1].splitlines(), start=1):
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError as e:
            raise ResultsError(f"{path}: line {lineno} is not valid JSON ({e.msg}); fix or remove it") from e
    return records


def read_records(path: str | Path) -> list[Record]:
    """Every record of a results file in order, ignoring a partial last line (safe while a run writes)."""
    path = Path(path)
    try:
        return _complete_lines(path.read_bytes(), path)
    except FileNotFoundError as e:
        raise ResultsError(f"{path}: no such file; run `hopgraph eval ... --out {path.parent}` first") from e


def latest_results(records: Iterable[Record]) -> dict[ResultKey, Record]:
    """The last result line of each (dataset, method, question): its outcome after every retry.

    Earlier lines of a key can only be failures, since a question with a successful line is never re-run.
    """
    return {(r["dataset"], r["method"], r["question_id"]): r for r in records if r.get("type") == "result"}


def answered_results(out_dir: str | Path) -> dict[ResultKey, Record]:
    """The latest result line of each (dataset, method, question) in the results folder `out_dir`, where it
    was answered: what every comparison over a finished run reads. A question that failed every time has
    only lines with an `error` (no prediction, metrics or evidence) and is left out."""
    return {
        key: record
        for key, record in latest_results(read_records(results_path(out_dir))).items()
        if record["error"] is None
    }


def answered_by_method(out_dir: str | Path) -> dict[str, list[Record]]:
    """Each method's latest answered records in the results folder `out_dir`, in question-id order: what a
    benchmark reading one run, method by method, reads."""
    methods: dict[str, list[Record]] = {}
    for record in answered_results(out_dir).values():
        methods.setdefault(record["method"], []).append(record)
    for records in methods.values():
        records.sort(key=lambda record: str(record["question_id"]))
    return dict(sorted(methods.items()))


def recorded_run_name(out_dir: str | Path) -> str | None:
    """The run name the first run in `out_dir` chose, so a resumed run finds its checkpointed threads."""
    path = results_path(out_dir)
    if not path.is_file():
        return None
    runs = [r for r in read_records(path) if r.get("type") == "run"]
    return str(runs[0]["run_name"]) if runs else None


def _ran_with(run_line: Record, method: str, model_identity: ModelIdentity) -> MethodSettings:
    """The settings `method` had in the start a run line records. Lines written before settings keys
    existed carry no `models`: theirs are read from the settings summary the line does carry; lines
    written before prompts were recorded carry none."""
    models = run_line["models"] if "models" in run_line else model_identity(run_line["settings"])
    return MethodSettings(run_line["context"][method], models, run_line.get("prompts", {}).get(method))


def _answered_settings(
    records: Iterable[Record], model_identity: ModelIdentity
) -> dict[tuple[str, str], dict[str, MethodSettings]]:
    """(dataset, method) -> settings key -> settings, over the answered result lines of a results file.

    A result line belongs to the start whose run line precedes it (one run at a time writes to a file: its
    run line, then its results), which is how a line written before settings keys existed gets its key.
    """
    found: dict[tuple[str, str], dict[str, MethodSettings]] = {}
    run_line: Record = {}
    for record in records:
        if record.get("type") == "run":
            run_line = record
        elif record.get("type") == "result" and record["error"] is None:
            ran = _ran_with(run_line, record["method"], model_identity)
            key = record.get("settings_key", ran.key)
            found.setdefault((record["dataset"], record["method"]), {})[key] = ran
    return found


def _thread_prefixes(
    records: Iterable[Record],
    dataset: str,
    run_name: str,
    now: Mapping[str, MethodSettings],
    model_identity: ModelIdentity,
) -> dict[str, str]:
    """method -> RUN:METHOD:KEY, the start of its questions' thread ids.

    A start from before settings keys named its threads RUN:METHOD:QUESTION; a method with the settings of
    the last such start that ran it keeps those names, so a question that start left mid-graph continues.
    """
    unkeyed = {
        method: _ran_with(r, method, model_identity).key
        for r in records
        if r.get("type") == "run" and r["dataset"] == dataset and "models" not in r
        for method in r["methods"]
    }
    return {
        method: f"{run_name}:{method}"
        if unkeyed.get(method) == settings.key
        else f"{run_name}:{method}:{settings.key}"
        for method, settings in now.items()
    }


def _refuse_mixed_settings(
    records: Iterable[Record],
    dataset: str,
    now: Mapping[str, MethodSettings],
    model_identity: ModelIdentity,
    out_dir: Path,
) -> None:
    """Raise ResultsError if a method has answers in the file under settings other than it has now."""
    answered = _answered_settings(records, model_identity)
    for method, settings in now.items():
        for key, before in answered.get((dataset, method), {}).items():
            if key != settings.key:
                raise ResultsError(_mixed_settings_message(out_dir, method, before, settings))


_UNSET = object()


def _text(value: Any) -> str:
    """A setting's value as it would be typed in --set or a variant label."""
    if value is _UNSET:
        return "unset"
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _changes(before: Mapping[str, Any], now: Mapping[str, Any]) -> list[tuple[str, Any, Any]]:
    """(name, before, now) of every setting that differs; one only a side has (a new context field) is
    _UNSET on the other."""
    return [
        (name, before.get(name, _UNSET), now.get(name, _UNSET))
        for name in sorted(set(before) | set(now))
        if before.get(name, _UNSET) != now.get(name, _UNSET)
    ]


def _mixed_settings_message(out_dir: Path, method: str, before: MethodSettings, now: MethodSettings) -> str:
    """Why a method's results cannot go into `out_dir`, and how to run it anyway: what changed (and to
    what), then another folder, or a variant label holding the new context values (when only they changed;
    the index follows the questions, so it cannot be set in a label).

    Answers written before runs recorded their prompts may come from any earlier wording: a folder of
    them stays readable (`hopgraph report`), but new answers of that method go to another folder."""
    if before.prompts is None and now.prompts is not None:
        return (
            f"{out_dir} holds results of {method!r} written before run folders recorded the prompts "
            "(hopgraph before 2026-11-26), so the prompt wording they were made with is unknown and new "
            f"answers are not added beside them: use another --out (`hopgraph report {out_dir}` still reads "
            "this one)"
        )
    context, models = _changes(before.context, now.context), _changes(before.models, now.models)
    prompts = [
        (role if role in (CHECKPOINT, STRUCTURED_OUTPUT) else f"prompts.{role}", old, new)
        for role, old, new in _changes(before.prompts or {}, now.prompts or {})
    ]
    changed = ", ".join(
        f"{name}={_text(old)} (now {_text(new)})" for name, old, new in context + models + prompts
    )
    advice = "use another --out"
    variant = [f"{name}={_text(new)}" for name, _, new in context if name != "index"]
    if variant and len(variant) == len(context) and not models and not prompts:
        advice += f", or a variant label such as {'+'.join([method, *variant])}"
    return f"{out_dir} already holds results of {method!r} with {changed}: {advice}"


def evidence_spans(evidence: Sequence[Mapping[str, Any]]) -> list[RetrievedSpan]:
    """The spans a method's evidence items (state dicts, or as a result line stores them) cover."""
    return [RetrievedSpan(e["doc_id"], e.get("char_start"), e.get("char_end"), e["text"]) for e in evidence]


def stored_gold(record: Record) -> list[GoldEvidence]:
    """The located gold evidence a result line carries."""
    return [GoldEvidence(**g) for g in record["gold_evidence"]]


def ranked_evidence(
    evidence: Sequence[Mapping[str, Any]], read: Sequence[str] | None
) -> list[Mapping[str, Any]]:
    """The evidence in the order the method ranked it: the passages its reader read, in the order read
    (`read`, their ids), then any others in the state's order (hop by hop, as they were found).

    A method that reranks its final set (BiQOG) is scored in its own ranking, not in the order of the hops
    that collected the passages; without `read` (a reader that does not record it, or a result written
    before it was recorded) the state's order is the ranking.
    """
    if not read:
        return list(evidence)
    position = {item_id: i for i, item_id in enumerate(dict.fromkeys(read))}  # first place of each id
    first = sorted((e for e in evidence if e["id"] in position), key=lambda e: position[e["id"]])
    return first + [e for e in evidence if e["id"] not in position]


def score(
    answers: Sequence[str],
    gold: Sequence[GoldEvidence],
    prediction: str,
    evidence: Sequence[Mapping[str, Any]],
    *,
    read: Sequence[str] | None = None,
    outcome: str | None = None,
    stats: Mapping[str, float] | None = None,
) -> dict[str, Any]:
    """Every per-question metric of one answer and the evidence behind it (docs/scoring.md states each rule).

    - EM / F1 against the gold answers; a refusal the method kept on purpose (`outcome` "unanswerable",
      i.e. run with `unanswerable`) is scored as the canonical refusal whatever its wording, the raw reply
      staying in the record for display.
    - Retrieval over the evidence in the method's ranking (`ranked_evidence`): Recall / Full in the first
      k units, in the first B characters read and over everything read (`@read`), the share of gold
      characters read, and MultiHop-RAG's own Hits@4 / Hits@10 / MAP@10 / MRR@10. Each is None
      when the question has no gold evidence (MultiHop-RAG null queries), which keeps those questions out
      of retrieval averages while they still count for EM and F1.
    - Hop-conditioned P / R / F1 with evidence grouped by its `hop`; `hops_used` is the number of
      retrieval rounds the method ran (its `retrieval_rounds` statistic when it reports one, so a last
      round that found nothing new still counts), else the last hop its evidence came from.
    """
    scored = UNANSWERABLE if outcome == "unanswerable" else prediction
    ranked = ranked_evidence(evidence, read)
    spans = evidence_spans(ranked)
    last_hop = max((int(e["hop"]) for e in evidence), default=0)
    hops_used = max(last_hop, int((stats or {}).get("retrieval_rounds", 0)))
    per_hop = [
        [s for s, e in zip(spans, ranked, strict=True) if e["hop"] == r] for r in range(1, last_hop + 1)
    ]
    metrics: dict[str, Any] = {"em": exact_match(scored, answers), "f1": token_f1(scored, answers)}
    for k in KS:
        metrics[f"recall@{k}"] = recall_at_k(gold, spans, k)
        metrics[f"full@{k}"] = full_at_k(gold, spans, k)
    for chars in BUDGETS:
        metrics[f"recall@{chars}ch"] = recall_within_chars(gold, spans, chars)
        metrics[f"full@{chars}ch"] = full_within_chars(gold, spans, chars)
    everything = max(len(spans), 1)
    metrics["recall@read"] = recall_at_k(gold, spans, everything)
    metrics["full@read"] = full_at_k(gold, spans, everything)
    metrics["coverage"] = gold_coverage(gold, spans)
    official = multihop_rag_official([g.text for g in gold], [s.text for s in dedupe_spans(spans)])
    metrics.update(official or dict.fromkeys(OFFICIAL_METRICS))
    metrics["hop_prf"] = [list(v) for v in hop_prf(gold, per_hop + [[]] * (hops_used - last_hop))]
    metrics["hops_used"] = hops_used
    return metrics


def rescore(record: Record) -> Record:
    """An answered result with its metrics recomputed from the gold and the evidence it stores.

    Lets a report follow the current scoring rules without re-running any method: every result line keeps
    the gold answers, the located gold evidence, the retrieved spans, the reader's order and the outcome
    it was scored on.
    """
    metrics = score(
        record["gold_answers"],
        stored_gold(record),
        record["prediction"],
        record["evidence"],
        read=record.get("read"),
        outcome=record.get("outcome"),
        stats=record.get("stats"),
    )
    return {**record, "metrics": metrics}


def _usage_totals(usage: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    totals = {key: sum(u.get(key, 0) for u in usage) for key in _USAGE_KEYS}
    totals["seconds"] = round(totals["seconds"], 4)
    return totals


def _method_context(graph: CompiledStateGraph, index: str, options: Mapping[str, Any]) -> dict[str, Any]:
    """The runtime context a method gets: the index plus the caller's options its context_schema declares.

    Options are shared across methods (e.g. top_k), but a method whose schema lacks one would reject the
    whole context; dropping it per method keeps the run going. For a dataclass schema (what the methods
    use) the result holds every field, defaults included, so the run line records the k, mode and limits
    each method really ran with, not only those the caller changed. A field marked `added_later`
    (nodes.context.parameter) is left out at its default, so adding a switch to a method does not change
    the settings key of the runs made before it.
    """
    wanted = {**options, "index": index}
    schema = graph.builder.context_schema
    if schema is None:
        return {}
    if is_dataclass(schema):
        names = {f.name for f in fields(schema)}
        context = asdict(schema(**{k: v for k, v in wanted.items() if k in names}))
        unset = {
            f.name for f in fields(schema) if f.metadata.get("added_later") and context[f.name] == f.default
        }
        return {name: value for name, value in context.items() if name not in unset}
    return wanted


@dataclass(frozen=True)
class _Job:
    method: str
    example: QAExample
    thread_id: str
    settings_key: str


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _final_state(
    graph: CompiledStateGraph, job: _Job, context: Mapping[str, Any], config: dict[str, Any]
) -> tuple[Mapping[str, Any], str]:
    """Run (or resume, or reread) the question's thread; returns its final values and how they were had.

    Checkpointed runs write each step before the next starts (durability "sync"), so a kill loses at most
    the step under way: LangGraph's default writes it while the next step runs."""
    ctx = context or None
    durability = "sync" if graph.checkpointer is not None else None
    if graph.checkpointer is not None:
        snapshot = graph.get_state(config)
        if snapshot.values and snapshot.next:
            return graph.invoke(None, config, context=ctx, durability=durability), "resumed"
        if snapshot.values:
            return snapshot.values, "checkpoint"
    question = {"question": job.example.question}
    return graph.invoke(question, config, context=ctx, durability=durability), "fresh"


def _attempt(
    graph: CompiledStateGraph, job: _Job, context: Mapping[str, Any], run_name: str, index: str
) -> Record:
    """One question on one method as a result record; an Exception becomes the record's `error`.

    BaseExceptions (KeyboardInterrupt, SystemExit) are not caught: they stop the run, and the question is
    picked up from its checkpoint next time.
    """
    ex = job.example
    record: Record = {
        "type": "result",
        "run_name": run_name,
        "method": job.method,
        "dataset": ex.dataset,
        "question_id": ex.id,
        "question": ex.question,
        "question_type": ex.question_type,
        "hops": ex.hops,
        "answerable": ex.answerable,
        "gold_answers": list(ex.answers),
        "gold_evidence": [asdict(g) for g in ex.evidence],
        "thread_id": job.thread_id,
        "settings_key": job.settings_key,
    }
    metadata = {"method": job.method, "index": index, "run": run_name, "question_id": ex.id}
    config: dict[str, Any] = {"configurable": {"thread_id": job.thread_id}, "metadata": metadata}
    started = time.perf_counter()
    try:
        values, source = _final_state(graph, job, context, config)
        prediction = str(values.get("answer") or "")
        evidence = list(values.get("evidence") or [])
        read = list(values.get("read") or [])
        outcome = values.get("answer_outcome")
        stats = dict(values.get("stats") or {})
        record.update(
            prediction=prediction,
            evidence=evidence,
            read=read,
            metrics=score(
                ex.answers, ex.evidence, prediction, evidence, read=read, outcome=outcome, stats=stats
            ),
            llm=_usage_totals(values.get("usage") or []),
            outcome=outcome,
            answer_sentence=values.get("answer_sentence"),
            answer_shortening=values.get("answer_shortening"),
            refusal_check=values.get("refusal_check"),
            fallbacks=list(values.get("fallbacks") or []),
            stats=stats,
            steps=record_steps(thread_steps(graph, config), evidence) if graph.checkpointer else [],
            source=source,
            error=None,
        )
    except Exception as exc:  # any failure of one question is recorded; the run goes on
        error = redact(f"{type(exc).__name__}: {exc}")  # results get shared: no URL credentials in them
        record.update(
            prediction=None, evidence=[], read=[], metrics=None, llm=None, steps=[], source=None, error=error
        )
    record.update(seconds=round(time.perf_counter() - started, 3), finished_at=_now())
    return record


class _ResultsFile:
    """results.jsonl opened for appending, exclusively, after a cut-short last line has been truncated."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._held = ExitStack()
        self._held.enter_context(writing(path.parent))
        try:
            self._file: IO[bytes] = open_appending(path)
            self._held.callback(self._file.close)
            self._file.seek(0)
            data = self._file.read()
            self.records = _complete_lines(data, path)
        except BaseException:
            self._held.close()
            raise
        keep = data.rfind(b"\n") + 1
        if keep < len(data):
            self._file.truncate(keep)
            os.fsync(self._file.fileno())

    def append(self, record: Record) -> None:
        """One write, then flush and fsync: a kill leaves either the whole line or a cut-short tail."""
        self._file.write((json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8"))
        self._file.flush()
        os.fsync(self._file.fileno())

    def close(self) -> None:
        self._held.close()  # the file, then the folder's lock


class _Scores:
    """Running EM/F1 per method over answered questions (earlier runs' included)."""

    def __init__(self, methods: Sequence[str]) -> None:
        self._sums = {m: [0, 0, 0.0, 0.0] for m in methods}  # answered, failed, EM sum, F1 sum

    def add(self, record: Record) -> None:
        s = self._sums[record["method"]]
        if record["error"] is None:
            s[0] += 1
            s[2] += record["metrics"]["em"]
            s[3] += record["metrics"]["f1"]
        else:
            s[1] += 1

    def snapshot(self) -> dict[str, MethodScore]:
        return {
            m: MethodScore(int(n), int(failed), em / n if n else 0.0, f1 / n if n else 0.0)
            for m, (n, failed, em, f1) in self._sums.items()
        }


def run(
    benchmark: Benchmark,
    methods: Sequence[str],
    graph_for: Callable[[str], CompiledStateGraph],
    *,
    index: str,
    out_dir: str | Path,
    run_name: str,
    context: Mapping[str, Mapping[str, Any]],
    concurrency: int = 1,
    limit: int | None = None,
    progress: ProgressFn | None = None,
    summary: Mapping[str, Any] | None = None,
    model_identity: ModelIdentity = dict,
    prompts: Mapping[str, Mapping[str, str]] | None = None,
) -> Path:
    """Run `methods` on the benchmark's first `limit` questions, appending to OUT_DIR/results.jsonl.

    `context` maps a method to its runtime options (top_k, retrieval_mode ...); `index` is added to each.
    `summary` (models, settings, index build) goes into the run line so the report can show what was run;
    `model_identity` picks from a summary what identifies the models (default: all of it), which with each
    method's context and its `prompts` (role -> hash of its text, graphs.prompt_versions; None: not
    recorded) makes its settings key. Raises ResultsError, before running any question, if OUT_DIR
    holds answers of a method under other settings. Questions run `concurrency` at a time, question by
    question across methods, so running averages of all methods stay comparable while the run is under
    way. Returns the results file.
    """
    if not methods:
        raise ValueError("no methods to run")
    if concurrency < 1:
        raise ValueError(f"concurrency must be at least 1, got {concurrency}")
    examples = benchmark.examples[:limit] if limit is not None else benchmark.examples
    graphs = {m: graph_for(m) for m in methods}
    contexts = {m: _method_context(graphs[m], index, context.get(m, {})) for m in methods}
    models = dict(model_identity(summary or {}))
    settings = {
        m: MethodSettings(contexts[m], models, None if prompts is None else dict(prompts[m])) for m in methods
    }
    results = _ResultsFile(results_path(out_dir))
    try:
        _refuse_mixed_settings(results.records, benchmark.name, settings, model_identity, Path(out_dir))
        threads = _thread_prefixes(results.records, benchmark.name, run_name, settings, model_identity)
        previous = latest_results(results.records)
        scores = _Scores(methods)
        todo: list[_Job] = []
        for ex in examples:
            for m in methods:
                earlier = previous.get((benchmark.name, m, ex.id))
                if earlier is not None and earlier["error"] is None:
                    scores.add(earlier)
                else:
                    todo.append(_Job(m, ex, f"{threads[m]}:{ex.id}", settings[m].key))
        total = len(examples) * len(methods)
        done = total - len(todo)
        results.append(
            {
                "type": "run",
                "run_name": run_name,
                "dataset": benchmark.name,
                "methods": list(methods),
                "limit": limit,
                "questions": len(examples),
                "already_done": done,
                "index": index,
                "context": contexts,
                "models": models,
                **({} if prompts is None else {"prompts": {m: dict(prompts[m]) for m in methods}}),
                "settings": dict(summary or {}),
                "concurrency": concurrency,
                "started_at": _now(),
            }
        )
        if progress:
            progress(done, total, scores.snapshot())
        # numpy's products on one thread each: the questions run side by side, and OpenBLAS splitting
        # a question's product against every chunk over its own threads, which then spin, cost 11 ms of
        # CPU against 1 ms for that one product on the loaded 2-core machine (78 ms against 1 ms wall)
        with threadpool_limits(limits=1, user_api="blas"):
            executor = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="hopgraph-eval")
            pending = {
                executor.submit(_attempt, graphs[j.method], j, contexts[j.method], run_name, index)
                for j in todo
            }

            def record(future: Future[Record]) -> None:
                nonlocal done
                pending.discard(future)
                results.append(future.result())
                scores.add(future.result())
                done += 1
                if progress:
                    progress(done, total, scores.snapshot())

            try:
                for future in as_completed(pending.copy()):
                    record(future)
            except BaseException:
                # Interrupted (Ctrl-C, or a question raised KeyboardInterrupt): start nothing new, let the
                # questions in flight finish rather than run on beside the next run, and write those that
                # did, so their real time is kept. A second Ctrl-C stops the wait; what it leaves unwritten is
                # in the checkpoints, where the next run finds it.
                executor.shutdown(wait=True, cancel_futures=True)
                for future in list(pending):
                    if not future.cancelled() and future.exception() is None:
                        record(future)
                raise
            executor.shutdown()
    finally:
        results.close()
    return results.path
