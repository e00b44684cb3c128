"""Multi-Meta-RAG's metadata filter on MultiHop-RAG: how often a filter is extracted, how often it is right,
and what it does to retrieval, beside NaiveRAG's retrieval and the same pipeline without the filter.

    .venv/bin/python -m benchmarks.metadata_filter [--limit N] [--llm N] [--index NAME]

Every row runs a method's own graph (compiled as for `hopgraph ask`), streamed up to its last retrieval
node and stopped there, before the reader's call, over the full corpus indexed with the metadata extra, on
the non-null dev queries, with the method's defaults (Multi-Meta-RAG: K = 20 candidates, 10 kept):
- naive: hybrid top-10 for the question, NaiveRAG's retrieval at k = 10;
- unfiltered + rerank: Multi-Meta-RAG with `metadata_filter` off;
- matcher + rerank: the filter from the deterministic source-name matcher (no LLM: every query);
- llm + rerank: the filter from the LLM extractor, on the first N queries of --llm (the other rows are
  then printed again on those N queries, so they compare on the same questions).

Columns: `filtered` the share of queries given a filter; `right` the share of those whose every gold
evidence document passes it (its source in the filter's, its date on a named day or in the filter's
range); Recall@4 / Recall@10 the mean share of a query's gold facts found in its top 4 / 10
(evals.metrics' matching rules); Hits@4 / Hits@10 (official) the share of queries with at least one gold
fact in the top 4 / 10, and MAP@10 / MRR@10 (official), as MultiHop-RAG's own retrieval_evaluate.py
computes them (evals.metrics.multihop_rag_official), the metrics Multi-Meta-RAG publishes (Hits@4 0.663
-> 0.792) and the only ones to set beside its numbers; hop-F1@10 the hop-conditioned F1 of the 10 kept
(one retrieval round); ms/query the retrieval time per query without the LLM (extraction by the matcher
included, the LLM's call excluded).

The index is built once under its own name (indexing the corpus embeds 609 articles: minutes on a
laptop CPU); later runs reuse it, and --index names an existing index to add the extra to instead.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from benchmarks import SHARED_DATA
from evals.datasets import QAExample, load_benchmark
from evals.metrics import dedupe_spans, hop_prf, multihop_rag_official, recall_at_k
from evals.runner import evidence_spans
from hopgraph import Settings, build_graph, index_corpus
from stores.documents import Document
from stores.evidence import Evidence
from stores.metadata import MetadataInfo, MetadataParams, timestamp

DATA = SHARED_DATA / "multihop_rag"
KEPT = 10
# MultiHop-RAG's own metrics (evals.metrics.multihop_rag_official's keys) and their column headers.
OFFICIAL = {
    "hits@4": "Hits@4 (official)",
    "hits@10": "Hits@10 (official)",
    "map@10": "MAP@10 (official)",
    "mrr@10": "MRR@10 (official)",
}


@dataclass(frozen=True)
class Scored:
    """One query through one pipeline: whether it got a filter and whether that was right (None for
    pipelines without one), its retrieval scores (`official`: MultiHop-RAG's own, None for a query without
    gold facts) and its retrieval seconds."""

    filtered: bool | None
    right: bool | None
    recall4: float
    recall10: float
    official: Mapping[str, float] | None
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
    ranked = [span.text for span in dedupe_spans(spans)]  # the units in rank order, as Recall@k counts them
    return Scored(
        filtered,
        right,
        recall_at_k(question.evidence, spans, 4) or 0.0,
        recall_at_k(question.evidence, spans, KEPT) or 0.0,
        multihop_rag_official([gold.text for gold in question.evidence], ranked),
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
    # averaged over the queries with gold facts, as the benchmark's script averages them
    official = [r.official for r in results if r.official is not None]
    return [
        mean([float(bool(r.filtered)) for r in results]) if filters else "-",
        f"{sum(bool(r.right) for r in with_filter) / len(with_filter):.3f}" if with_filter else "-",
        mean([r.recall4 for r in results]),
        mean([r.recall10 for r in results]),
        *(f"{sum(o[key] for o in official) / len(official):.3f}" if official else "-" for key in OFFICIAL),
        mean([r.hop_f1 for r in results]),
        f"{1000 * sum(r.seconds for r in results) / n:.1f}",
    ]


def passes(doc: Document, where: Mapping[str, Any]) -> bool:
    """Whether a gold document gets through the filter's Chroma `where` (the question's filter was right
    for it), read as Chroma reads it on the document's source and numeric date."""
    info = MetadataInfo(params=MetadataParams())
    stored = {
        info.params.source_field: doc.metadata.get(info.params.source_field),
        info.timestamp_field: timestamp(doc.metadata.get(info.params.date_field)),
    }
    return admits(where, stored)


