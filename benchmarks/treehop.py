"""TreeHop's retrieval, LLM-free: hop-conditioned precision / recall / F1 at hops 1-5 beside seed 004's
Table 4, Recall@5 after 2 and 3 hops beside the TreeHop paper's, and latency per query without the encoder.

    .venv/bin/python -m benchmarks.treehop [--dataset multihop_rag] [--limit 300] [--types inference_query]
        [--variant NAME=CHECKPOINT ...] [--latency-only]

Each question runs the `treehop` graph up to its reader (an interrupt before `generate`), with K = 5 and
5 hops, once per variant: `delta` (q - c, no learned gate: the ablation), `shipped` (the checkpoint in the
package) and any `--variant NAME=PATH` (e.g. a `simple` checkpoint). "Recall@5 after h hops" is the
recall of every chunk kept in hops 1..h (5 per hop, so about 5h chunks: the average is printed), as the
TreeHop paper counts it; hop 1 alone is direct dense top-5. `dense top-n` is plain dense retrieval of the
question with as many chunks as the tree kept, the fair baseline for a larger budget; the last table is
each variant's recall gain over it, question by question, at that variant's own budget, with a paired
bootstrap interval and the paired permutation test's p.

Latency: from the end of the `embed` node (the encoder) to the end of hop 3 (and hop 2), through the
compiled graph, so it includes the vector queries, the update and LangGraph's own step overhead. It is
timed in runs of their own with 3 hops, the issue's setting, where hop 3 is the last (the last hop needs
no chunk embeddings and computes no update); `--latency-only` makes only those runs and that table. Each
variant is timed twice in the one run, over the same index opened two ways: dense search by Chroma's HNSW
(`exact_search_max_chunks = 0`) and exact in memory (stores.exact, the configured limit; the default for
an index this size), so the two rows of a variant compare under the same machine load. Both are warmed
(one vector query each) before timing, so neither row pays for loading the HNSW graph or the vectors. The
quality tables use the index as configured (exact by default).

The questions are the first `--limit` of the dataset's dev file: those the harness evaluates, which the
trainer never trains on (hopgraph.treehop_data.EVALUATED), nor, by default, on the documents they use (a
checkpoint trained with `--shared-articles` has seen those documents, which MultiHop-RAG's questions
share). The unit retrieved is our index's 256-token chunk; the original embeds whole MultiHop-RAG articles.
"""

from __future__ import annotations

import argparse
import functools
import statistics
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import torch
from langgraph.checkpoint.memory import InMemorySaver

from benchmarks import SHARED_DATA
from evals.datasets import DATASETS, QAExample, load_benchmark
from evals.metrics import hop_prf, macro_by_hop, recall_at_k
from evals.runner import evidence_spans
from evals.stats import paired_difference, paired_test
from graphs import treehop
from graphs.treehop.context import TreeHopContext
from hopgraph import Settings, index_corpus, services_for
from hopgraph.evaluate import index_name
from hopgraph.providers import BoundIndexes, index_store
from nodes.retrieve import search_evidence

HOPS = 5
LATENCY_HOPS = 3
K = 5
# Seed 004, Table 4 (the public TreeHop code and checkpoint, BGE-m3, whole articles, MultiHop-RAG dev)
SEED_TABLE_4 = {1: (0.3115, 0.4860, 0.3797), 2: (0.1836, 0.5728, 0.2781), 3: (0.1299, 0.6080, 0.2141),
                4: (0.0985, 0.6149, 0.1698), 5: (0.0793, 0.6184, 0.1405)}  # fmt: skip
# The TreeHop paper, MultiHop-RAG Recall@5: direct retrieval 48.6, TreeHop 2 hops 57.9, 3 hops 61.1
PAPER_RECALL = {1: 48.6, 2: 57.9, 3: 61.1}


class TimedIndexes:
    """The real indexes, with the seconds of every vector query kept: the share of the latency that is
    Chroma's."""

    def __init__(self, indexes: Any) -> None:
        self.indexes = indexes
        self.seconds: list[float] = []

    def open(self, name: str) -> Any:
        index, timed = self.indexes.open(name), self

        class Timed:
            def __getattr__(self, attr: str) -> Any:
                return getattr(index, attr)

            def search_by_vectors(self, *args: Any, **kwargs: Any) -> Any:
                started = time.perf_counter()
                hits = index.search_by_vectors(*args, **kwargs)
                timed.seconds.append(time.perf_counter() - started)
                return hits

        return Timed()


