"""What the evaluation harness costs a question when the LLM costs nothing: seconds per question and where
they go, stage by stage, for NaiveRAG and ChainRAG, optionally beside an earlier revision.

    .venv/bin/python -m benchmarks.harness_overhead [--limit 100] [--concurrency 1,8]
        [--methods naive,chainrag] [--before REV] [--kill-check]

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

With `--kill-check` it times nothing: each cell is a `hopgraph eval` process killed with SIGKILL once half its
questions are written and then run again, checked for one whole result line per question and for no prompt
sent twice beyond the questions in flight at the kill.

Measured 2026-11-27 with `--limit 30 --methods naive --before 865ee58` on the 2-core machine while another
LLM evaluation held most of both cores (docs/benchmarks.md, "Harness overhead"): CPU per question 54.7 ->
42.7 ms at concurrency 1, 55.9 -> 49.8 at 8, about 21 ms of it the query's embedding; the wall times of that
run measure the load, not the harness.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
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
    "import hashlib, os, sys, time\n"
    "sys.path.insert(0, {tests!r})  # the tests' helpers import one another as top-level modules\n"
    "from openai_stub import OpenAIStub, serve\n"
    "log = os.open({log!r}, os.O_WRONLY | os.O_APPEND | os.O_CREAT) if {log!r} else None\n"
    "def reply(prompt):\n"
    "    if log is not None:  # one write per prompt: O_APPEND keeps concurrent lines whole\n"
    "        os.write(log, (hashlib.sha256(prompt.encode()).hexdigest() + '\\n').encode())\n"
    "    return 'Yes'\n"
    "with serve(OpenAIStub(reply=reply)) as stub:\n"
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
def stub_server(log: Path | None = None) -> Iterator[str]:
    """The stub LLM in its own process (its replies then take no time from the harness's threads); with
    `log`, the sha256 of every prompt it answers is appended there, one line each."""
    script = STUB.format(tests=str(ROOT / "tests"), log=str(log) if log else "")
    process = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        yield process.stdout.readline().strip()
    finally:
        process.kill()
        process.wait()


def kill_check(method: str, limit: int, concurrency: int) -> bool:
    """`hopgraph eval` as a user runs it, against the stub, killed with SIGKILL once half its questions are
    written, then run again: prints whether every question has exactly one whole result line and how many
    prompts were sent twice (at most the questions in flight at the kill may be). True when both hold."""
    with tempfile.TemporaryDirectory(prefix="hopgraph-kill-") as scratch:
        folder = Path(scratch)
        out, prompts = folder / "run", folder / "prompts.log"
        env = os.environ | {
            "HOPGRAPH_CONFIG": "",
            "HOPGRAPH_LLM": "openai:stub",
            "HOPGRAPH_API_KEY": "stub",
            "HOPGRAPH_CHECKPOINTER": f"sqlite:///{folder / 'checkpoints.sqlite'}",
        }
        command = [
            sys.executable, "-m", "hopgraph", "eval", "--dataset", "multihop_rag", "--data", str(DATA),
            "--methods", method, "--limit", str(limit), "--concurrency", str(concurrency),
            "--out", str(out), "--no-cache",
        ]  # fmt: skip
        with stub_server(prompts) as base_url:
            env["HOPGRAPH_BASE_URL"] = base_url
            with (folder / "first.log").open("wb") as log:
                first = subprocess.Popen(command, env=env, stdout=log, stderr=log, start_new_session=True)
            results = out / "results.jsonl"
            while first.poll() is None and _result_lines(results) < limit // 2:
                time.sleep(0.05)
            if first.poll() is not None:
                raise SystemExit(f"the first run ended before the kill: {(folder / 'first.log').read_text()}")
            os.killpg(first.pid, signal.SIGKILL)
            first.wait()
            written = _result_lines(results)
            again = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
            if again.returncode != 0:
                raise SystemExit(f"the resumed run failed ({again.returncode}):\n{again.stderr[-3000:]}")
        lines = [json.loads(line) for line in results.read_text(encoding="utf-8").splitlines()]
        ids = Counter(r["question_id"] for r in lines if r["type"] == "result")
        failed = sum(1 for r in lines if r["type"] == "result" and r["error"])
        once = len(ids) == limit and set(ids.values()) == {1} and not failed
        sent = Counter(prompts.read_text().split())
        repeated = sum(count - 1 for count in sent.values())
    print(
        f"{method:9} x{concurrency:<3} kill -9 after {written} of {limit} result lines; resumed: "
        f"{len(ids)} questions, {sum(ids.values())} lines, {failed} failed -> "
        f"{'each question exactly once' if once else 'NOT exactly once'}; prompts sent again after the "
        f"kill: {repeated} (at most {concurrency} were in flight)",
        flush=True,
    )
    return once and repeated <= concurrency


def _result_lines(results: Path) -> int:
    """Whole result lines written so far (the runner's own reader leaves out a line being written)."""
    from evals.runner import read_records

    return sum(r["type"] == "result" for r in read_records(results)) if results.exists() else 0


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
    parser.add_argument(
        "--kill-check",
        action="store_true",
        help="instead of timing: kill -9 a `hopgraph eval` halfway at each concurrency and resume it",
    )
    args = parser.parse_args()
    levels = [int(level) for level in args.concurrency.split(",")]
    methods = [method for method in args.methods.split(",") if method]
    if args.kill_check:
        held = [kill_check(method, args.limit, level) for method in methods for level in levels]
        raise SystemExit(0 if all(held) else 1)

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
