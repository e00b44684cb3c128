"""Prompt tokens the embedded model evaluates, against those sent, with one llama.cpp context shared by
every role and with a context per role (`local_contexts`), for each method, in one command.

    .venv/bin/python -m benchmarks.prompt_economy [--limit 20] [--methods naive,chainrag,...]
        [--contexts 4] [--dataset musique] [--options word_limit=300]

llama.cpp re-evaluates a prompt only past the prefix its context still holds from the previous call.
With one context, methods whose roles alternate (decompose, judge, read ...) evict each other's stable
instructions on every call; with a context per role each role finds its own prefix again, across calls and
across questions. Every cell (method x contexts) is a fresh evaluation in its own process: the model
loaded cold, the response cache off, throwaway checkpoints, the same first `--limit` questions over the
same index (built before any cell). Printed per method and setting: LLM calls, prompt tokens sent and
evaluated per question (llama.cpp's own count), evaluated / sent, seconds per question, the process's
peak resident memory, and how many answers are identical between the two settings (same prompts, greedy
decoding). `--options` go to every method whose context declares them (MuSiQue at word_limit 300 is
issue 18's setting).

Each cell also records the token ids of every prompt llama.cpp received and prints the floor of any prefix
cache for them: the tokens still to evaluate if every earlier prompt of the cell were kept (each prompt
past its longest common prefix with any earlier one). No number of contexts, slots or saved states can go
below it with these prompts; only prompts that share more can.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from benchmarks import SHARED_DATA
from evals.datasets import load_benchmark
from evals.runner import answered_results
from graphs.registry import METHODS, builder, extras_for
from hopgraph import Settings, index_corpus
from hopgraph.evaluate import evaluate, index_name
from hopgraph.providers import Services

PEAK = "peak_rss.json"
PROMPTS = "prompt_tokens.jsonl"
# Left out by default: Multi-Meta-RAG needs a corpus with sources and dates (on MuSiQue it is NaiveRAG);
# QuOTE and BiQOG first need the LLM to write questions for every chunk of the index, hours before a cell.
NOT_BY_DEFAULT = {"multimeta", "quote", "biqog"}


@dataclass(frozen=True)
class Cell:
    """One method's evaluation under one number of contexts, summed over its questions."""

    questions: int
    calls: float
    sent: float
    evaluated: float
    seconds: float
    peak_mib: float
    answers: dict[str, str]
    floor: float  # prompt tokens evaluated with every earlier prompt cached (`prefix_cache_floor`)

    def per_question(self, total: float) -> float:
        return total / max(1, self.questions)


def declared_options(method: str, options: Mapping[str, str], settings: Settings) -> dict[str, str]:
    """The options `method`'s context declares (word_limit goes to naive and chainrag, not to ircot)."""
    schema = builder(method)(Services(settings)).context_schema
    names = {f.name for f in fields(schema)} if schema else set()
    return {key: value for key, value in options.items() if key in names}


def prefix_cache_floor(prompts: Iterable[Sequence[int]]) -> int:
    """Prompt tokens a cache holding every earlier prompt would still evaluate: each prompt past its longest
    common prefix with any earlier one, and at least one token (llama.cpp evaluates the last token of a
    fully cached prompt again for its logits). The earlier prompts are a token trie."""
    trie: dict[int, dict] = {}
    total = 0
    for tokens in prompts:
        node, shared = trie, 0
        for token in tokens:
            if token not in node:
                break
            node, shared = node[token], shared + 1
        total += max(1, len(tokens) - shared)
        node = trie
        for token in tokens:
            node = node.setdefault(token, {})
    return total


def record_prompt_tokens(path: Path) -> None:
    """In a cell's process only: append the token ids of every prompt llama.cpp is given to `path`, one JSON
    list a call (what `Llama.generate` receives; completions stream, so there is no reply to read it from)."""
    from llama_cpp import Llama

    generate = Llama.generate

    def recorded(self: Llama, tokens: Any, *args: Any, **kwargs: Any) -> Any:
        with path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(list(map(int, tokens))) + "\n")
        return generate(self, tokens, *args, **kwargs)

    Llama.generate = recorded  # type: ignore[method-assign]


def run_cell(args: argparse.Namespace) -> None:
    """The child process: one fresh evaluation, then its peak memory beside its results."""
    record_prompt_tokens(args.out / PROMPTS)
    settings = Settings().model_copy(
        update={"local_contexts": args.contexts, "checkpointer": f"sqlite:///{args.out / 'ckpt.sqlite'}"}
    )
    options = dict(pair.split("=", 1) for pair in args.options.split(",") if pair)
    evaluate(
        args.dataset, args.data, [args.cell], limit=args.limit, out_dir=args.out, settings=settings,
        context=declared_options(args.cell, options, settings), cache=False,
        progress=lambda done, total, _: print(f"  {done}/{total} questions", flush=True),
    )  # fmt: skip
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    (args.out / PEAK).write_text(json.dumps({"peak_mib": peak_kib / 1024}))