def run_variant(
    graph: Any, timed: TimedIndexes, questions: list[QAExample], label: str, context: TreeHopContext
) -> dict[str, Any]:
    """Per question: evidence by hop, the seconds from the encoder's end to each hop's end and those of the
    vector queries within them (one thread per variant and question: a thread holds one run's state)."""
    per_hop: list[list[list[Any]]] = []
    latency: dict[int, list[float]] = {2: [], 3: []}
    chroma: dict[int, list[float]] = {2: [], 3: []}
    for n, example in enumerate(questions):
        config = {"configurable": {"thread_id": f"{label}-{n}"}}
        embedded_at, hop_ends = 0.0, []
        timed.seconds.clear()
        for update in graph.stream(
            {"question": example.question}, config, context=context, stream_mode="updates"
        ):
            if "embed" in update:
                embedded_at = time.perf_counter()
            elif "hop" in update:
                hop_ends.append(time.perf_counter() - embedded_at)
        for hops in latency:
            if len(hop_ends) >= hops:
                latency[hops].append(hop_ends[hops - 1])
                chroma[hops].append(sum(timed.seconds[:hops]))
        evidence = graph.get_state(config).values.get("evidence", [])
        per_hop.append(
            [evidence_spans([e for e in evidence if e["hop"] == hop]) for hop in range(1, HOPS + 1)]
        )
    return {"per_hop": per_hop, "latency": latency, "chroma": chroma}


def milliseconds(seconds: list[float]) -> str:
    return f"{1000 * statistics.mean(seconds):.1f} / {1000 * statistics.median(seconds):.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", default="multihop_rag", choices=["multihop_rag", "musique"])
    parser.add_argument("--limit", type=int, default=300, help="the first N dev questions (default 300)")
    parser.add_argument("--types", default="inference_query", help="question types kept (MultiHop-RAG)")
    parser.add_argument("--variant", action="append", default=[], metavar="NAME=CHECKPOINT")
    parser.add_argument("--latency-only", action="store_true", help="only the latency table (3-hop runs)")
    args = parser.parse_args()
    torch.set_num_threads(1)

    settings = Settings()
    bench = load_benchmark(args.dataset, SHARED_DATA / args.dataset / DATASETS[args.dataset], args.limit)
    wanted = set(args.types.split(",")) if args.dataset == "multihop_rag" else None
    questions = [q for q in bench.examples if q.evidence and (wanted is None or q.question_type in wanted)]
    name = index_name(bench, settings)
    built = index_corpus(bench.corpus, name, settings)
    print(f"{args.dataset}: {len(questions)} questions of the first {args.limit}; index {name}: "
          f"{built.status}, {built.manifest.chunks} chunks of 256 tokens")  # fmt: skip
    services = services_for(settings)
    hnsw = BoundIndexes(index_store(settings, exact_search_max_chunks=0), services.embedder)
    searches = {}
    for indexes in (hnsw, services.indexes):  # the same index searched by Chroma's HNSW, then as configured
        opened = indexes.open(name)
        opened.search_by_vectors(services.embedder.embed([questions[0].question]), K)  # warm: load it
        searches["exact in memory" if opened.exact else "Chroma HNSW"] = TimedIndexes(indexes)

    # each variant's trained update (a checkpoint is a setting, not a run's parameter): `delta` needs none,
    # `shipped` is the configured one, NAME=PATH another
    models = {"delta": services.treehop_model, "shipped": services.treehop_model} | {
        label: functools.partial(services.treehop_model_at, Path(path))
        for label, path in (given.partition("=")[::2] for given in args.variant)
    }

    def graph_over(timed: TimedIndexes, label: str) -> Any:
        # the reader never runs (the graph stops before it), so no LLM is loaded
        llm_free = SimpleNamespace(
            llm=None, indexes=timed, embedder=services.embedder, treehop_model=models[label]
        )
        return treehop.build(llm_free).compile(checkpointer=InMemorySaver(), interrupt_before=["generate"])

    def context(hops: int, label: str) -> TreeHopContext:
        return TreeHopContext(
            index=name, top_k=K, hops=hops, update="delta" if label == "delta" else "learned"
        )

    timed = list(searches.values())[-1]  # as configured
    if not args.latency_only:
        results = {
            label: run_variant(
                graph_over(timed, label), timed, questions, f"{label}-{HOPS}", context(HOPS, label)
            )
            for label in models
        }
        report_quality(results, questions, services.indexes.open(name), args.dataset)
    timings = {
        (label, search): run_variant(
            graph_over(timed, label),
            timed,
            questions,
            f"{label}-{search}-{LATENCY_HOPS}",
            context(LATENCY_HOPS, label),
        )
        for label in models
        for search, timed in searches.items()
    }
    print(f"\nlatency per query without the encoder ({LATENCY_HOPS}-hop runs; graph steps: vector queries, "
          "update, LangGraph), ms")  # fmt: skip
    print("| variant | dense search | 2 hops mean / p50 | in vector queries | 3 hops mean / p50 "
          "| in vector queries |")  # fmt: skip
    print("|---|---|---|---|---|---|")
    for (label, search), result in timings.items():
        cells = [milliseconds(result[part][hops]) for hops in (2, 3) for part in ("latency", "chroma")]
        print(f"| {label} | {search} | " + " | ".join(cells) + " |")


