"""What the evaluation harness costs a question when the LLM costs nothing: seconds per question and where
they go, stage by stage, for NaiveRAG and ChainRAG, optionally beside an earlier revision.

    .venv/bin/python -m benchmarks.harness_overhead [--limit 100] [--concurrency 1,8]
        [--methods naive,chainrag] [--before REV]

A user with a fast GPU server runs whole dev sets at high concurrency; then everything but the LLM is the
cost. Here the LLM is a stub OpenAI-compatible server on 127.0.0.1 (tests/openai_stub.py, in its own
process) that answers every call at once with "Yes" (so ChainRAG's decomposer falls back to the question
itself and its judge finds the first evidence sufficient: its shortest path). Each cell is a fresh
`hopgraph.evaluate.evaluate` of the first `--limit` MultiHop-RAG queries over the full-corpus evaluation
index (built first if missing; ChainRAG's sentence graph takes about 10 minutes the first time), response
cache off, checkpoints in SQLite in a temporary folder, with the run's resume machinery as it is, after a
warm-up evaluation of 2 questions in the same process (models loaded, index and checkpoint store open).

Printed per cell: wall seconds per question from the first question's start to the last one's end (the
index check before and the report after are not counted), the CPU seconds the harness's process spent per
question over the same span (every thread; the stub's are its own), which a machine shared with other work
moves less than the wall time, and the stage breakdown: time inside the query
embedder, the chunk search (its own embedding excluded), the LLM gateway (the HTTP round trip to the
stub), the checkpointer's writes and the results line (its fsync included), summed over all threads and
divided by the questions, so at concurrency above 1 the stages overlap and can sum to more than the wall
time. `--before REV` runs the same cells from a temporary git worktree of REV (its code imported through
PYTHONPATH; a stage a revision lacks is left out).

Measured 2026-11-27 with `--limit 30 --methods naive --before 865ee58` on the 2-core machine while another
LLM evaluation held most of both cores (docs/benchmarks.md, "Harness overhead"): CPU per question 54.7 ->
42.7 ms at concurrency 1, 55.9 -> 49.8 at 8, about 21 ms of it the query's embedding; the wall times of that
run measure the load, not the harness.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "multihop_rag"
STUB = (
    "import sys, time\n"
    "sys.path.insert(0, {root!r})\n"
    "from tests.openai_stub import OpenAIStub, serve\n"
    "with serve(OpenAIStub(reply=lambda prompt: 'Yes')) as stub:\n"
    "    print(stub.base_url, flush=True)\n"
    "    time.sleep(86400)\n"
)
# stage -> (module, class, method) timed; the search's own embedding is subtracted from it
STAGES = {
    "query embedding": [
        ("hopgraph.providers", "SentenceTransformerEmbedder", "embed"),
        ("hopgraph.providers", "OnnxEmbedder", "embed"),
    ],
    "chunk search": [("stores.index", "ChunkIndex", "search")],
    "LLM gateway": [("nodes.llm", "LLMGateway", "complete")],
    "checkpoint writes": [
        ("langgraph.checkpoint.sqlite", "SqliteSaver", "put"),
        ("langgraph.checkpoint.sqlite", "SqliteSaver", "put_writes"),
    ],
    "results line": [("evals.runner", "_ResultsFile", "append")],
}


class StageClock:
    """Seconds spent inside each instrumented method, over all threads; a call nested in another stage's
    (the embedder inside the search) is charged to the inner stage only."""

    def __init__(self) -> None:
        self.seconds: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._local = threading.local()

    def wrap(self, stage: str, function: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            outer = getattr(self._local, "inner", 0.0)
            self._local.inner = 0.0
            started = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                spent = time.perf_counter() - started
                with self._lock:
                    self.seconds[stage] += spent - self._local.inner
                self._local.inner = outer + spent

        return timed

    def install(self) -> list[str]:
        """Wrap every stage's methods that this tree has; the stages found."""
        import importlib

        found = []
        for stage, places in STAGES.items():
            for module_name, class_name, method in places:
                try:
                    owner = getattr(importlib.import_module(module_name), class_name)
                except (ImportError, AttributeError):
                    continue
                setattr(owner, method, self.wrap(stage, getattr(owner, method)))
                found.append(stage)
        return sorted(set(found))


