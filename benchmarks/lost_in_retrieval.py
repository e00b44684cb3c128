"""Lost-in-retrieval on MuSiQue (ChainRAG paper, Table 2): Recall@2 of the gold sub-questions.

For each two-hop chain whose second gold sub-question refers to the first answer ("#1"), measure whether
the supporting paragraph is among the top 2 retrieved for: sub-question 1; sub-question 2 with "#1" turned
into the pronoun "it" (what a decomposer produces); sub-question 2 after ChainRAG's own rewrite (ChainRAG
answers sub-question 1 with its sentence-graph loop and the embedded LLM, then rewrites sub-question 2);
and sub-question 2 with the gold answer put in (the ceiling a rewrite can reach). Retrieval is hopgraph's
chunk index over the union of the questions' paragraphs (a paragraph is a document; a chunk counts for
its paragraph), dense and BM25, as in ../shared/peers/lost_in_retrieval.py.

    .venv/bin/python -m benchmarks.lost_in_retrieval [--limit N] [--word-limit 300]
"""

from __future__ import annotations

import argparse
import time

from benchmarks import SHARED_DATA
from evals.datasets import load_benchmark
from hopgraph import Settings, build_graph, index_corpus, services_for

DATA = SHARED_DATA / "musique"


def recall_at_2(index, query: str, gold_doc: str, mode: str) -> float:  # type: ignore[no-untyped-def]
    return float(gold_doc in {hit.chunk.doc_id for hit in index.search(query, 2, mode=mode)})


def rewrite_second(  # type: ignore[no-untyped-def]
    graph, question, sub_questions: list[str], context: dict, word_limit: int
) -> str:
    """Run ChainRAG on the gold sub-questions up to the rewrite of the second, and return what it asks.

    The decomposition is put in as if the decompose node had produced it; the graph then answers
    sub-question 1 (seed, expand, judge, answer) and prepares sub-question 2, and stops there: retrieval
    for sub-question 2 is what is measured here, with the query the rewrite produced. Each question is a
    checkpointed thread, so an interrupted benchmark resumes where it stopped.
    """
    config = {"configurable": {"thread_id": f"lost-in-retrieval:{question.id}:{word_limit}"}}
    if not graph.get_state(config).values.get("sub_questions"):
        graph.update_state(
            config,
            {"question": question.question, "sub_questions": sub_questions, "step": 0},
            as_node="decompose",
        )
    while not ((state := graph.get_state(config)).values.get("step") == 1 and state.next == ("seed",)):
        graph.invoke(None, config, context=context, interrupt_after=["prepare"])
    return state.values["query"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=int, default=None, help="first N qualifying questions")
    parser.add_argument("--word-limit", type=int, default=300, help="ChainRAG expansion word limit")
    args = parser.parse_args()

    settings = Settings()
    bench = load_benchmark("musique", DATA)
    chains = [
        q for q in bench.examples if len(q.decomposition) >= 2 and "#1" in q.decomposition[1]["question"]
    ]
    chains = chains[: args.limit]
    index_corpus(bench.corpus, "bench-musique", settings, method="chainrag")
    index = services_for(settings).indexes.open("bench-musique")
    graph = build_graph("chainrag", settings)
    context = {"index": "bench-musique", "word_limit": args.word_limit}

    variants = (
        "sub-question 1",
        "sub-question 2, '#1' as 'it'",
        "sub-question 2, ChainRAG rewrite",
        "sub-question 2, gold answer put in",
    )
    scores: dict[tuple[str, str], list[float]] = {}
    rewritten_count = 0
    started = time.perf_counter()
    for n, question in enumerate(chains, 1):
        first, second = question.decomposition[0], question.decomposition[1]
        pronoun = second["question"].replace("#1", "it")
        rewritten = rewrite_second(graph, question, [first["question"], pronoun], context, args.word_limit)
        rewritten_count += rewritten != pronoun
        queries = (first["question"], pronoun, rewritten, second["question"].replace("#1", first["answer"]))
        golds = (first["doc_id"], second["doc_id"], second["doc_id"], second["doc_id"])
        for variant, query, gold in zip(variants, queries, golds, strict=True):
            for mode in ("dense", "bm25"):
                scores.setdefault((variant, mode), []).append(recall_at_2(index, query, gold, mode))
        print(
            f"{n}/{len(chains)} {time.perf_counter() - started:.0f}s  {pronoun!r} -> {rewritten!r}",
            flush=True,
        )

    print(f"\nMuSiQue, {len(chains)} chains with '#1', {len(bench.corpus)} paragraphs, Recall@2 (%)\n")
    print("| query | dense | BM25 |\n|---|---|---|")
    for variant in variants:
        dense, bm25 = (100 * sum(scores[(variant, m)]) / len(chains) for m in ("dense", "bm25"))
        print(f"| {variant} | {dense:.1f} | {bm25:.1f} |")
    print(
        f"\nChainRAG changed sub-question 2 in {rewritten_count} of {len(chains)} chains "
        f"(word limit {args.word_limit}); {time.perf_counter() - started:.0f} s in all"
    )


if __name__ == "__main__":
    main()
