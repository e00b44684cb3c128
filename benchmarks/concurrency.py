"""Questions per minute of `hopgraph eval --concurrency N` against llama.cpp's own OpenAI-compatible server,
beside the in-process model, in one command.

    .venv/bin/python -m benchmarks.concurrency [--limit 8] [--methods naive,chainrag+word_limit=300]
        [--concurrency 1,2,4] [--dataset hotpotqa --data ../shared/data/hotpotqa] [--no-in-process]

The server runs on 127.0.0.1 over the embedded GGUF: `llama-server` (llama.cpp's C++ server) with
`--parallel` = the highest concurrency, when it is found (--llama-server, PATH, beside this Python, or
where `bash scripts/llama_server.sh` installs it: it builds one from source, once per machine); otherwise
llama-cpp-python's `python -m llama_cpp.server`, which serves one request at a time (no slots), so its
rows measure what overlapping the rest of a question (retrieval, reranking) with another's LLM call
buys. Which one ran is printed above the table. Each cell is a fresh evaluation (new results folder,
response cache off, checkpoints in a temporary folder) of the same questions over the same index, built
before any timing and after one warm-up completion (the model loaded, the server's first request
served), each server cell on a server started for it (a server reused across cells answers the later
cells' prompts from its prompt cache); the in-process model runs serially (it is not thread-safe; the
gateway serialises it). Ratios are against the same method at concurrency 1 on the server, and against
the in-process model.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import httpx
from langchain_core.messages import HumanMessage

from benchmarks import SHARED_DATA
from evals.datasets import load_benchmark
from evals.runner import latest_results, read_records, results_path
from graphs.registry import extras_for
from hopgraph import Settings, index_corpus, services_for
from hopgraph.evaluate import evaluate, index_name
from hopgraph.local_model import ensure_gguf
from hopgraph.options import parse_methods

ALIAS = "local-qwen"
STARTUP_SECONDS = 180.0
REQUEST_TIMEOUT = 900.0  # a request may queue behind every other slot's prompt on a 2-core machine
# where scripts/llama_server.sh installs the binary (same variable, same default)
INSTALLED = Path(os.environ.get("HOPGRAPH_BIN") or Path.home() / ".local/share/hopgraph/bin") / "llama-server"


def find_llama_server() -> str | None:
    """llama.cpp's server binary: on PATH, beside this Python (the venv's bin), or the script's install."""
    for candidate in (shutil.which("llama-server"), Path(sys.executable).parent / "llama-server", INSTALLED):
        if candidate and os.access(candidate, os.X_OK):
            return str(candidate)
    return None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def server_command(binary: str | None, gguf: Path, port: int, slots: int, settings: Settings) -> list[str]:
    """llama-server with `slots` parallel slots (each gets the configured context), or llama_cpp.server."""
    threads = str(settings.local_n_threads)
    if binary:
        return [
            binary, "--model", str(gguf), "--alias", ALIAS, "--host", "127.0.0.1", "--port", str(port),
            "--parallel", str(slots), "--ctx-size", str(settings.local_n_ctx * slots), "--threads", threads,
        ]  # fmt: skip
    return [
        sys.executable, "-m", "llama_cpp.server", "--model", str(gguf), "--model_alias", ALIAS,
        "--host", "127.0.0.1", "--port", str(port), "--n_ctx", str(settings.local_n_ctx),
        "--n_threads", threads, "--interrupt_requests", "false", "--verbose", "false",
    ]  # fmt: skip


@contextmanager
def llama_server(command: list[str], port: int, log: Path) -> Iterator[str]:
    """Run the server in its own process group until the block ends; yields its /v1 base URL."""
    with log.open("wb") as out:
        proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + STARTUP_SECONDS
        while True:
            if proc.poll() is not None:
                raise SystemExit(f"the server exited with {proc.returncode}; its log: {log}")
            try:
                if httpx.get(f"{base_url}/models", timeout=2.0).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise SystemExit(f"the server did not answer within {STARTUP_SECONDS:.0f} s; its log: {log}")
            time.sleep(0.5)
        yield base_url
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def warm_up(settings: Settings) -> None:
    """One tiny completion before timing, so no cell pays for loading the in-process model or for the
    server's first request (evaluate shares the loaded model: same settings, same process services)."""
    services_for(settings).llm.complete("generator", [HumanMessage("Reply with OK.")], max_tokens=2)


def questions_per_minute(
    args: argparse.Namespace, method: str, settings: Settings, concurrency: int, workdir: Path, label: str
) -> tuple[float, int, int]:
    """One fresh evaluation of `method`: (questions per minute, answered, failed), timed around the run."""
    out_dir = workdir / f"{method}-{label}"
    started = time.perf_counter()
    evaluate(
        args.dataset, args.data, [method], limit=args.limit, out_dir=out_dir, settings=settings,
        concurrency=concurrency, cache=False,
    )  # fmt: skip
    seconds = time.perf_counter() - started
    latest = latest_results(read_records(results_path(out_dir))).values()
    answered = sum(1 for record in latest if record["error"] is None)
    print(f"  {method:<10} {label:<12} {answered} answered, {len(latest) - answered} failed, {seconds:.1f} s")
    return answered / seconds * 60, answered, len(latest) - answered


