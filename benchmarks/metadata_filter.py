"""Multi-Meta-RAG's metadata filter on MultiHop-RAG: how often a filter is extracted, how often it is right,
and what it does to retrieval, beside NaiveRAG's retrieval and the same pipeline without the filter.

    .venv/bin/python -m benchmarks.metadata_filter [--limit N] [--llm N] [--index NAME]

Every row runs Multi-Meta-RAG's own nodes (nodes.metadata.ExtractMetadata, nodes.retrieve.Retrieve,
nodes.rerank.RerankCandidates with the configured reranker) over the full corpus indexed with the metadata
extra, on the non-null dev queries, with the method's defaults (K = 20 candidates, 10 kept):
- naive: hybrid top-10 for the question, NaiveRAG's retrieval at k = 10;
- unfiltered + rerank: Multi-Meta-RAG with `metadata_filter` off;
- matcher + rerank: the filter from the deterministic source-name matcher (no LLM: every query);
- llm + rerank: the filter from the LLM extractor, on the first N queries of --llm (the other rows are
  then printed again on those N queries, so they compare on the same questions).

Columns: `filtered` the share of queries given a filter; `right` the share of those whose every gold
evidence document passes it (its source in the filter's, its date in the filter's range); Hits@4 /
Hits@10 the share of gold facts in the top 4 / 10 (this harness's Hits@k, which is its Recall@k);
hop-F1@10 the hop-conditioned F1 of the 10 kept (one retrieval round); ms/query the retrieval time per
query without the LLM (extraction by the matcher included, the LLM's call excluded).

The index is built once under its own name (indexing the corpus embeds 609 articles: minutes on a
laptop CPU); later runs reuse it, and --index names an existing index to add the extra to instead.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from evals.datasets import QAExample, load_benchmark
from evals.metrics import hits_at_k, hop_prf
from evals.runner import evidence_spans
from hopgraph import Settings, index_corpus, services_for
from nodes.context import MultiMetaContext
from nodes.metadata import ExtractMetadata
from nodes.rerank import RerankCandidates
from nodes.retrieve import Retrieve, search_evidence
from nodes.state import Evidence, MetadataFilter
from stores.documents import Document
from stores.metadata import timestamp

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "multihop_rag"
KEPT = 10


@dataclass(frozen=True)
class Run:
    """What a node reads of LangGraph's runtime: the run's context."""

    context: MultiMetaContext


@dataclass(frozen=True)
class Scored:
    """One query through one pipeline: whether it got a filter and whether that was right (None for
    pipelines without one), its retrieval scores and its retrieval seconds."""

    filtered: bool | None
    right: bool | None
    hits4: float
    hits10: float
    hop_f1: float
    seconds: float


def scored(
    question: QAExample,
    evidence: Sequence[Evidence],
    seconds: float,
    filtered: bool | None = None,
    right: bool | None = None,
) -> Scored:
    spans = evidence_spans(evidence)
    return Scored(
        filtered,
        right,
        hits_at_k(question.evidence, spans, 4) or 0.0,
        hits_at_k(question.evidence, spans, KEPT) or 0.0,
        hop_prf(question.evidence, [spans[:KEPT]])[0][2],
        seconds,
    )


def cells(results: Sequence[Scored]) -> list[str]:
    """The table's cells of a pipeline over `results`."""
    n = len(results)

    def mean(values: Sequence[float]) -> str:
        return f"{sum(values) / n:.3f}"

    with_filter = [r for r in results if r.filtered]
    filters = results[0].filtered is not None
    return [
        mean([float(bool(r.filtered)) for r in results]) if filters else "-",
        f"{sum(bool(r.right) for r in with_filter) / len(with_filter):.3f}" if with_filter else "-",
        mean([r.hits4 for r in results]),
        mean([r.hits10 for r in results]),
        mean([r.hop_f1 for r in results]),
        f"{1000 * sum(r.seconds for r in results) / n:.1f}",
    ]


def passes(doc: Document, chosen: MetadataFilter) -> bool:
    """Whether a gold document gets through the filter (the question's filter was right for it)."""
    if chosen["sources"] and doc.metadata.get("source") not in chosen["sources"]:
        return False
    stamp = timestamp(doc.metadata.get("published_at"))
    day = None if stamp is None else time.strftime("%Y-%m-%d", time.gmtime(stamp))
    if chosen["date_from"] and (day is None or day < chosen["date_from"]):
        return False
    return not (chosen["date_to"] and (day is None or day > chosen["date_to"]))