def cell(method: str, limit: int, concurrency: int, base_url: str) -> dict[str, Any]:
    """One fresh evaluation in this process: wall seconds per question and seconds per stage per question."""
    from hopgraph.evaluate import evaluate
    from hopgraph.settings import Settings

    clock = StageClock()
    stages = clock.install()
    marks: list[tuple[float, float]] = []  # (wall, this process's CPU) seconds at each progress call
    with tempfile.TemporaryDirectory(prefix="hopgraph-harness-") as scratch:
        settings = Settings(
            llm="openai:stub",
            base_url=base_url,
            checkpointer=f"sqlite:///{Path(scratch) / 'checkpoints.sqlite'}",
        )

        def mark(*_: object) -> None:
            marks.append((time.perf_counter(), time.process_time()))

        for run, questions, progress in (("warm-up", 2, None), ("run", limit, mark)):
            # the warm-up loads the embedder, opens the index and the checkpoint store; then the clock starts
            clock.seconds.clear()
            evaluate(
                "multihop_rag",
                DATA,
                [method],
                limit=questions,
                out_dir=Path(scratch) / run,
                settings=settings,
                concurrency=concurrency,
                cache=False,
                progress=progress,
            )
    (wall, cpu) = ((last - first) / limit for first, last in zip(marks[0], marks[-1], strict=True))
    return {
        "wall_ms": 1000 * wall,
        "cpu_ms": 1000 * cpu,
        "stages_ms": {stage: 1000 * clock.seconds[stage] / limit for stage in stages},
    }


@contextmanager
def stub_server() -> Iterator[str]:
    """The stub LLM in its own process (its replies then take no time from the harness's threads)."""
    process = subprocess.Popen(
        [sys.executable, "-c", STUB.format(root=str(ROOT))], stdout=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None
        yield process.stdout.readline().strip()
    finally:
        process.kill()
        process.wait()


def run_tree(tree: Path, args: argparse.Namespace, base_url: str, method: str, concurrency: int) -> dict:
    """One cell in a fresh process importing `tree`'s code (this file's own cell, through PYTHONPATH)."""
    env = os.environ | {"PYTHONPATH": str(tree), "HOPGRAPH_API_KEY": "stub"}
    done = subprocess.run(
        [sys.executable, __file__, "--cell", method, str(args.limit), str(concurrency), base_url],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"{method} at concurrency {concurrency} in {tree} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--cell":
        method, limit, concurrency, base_url = sys.argv[2:6]
        print(json.dumps(cell(method, int(limit), int(concurrency), base_url)))
        return
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--limit", type=int, default=100, help="the first N MultiHop-RAG queries")
    parser.add_argument("--concurrency", default="1,8", help="questions at a time, comma-separated")
    parser.add_argument("--methods", default="naive,chainrag", help="methods, comma-separated")
    parser.add_argument("--before", help="a git revision to run beside this tree")
    args = parser.parse_args()
    levels = [int(level) for level in args.concurrency.split(",")]
    methods = [method for method in args.methods.split(",") if method]

    # here, not at the top: a cell runs this file under another tree's code, which may not have it
    from benchmarks.trees import checked_out

    with tempfile.TemporaryDirectory(prefix="hopgraph-harness-trees-") as scratch, ExitStack() as held:
        base_url = held.enter_context(stub_server())
        trees = {"after (this tree)": ROOT}
        if args.before:
            where = held.enter_context(checked_out(args.before, Path(scratch) / "before"))
            trees = {f"before ({args.before})": where, **trees}
        print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f} at the start")
        for method in methods:
            for concurrency in levels:
                for label, tree in trees.items():
                    result = run_tree(tree, args, base_url, method, concurrency)
                    stages = ", ".join(f"{s} {ms:.1f}" for s, ms in result["stages_ms"].items())
                    print(
                        f"{method:9} x{concurrency:<3} {label:24} {result['wall_ms']:7.1f} ms/question"
                        f" (CPU {result['cpu_ms']:.1f})"
                        f"  ({stages})",
                        flush=True,
                    )


if __name__ == "__main__":
    main()
