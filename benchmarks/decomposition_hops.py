"""Seed 004's Table 1: query decomposition's retrieval at N = 3, 4, 5 sub-queries on MultiHop-RAG, beside
NaiveRAG reading as many passages.

    .venv/bin/python -m benchmarks.decomposition_hops [--limit 50] [--ns 3,4,5] [--mode hybrid]

The table is about retrieval only, so each question runs the `decomposition` graph up to its reader and
stops there (a LangGraph interrupt before `generate`): the decomposition (one LLM call, kept in the shared
response cache, so an evaluation of the same questions answers it for free) and the parallel retrieval
branches. Hop-conditioned precision / recall / F1 (seed 004 §3.2, `evals.metrics.hop_prf`) is read after
all N sub-queries, as the seed reports one value per N, and per hop r = 1..N for the curve. NaiveRAG is
scored on each question at exactly that question's number of distinct passages (its top-n for the whole
question), and the two are compared by the paired bootstrap over the same questions.

The questions are the first `--limit` of the MultiHop-RAG dev set (the ones `hopgraph eval --limit` runs;
null queries have no gold evidence and are left out of retrieval scores), over the index an evaluation
builds for the full corpus. Writes decomposition_hops.png beside `--plot`'s path (default: here).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from pathlib import Path

from langgraph.checkpoint.memory import InMemorySaver

from benchmarks import SHARED_DATA
from evals.datasets import QAExample, load_benchmark
from evals.metrics import hop_prf, macro_by_hop
from evals.plots import plot_budget_bars
from evals.runner import evidence_spans
from evals.stats import bootstrap_ci, paired_difference
from graphs import decomposition
from graphs.decomposition.context import QueryDecompositionContext
from hopgraph import Settings, index_corpus, services_for
from hopgraph.evaluate import index_name
from nodes.context import RetrievalMode
from nodes.retrieve import search_evidence

DATA = SHARED_DATA / "multihop_rag"
# Seed 004, Table 1 (OpenAI embeddings, 300-token chunks with 60 overlap, top-5 per sub-query)
SEED = {3: (0.242, 0.663, 0.336), 4: (0.214, 0.660, 0.301), 5: (0.182, 0.675, 0.265)}
PRF = ("precision", "recall", "F1")

Scores = tuple[float, float, float]


def interval(values: Sequence[float]) -> str:
    mean, low, high = bootstrap_ci(values)
    return f"{mean:.3f} [{low:.3f}, {high:.3f}]"


def difference(a: Sequence[float], b: Sequence[float]) -> str:
    mean, low, high = paired_difference(a, b)
    noise = " (inside the noise)" if low <= 0 <= high else ""
    return f"{mean:+.3f} [{low:+.3f}, {high:+.3f}]{noise}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=int, default=50, help="the first N dev queries (default 50)")
    parser.add_argument("--ns", default="3,4,5", help="numbers of sub-queries, comma-separated")
    parser.add_argument("--k", type=int, default=5, help="passages per sub-query (the seed: 5)")
    parser.add_argument("--mode", default="hybrid", choices=["dense", "bm25", "hybrid"])
    parser.add_argument("--plot", type=Path, default=Path("decomposition_hops.png"))
    args = parser.parse_args()
    ns = [int(n) for n in args.ns.split(",")]
    mode: RetrievalMode = args.mode

    settings = Settings().model_copy(update={"llm_cache": True})
    bench = load_benchmark("multihop_rag", DATA, args.limit)
    name = index_name(bench, settings)
    built = index_corpus(bench.corpus, name, settings)
    print(f"index {name}: {built.status}, {built.manifest.chunks} chunks")
    services = services_for(settings)
    index = services.indexes.open(name)
    graph = decomposition.build(services).compile(checkpointer=InMemorySaver(), interrupt_before=["generate"])
    questions: list[QAExample] = [q for q in bench.examples if q.evidence]
    print(f"{len(questions)} of the first {args.limit} queries have gold evidence (the others are null)")

    bars: dict[str, dict[str, float]] = {}
    for n in ns:
        started = time.perf_counter()
        ours: list[Scores] = []
        naive: list[Scores] = []
        curves: list[list[Scores]] = []
        passages: list[int] = []
        subs: list[int] = []
        for i, q in enumerate(questions, start=1):
            context = QueryDecompositionContext(
                index=name, max_sub_questions=n, top_k=args.k, retrieval_mode=mode
            )
            config = {"configurable": {"thread_id": f"table1-{n}-{q.id}"}}
            graph.invoke({"question": q.question}, config, context=context)
            state = graph.get_state(config).values  # the whole state: the output schema has no sub-questions
            evidence = state["evidence"]
            hops = max(item["hop"] for item in evidence)
            per_hop = [evidence_spans([e for e in evidence if e["hop"] == r]) for r in range(1, hops + 1)]
            curve = hop_prf(q.evidence, per_hop)
            curves.append(curve)
            ours.append(curve[-1])
            same = search_evidence(index, q.question, len(evidence), 1, mode=mode)
            naive.append(hop_prf(q.evidence, [evidence_spans(same)])[-1])
            passages.append(len(evidence))
            subs.append(len(state["sub_questions"]))
            print(f"  N={n}: {i}/{len(questions)}", end="\r", flush=True)
        seconds = time.perf_counter() - started
        print(
            f"\nN = {n}: {sum(subs) / len(subs):.2f} sub-queries, {sum(passages) / len(passages):.1f} "
            f"distinct passages per query; {seconds:.0f} s"
        )
        print("| retrieval | " + " | ".join(PRF) + " |\n|---|---|---|---|")
        print(f"| decomposition, N = {n} | " + " | ".join(interval([s[j] for s in ours]) for j in range(3)))
        print("| NaiveRAG, same passages | " + " | ".join(interval([s[j] for s in naive]) for j in range(3)))
        print(
            "| decomposition - NaiveRAG (paired) | "
            + " | ".join(difference([s[j] for s in ours], [s[j] for s in naive]) for j in range(3))
        )
        print(f"| seed 004, N = {n} | " + " | ".join(f"{v:.3f}" for v in SEED.get(n, (float("nan"),) * 3)))
        print(
            "by hop r (P / R / F1): "
            + "; ".join(f"r={r}: {p:.3f} / {rc:.3f} / {f:.3f}" for r, p, rc, f in macro_by_hop(curves, n))
        )
        bars[f"decomposition N={n}"] = {m: sum(s[j] for s in ours) / len(ours) for j, m in enumerate(PRF)}
        bars[f"NaiveRAG, N={n}'s passages"] = {
            m: sum(s[j] for s in naive) / len(naive) for j, m in enumerate(PRF)
        }
    title = f"MultiHop-RAG, {len(questions)} queries: retrieval after all N sub-queries ({mode})"
    print(f"plot: {plot_budget_bars(bars, title, args.plot, xlabel='precision / recall / F1')}")


if __name__ == "__main__":
    main()