def report_quality(
    results: dict[str, dict[str, Any]], questions: list[QAExample], index: Any, dataset: str
) -> None:
    """The hop-conditioned P / R / F1 and Recall@5 tables of the 5-hop runs, dense retrieval beside."""
    gold = [q.evidence for q in questions]

    print("\nhop-conditioned precision / recall / F1 (macro over questions)")
    print("| variant | " + " | ".join(f"hop {h}" for h in range(1, HOPS + 1)) + " |\n|---|" + "---|" * HOPS)
    for label, result in results.items():
        curves = [hop_prf(g, hops) for g, hops in zip(gold, result["per_hop"], strict=True)]
        cells = [f"{p:.3f} / {r:.3f} / {f:.3f}" for _, p, r, f in macro_by_hop(curves, HOPS)]
        print(f"| {label} | " + " | ".join(cells) + " |")
    published = dataset == "multihop_rag"  # the papers' numbers are MultiHop-RAG's
    if published:
        seed_cells = [" / ".join(f"{v:.3f}" for v in SEED_TABLE_4[h]) for h in range(1, HOPS + 1)]
        print("| seed 004 (BGE-m3, articles) | " + " | ".join(seed_cells) + " |")

    print(
        "\nRecall@5 after h hops (kept chunks of hops 1..h), average chunks kept, and dense top-n at that n"
    )
    print("| variant | h = 1 | h = 2 | h = 3 |\n|---|---|---|---|")
    found: dict[tuple[str, int], list[float]] = {}
    budgets: dict[tuple[str, int], int] = {}
    for label, result in results.items():
        cells = []
        for hops in (1, 2, 3):
            kept = [[span for hop in q[:hops] for span in hop] for q in result["per_hop"]]
            found[label, hops] = [
                recall_at_k(g, spans, max(len(spans), 1)) or 0.0 for g, spans in zip(gold, kept, strict=True)
            ]
            mean_kept = statistics.mean(len(spans) for spans in kept)
            budgets[label, hops] = round(mean_kept)
            cells.append(f"{100 * statistics.mean(found[label, hops]):.1f} ({mean_kept:.1f} chunks)")
        print(f"| {label} | " + " | ".join(cells) + " |")
    dense_at: dict[int, list[float]] = {}
    for n in sorted(set(budgets.values())):
        dense_at[n] = [
            recall_at_k(q.evidence, evidence_spans(search_evidence(index, q.question, n, 1, mode="dense")), n)
            or 0.0
            for q in questions
        ]
    last = list(results)[-1]
    dense_cells = [
        f"{100 * statistics.mean(dense_at[budgets[last, hops]]):.1f} (top {budgets[last, hops]})"
        for hops in (1, 2, 3)
    ]
    print(f"| dense, as many chunks as {last} | " + " | ".join(dense_cells) + " |")
    if published:
        print(
            "| TreeHop paper (BGE-m3, articles) | "
            + " | ".join(f"{PAPER_RECALL[h]:.1f}" for h in (1, 2, 3))
            + " |"
        )
    print(
        "\nRecall gain over dense retrieval of as many chunks (each variant's own n): 95% paired bootstrap, "
        "permutation p"
    )
    print("| variant | h = 2 | h = 3 |\n|---|---|---|")
    for label in results:
        cells = []
        for hops in (2, 3):
            dense = dense_at[budgets[label, hops]]
            gain, low, high = paired_difference(found[label, hops], dense)
            p = paired_test(found[label, hops], dense, binary=False)
            shown_p = "p < 0.001" if p < 0.001 else f"p {p:.3f}"
            interval = f"[{100 * low:+.1f}, {100 * high:+.1f}]"
            cells.append(f"{100 * gain:+.1f} {interval}, {shown_p} (n = {budgets[label, hops]})")
        print(f"| {label} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