def table(
    methods: Sequence[str], levels: Sequence[int], cells: dict[tuple[str, str], tuple[float, int, int]]
) -> str:
    """Markdown: q/min per method and concurrency, ratios against concurrency 1 and the in-process model."""
    columns = (
        [("in-process", "in-process (serial)")] if any(k[1] == "in-process" for k in cells) else []
    ) + [(f"c{level}", f"server, concurrency {level}") for level in levels]
    lines = [
        "| method | " + " | ".join(title for _, title in columns) + " |",
        "|---" * (len(columns) + 1) + "|",
    ]
    for method in methods:
        base, local = cells.get((method, f"c{levels[0]}")), cells.get((method, "in-process"))
        row = []
        for key, _ in columns:
            rate, _, failed = cells[(method, key)]
            text = f"{rate:.2f} q/min"
            if key != "in-process" and base and key != f"c{levels[0]}" and base[0] > 0:
                text += f", x{rate / base[0]:.2f} vs c{levels[0]}"
            if key != "in-process" and local and local[0] > 0:
                text += f", x{rate / local[0]:.2f} vs in-process"
            row.append(text + (f" ({failed} failed)" if failed else ""))
        lines.append(f"| {method} | " + " | ".join(row) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", default="hotpotqa")
    parser.add_argument("--data", type=Path, default=None, help="default ../shared/data/DATASET")
    parser.add_argument("--limit", type=int, default=8, help="questions per cell (default 8)")
    parser.add_argument(
        "--methods", default="naive,chainrag+word_limit=300", help="methods or variants, as `hopgraph eval`"
    )
    parser.add_argument("--concurrency", default="1,2,4", help="levels against the server (default 1,2,4)")
    parser.add_argument(
        "--llama-server", default=find_llama_server(), help="llama.cpp's server binary (default: found)"
    )
    parser.add_argument("--no-in-process", action="store_true", help="skip the in-process model's column")
    args = parser.parse_args()
    args.data = args.data or SHARED_DATA / args.dataset
    variants = parse_methods(args.methods)
    methods = [variant.label for variant in variants]
    levels = sorted({int(level) for level in args.concurrency.split(",")})

    base = Settings()
    gguf = base.local_model_path or ensure_gguf(base.models_path)
    with tempfile.TemporaryDirectory(prefix="hopgraph-concurrency-") as tmp:
        workdir = Path(tmp)
        # the configured indexes (built once, reused), checkpoints of these throwaway runs kept apart
        local = base.model_copy(update={"checkpointer": f"sqlite:///{workdir / 'checkpoints.sqlite'}"})
        benchmark = load_benchmark(args.dataset, args.data, args.limit)
        extras = sorted({extra for variant in variants for extra in extras_for(variant.method)})
        built = index_corpus(benchmark.corpus, index_name(benchmark, local), local, extras=extras)
        print(f"{args.dataset}, first {args.limit} questions; index {built.manifest.name} ({built.status})")
        cells: dict[tuple[str, str], tuple[float, int, int]] = {}
        if not args.no_in_process:
            print(f"in-process model ({gguf.name}, {local.local_n_threads} threads):")
            warm_up(local)
            for method in methods:
                cells[(method, "in-process")] = questions_per_minute(
                    args, method, local, 1, workdir, "in-process"
                )
        slots = max(levels)
        server = (
            f"{args.llama_server} --parallel {slots}"
            if args.llama_server
            else "llama_cpp.server (1 request at a time)"
        )
        print(f"server: {server} on 127.0.0.1, started afresh for every cell")
        for method in methods:
            for level in levels:
                # A fresh server per cell: llama-server keeps every prompt it evaluated (in its slots and its
                # host-memory prompt cache), so a cell after another over the same questions would skip
                # their prompt evaluation and measure the cache (8 NaiveRAG questions in 2.8 s, not 60 s).
                port = free_port()
                command = server_command(args.llama_server, gguf, port, slots, local)
                with llama_server(command, port, workdir / f"server-{method}-c{level}.log") as base_url:
                    remote = local.model_copy(
                        update={
                            "llm": f"openai:{ALIAS}",
                            "base_url": base_url,
                            "timeout": REQUEST_TIMEOUT,
                            "max_retries": 0,
                        }
                    )
                    warm_up(remote)
                    cells[(method, f"c{level}")] = questions_per_minute(
                        args, method, remote, level, workdir, f"c{level}"
                    )
    print()
    print(f"Server: {server}; {args.dataset}, {args.limit} questions per cell.")
    print(table(methods, levels, cells))


if __name__ == "__main__":
    main()