def admits(where: Mapping[str, Any], stored: Mapping[str, Any]) -> bool:
    """Chroma's `where` operators that nodes.metadata writes ($and, $or, $in, $gte, $lte) on one record."""
    [(key, value)] = where.items()
    if key == "$and":
        return all(admits(clause, stored) for clause in value)
    if key == "$or":
        return any(admits(clause, stored) for clause in value)
    [(operator, operand)] = value.items()
    held = stored.get(key)
    if held is None:
        return False
    return {"$in": lambda: held in operand, "$gte": lambda: held >= operand, "$lte": lambda: held <= operand}[
        operator
    ]()


def retrieval(
    graph: Any, method: str, context: Mapping[str, Any], docs: dict[str, Document]
) -> Callable[[QAExample], tuple[Scored, list[str]]]:
    """One question through `graph` up to its evidence (NaiveRAG's `retrieve`, Multi-Meta-RAG's
    `rerank`), stopped before `generate`: scored, with its `fallbacks` lines. Seconds exclude the LLM's."""
    last = "rerank" if method == "multimeta" else "retrieve"

    def one(question: QAExample) -> tuple[Scored, list[str]]:
        updates: dict[str, Any] = {}
        started = time.perf_counter()
        stream = graph.stream({"question": question.question}, context=dict(context), stream_mode="updates")
        for chunk in stream:
            updates.update(chunk)
            if last in chunk:
                break
        stream.close()  # the reader never runs
        seconds = time.perf_counter() - started
        extracted = updates.get("extract_metadata")
        notes = [note for update in updates.values() for note in update.get("fallbacks", [])]
        if extracted is None:
            return scored(question, updates[last]["evidence"], seconds), notes
        seconds -= sum(usage["seconds"] for usage in extracted["usage"])
        filtered = extracted["metadata_where"] is not None
        gold_docs = [docs[gold.doc_id] for gold in question.evidence]
        right = filtered and all(passes(doc, extracted["metadata_where"]) for doc in gold_docs)
        return scored(question, updates[last]["evidence"], seconds, filtered, right), notes

    return one


def print_rows(title: str, rows: dict[str, list[Scored]]) -> None:
    print(f"\n{title}\n")
    headers = ["filtered", "right", "Recall@4", "Recall@10", *OFFICIAL.values(), "hop-F1@10", "ms/query"]
    print("| retrieval | " + " | ".join(headers) + " |")
    print("|---" * (len(headers) + 1) + "|")
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
    docs = {doc.id: doc for doc in bench.corpus}
    questions = [q for q in bench.examples if q.evidence][: args.limit]

    graphs = {method: build_graph(method, settings, checkpointer=False) for method in ("naive", "multimeta")}
    rows_of: dict[str, tuple[str, dict[str, Any]]] = {
        "naive (hybrid top-10)": ("naive", {"top_k": KEPT}),
        "unfiltered + rerank": ("multimeta", {"metadata_filter": False}),
        "matcher + rerank": ("multimeta", {"extractor": "matcher"}),
    }
    rows: dict[str, list[Scored]] = {}
    notes: dict[str, list[str]] = {}
    for name, (method, context) in rows_of.items():
        one = retrieval(graphs[method], method, {"index": args.index, **context}, docs)
        one(questions[0])  # loads the models the row uses, so no query's time includes loading them
        results = [one(question) for question in questions]
        rows[name] = [result for result, _ in results]
        notes[name] = [note for _, lines in results for note in lines]
    print_rows(f"MultiHop-RAG, {len(questions)} non-null dev queries", rows)
    print(f"\nfilters topped up from unfiltered search (matcher row): {len(notes['matcher + rerank'])}")
    if args.llm:
        first = questions[: args.llm]
        llm = retrieval(graphs["multimeta"], "multimeta", {"index": args.index, "extractor": "llm"}, docs)
        results = [llm(question) for question in first]
        on_first = {name: scored_rows[: len(first)] for name, scored_rows in rows.items()}
        on_first["llm + rerank"] = [result for result, _ in results]
        print_rows(f"The first {len(first)} of them, with the LLM extractor", on_first)
        llm_notes = [note for _, lines in results for note in lines]
        print(f"\nfallbacks of the LLM row: {len(llm_notes)}; the first five: {llm_notes[:5]}")


if __name__ == "__main__":
    main()