def measure(args: argparse.Namespace, method: str, contexts: int, workdir: Path) -> Cell:
    """Run one cell in a child process (a cold model, its own peak memory) and sum what it recorded."""
    out = workdir / f"{method}-{contexts}"
    out.mkdir()
    subprocess.run(
        [
            sys.executable, "-m", "benchmarks.prompt_economy", "--cell", method, "--contexts", str(contexts),
            "--out", str(out), "--dataset", args.dataset, "--data", str(args.data),
            "--limit", str(args.limit), "--options", args.options,
        ],
        check=True,
    )  # fmt: skip
    records = list(answered_results(out).values())
    total = {key: sum(r["llm"][key] for r in records) for key in ("calls", "prompt_tokens", "cached_tokens")}
    return Cell(
        questions=len(records),
        calls=total["calls"],
        sent=total["prompt_tokens"],
        evaluated=total["prompt_tokens"] - total["cached_tokens"],
        seconds=sum(r["seconds"] for r in records),
        peak_mib=json.loads((out / PEAK).read_text())["peak_mib"],
        answers={r["question_id"]: r["prediction"] for r in records},
        floor=prefix_cache_floor(json.loads(line) for line in (out / PROMPTS).read_text().splitlines()),
    )


def table(methods: Sequence[str], contexts: int, cells: Mapping[tuple[str, int], Cell]) -> str:
    """Markdown: per method, one row per setting, the after / before ratios on the second row."""
    lines = [
        "| method | contexts | calls / q | sent / q | evaluated / q | evaluated / sent | s / q "
        "| peak RSS MiB | identical answers | floor of any prefix cache: evaluated / sent |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for method in methods:
        one, many = cells[(method, 1)], cells[(method, contexts)]
        same = sum(1 for qid, answer in one.answers.items() if many.answers.get(qid) == answer)
        for n, cell in ((1, one), (contexts, many)):
            ratio = cell.evaluated / cell.sent if cell.sent else 0.0
            versus = ""
            if n != 1:
                versus = (
                    f" (x{cell.evaluated / one.evaluated:.2f} evaluated, "
                    f"x{cell.seconds / one.seconds:.2f} time)"
                    if one.evaluated and one.seconds
                    else ""
                )
            totals = (cell.calls, cell.sent, cell.evaluated, cell.seconds)
            per_q = [cell.per_question(total) for total in totals]
            lines.append(
                f"| {method} | {n} | {per_q[0]:.1f} | {per_q[1]:.0f} | {per_q[2]:.0f} | {ratio:.2f}{versus} "
                f"| {per_q[3]:.1f} | {cell.peak_mib:.0f} | {'' if n == 1 else f'{same}/{len(one.answers)}'} "
                f"| {cell.floor / cell.sent if cell.sent else 0.0:.2f} |"
            )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", default="musique")
    parser.add_argument("--data", type=Path, default=None, help="default ../shared/data/DATASET")
    parser.add_argument("--limit", type=int, default=20, help="questions per cell (default 20)")
    parser.add_argument("--methods", default=",".join(m for m in METHODS if m not in NOT_BY_DEFAULT))
    parser.add_argument("--contexts", type=int, default=4, help="contexts of the per-role setting")
    parser.add_argument(
        "--options", default="word_limit=300", help="KEY=VALUE,... for the methods declaring them"
    )
    parser.add_argument("--cell", help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    args.data = args.data or SHARED_DATA / args.dataset
    if args.cell:
        run_cell(args)
        return
    methods = [m for m in args.methods.split(",") if m]
    settings = Settings()
    benchmark = load_benchmark(args.dataset, args.data, args.limit)
    extras = sorted({extra for method in methods for extra in extras_for(method)})
    built = index_corpus(benchmark.corpus, index_name(benchmark, settings), settings, extras=extras)
    print(f"{args.dataset}, first {args.limit} questions; index {built.manifest.name} ({built.status})")
    cells: dict[tuple[str, int], Cell] = {}
    with tempfile.TemporaryDirectory(prefix="hopgraph-prompt-economy-") as tmp:
        for method in methods:
            for contexts in (1, args.contexts):
                print(f"{method}, {contexts} context(s):", flush=True)
                cells[(method, contexts)] = measure(args, method, contexts, Path(tmp))
    print()
    print(f"{args.dataset}, {args.limit} questions per cell, cold model per cell, response cache off.")
    print(table(methods, args.contexts, cells))


if __name__ == "__main__":
    main()