def filtered_pipeline(
    services: Any, context: MultiMetaContext, docs: dict[str, Document], notes: list[str]
) -> Callable[[QAExample], Scored]:
    """Extract (unless the filter is off), retrieve K through the filter, rerank, keep 10: the graph's
    nodes before `generate`, timed without the LLM's call."""
    extract = ExtractMetadata(services.llm, services.indexes, MultiMetaContext)
    retrieve = Retrieve(
        services.indexes,
        where=lambda state: state.get("metadata_where"),
        into="gathered",
        context=MultiMetaContext,
        depth="candidates",
        filled_below="answer_k",
    )
    rerank = RerankCandidates(services.reranker)
    runtime = Run(context)

    def one(question: QAExample) -> Scored:
        state: dict[str, Any] = {"question": question.question}
        started = time.perf_counter()
        llm_seconds = 0.0
        filtered = right = None
        if context.metadata_filter:
            update = extract(state, runtime)
            llm_seconds = sum(usage["seconds"] for usage in update["usage"])
            state.update(update)
            notes.extend(update["fallbacks"])
            filtered = update["metadata_where"] is not None
            gold_docs = [docs[gold.doc_id] for gold in question.evidence]
            right = filtered and all(passes(doc, update["metadata_filter"]) for doc in gold_docs)
        retrieved = retrieve(state, runtime)
        notes.extend(retrieved.get("fallbacks", []))
        state.update(retrieved)
        evidence = rerank(state, runtime)["evidence"]
        return scored(question, evidence, time.perf_counter() - started - llm_seconds, filtered, right)

    return one


def print_rows(title: str, rows: dict[str, list[Scored]]) -> None:
    print(f"\n{title}\n")
    print("| retrieval | filtered | right | Hits@4 | Hits@10 | hop-F1@10 | ms/query |")
    print("|---|---|---|---|---|---|---|")
    for name, results in rows.items():
        print(f"| {name} | " + " | ".join(cells(results)) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=int, default=None, help="first N non-null queries")
    parser.add_argument("--llm", type=int, default=0, help="also extract with the LLM on the first N")
    parser.add_argument("--index", default="bench-multihop-rag-meta", help="index name (built if missing)")
    args = parser.parse_args()

    settings = Settings()
    bench = load_benchmark("multihop_rag", DATA)
    started = time.perf_counter()
    built = index_corpus(bench.corpus, args.index, settings, extras=["metadata"])
    print(f"index: {built.status}, {built.manifest.chunks} chunks, {time.perf_counter() - started:.0f} s")
    services = services_for(settings)
    index = services.indexes.open(args.index)
    docs = {doc.id: doc for doc in bench.corpus}
    questions = [q for q in bench.examples if q.evidence][: args.limit]

    notes: list[str] = []
    context = MultiMetaContext(index=args.index)
    pipelines: dict[str, Callable[[QAExample], Scored]] = {
        "naive (hybrid top-10)": lambda question: naive(index, question),
        "unfiltered + rerank": filtered_pipeline(
            services, replace(context, metadata_filter=False), docs, notes
        ),
        "matcher + rerank": filtered_pipeline(services, replace(context, extractor="matcher"), docs, notes),
    }
    rows = {name: [one(question) for question in questions] for name, one in pipelines.items()}
    print_rows(f"MultiHop-RAG, {len(questions)} non-null dev queries", rows)
    print(f"\nfilters topped up from unfiltered search (matcher row): {len(notes)}")
    if args.llm:
        notes.clear()
        first = questions[: args.llm]
        llm = filtered_pipeline(services, replace(context, extractor="llm"), docs, notes)
        on_first = {name: results[: len(first)] for name, results in rows.items()}
        on_first["llm + rerank"] = [llm(question) for question in first]
        print_rows(f"The first {len(first)} of them, with the LLM extractor", on_first)
        print(f"\nfallbacks of the LLM row: {len(notes)}; the first five: {notes[:5]}")


def naive(index: Any, question: QAExample) -> Scored:
    """NaiveRAG's retrieval: hybrid top-10 for the question."""
    started = time.perf_counter()
    evidence = search_evidence(index, question.question, KEPT, 1)
    return scored(question, evidence, time.perf_counter() - started)


if __name__ == "__main__":
    main()
