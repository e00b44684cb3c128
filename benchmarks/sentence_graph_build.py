"""Build time of ChainRAG's sentence graph over MultiHop-RAG against the floor of its model passes.

The floor is ../shared/peers/sentence_graph_floor.py, run as it is on the same documents in this same
command (so both see the same machine load): spaCy over every article, MiniLM over every sentence, a
blocked top-10 similarity search. The build is `IndexStore.build(..., extras=...)` with the
chunk index of the same corpus already current, so it times what adding the graph to an index costs:
the sentence graph itself plus copying the chunk part into the new build (chunking and embedding the
chunks is the chunk index's cost, the same with or without a graph, and is done untimed beforehand).

    .venv/bin/python -m benchmarks.sentence_graph_build [--docs N]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

from hopgraph import Settings, services_for
from stores.documents import load_corpus
from stores.index import IndexParams, IndexStore
from stores.sentence_graph import SentenceGraphParams

SHARED = Path(__file__).resolve().parents[2] / "shared"
CORPUS = SHARED / "data" / "multihop_rag" / "corpus.json"
FLOOR = SHARED / "peers" / "sentence_graph_floor.py"


def run_floor(docs: int) -> dict[str, float]:
    """The floor script's own JSON line: spacy_s, embed_s, knn_top10_s (models load outside its timing)."""
    out = subprocess.run(
        [sys.executable, str(FLOOR), str(CORPUS), str(docs)], capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


class StageClock:
    """Prints each build stage as it starts, so a ten-minute run shows where it is."""

    def __init__(self) -> None:
        self.started = time.perf_counter()
        self.stage = ""

    def __call__(self, stage: str, done: int, total: int) -> None:
        if stage != self.stage:
            self.stage = stage
            print(f"  {time.perf_counter() - self.started:7.1f} s  {stage} ({total})", file=sys.stderr)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=None, help="first N articles (default: all 609)")
    args = parser.parse_args()

    docs = load_corpus(CORPUS)[: args.docs]
    settings = Settings()
    services = services_for(settings)
    store = IndexStore(settings.indexes_path)
    name = f"bench-sentence-graph-{len(docs)}"
    chunking = IndexParams(chunk_size=settings.chunk_size, chunk_overlap=settings.chunk_overlap)

    started = time.perf_counter()
    chunk_only = store.build(name, docs, services.embedder, chunking)
    print(
        f"chunk index (untimed setup): {chunk_only.status}, {time.perf_counter() - started:.0f} s",
        file=sys.stderr,
    )

    print("floor: running peers/sentence_graph_floor.py ...", file=sys.stderr)
    floor = run_floor(len(docs))
    floor_total = floor["spacy_s"] + floor["embed_s"] + floor["knn_top10_s"]

    print("build: IndexStore.build with the sentence graph ...", file=sys.stderr)
    nlp, embedder = services.nlp, services.embedder
    started = time.perf_counter()
    result = store.build(
        name,
        docs,
        embedder,
        chunking,
        StageClock(),
        extras={"sentence_graph": SentenceGraphParams()},
        models={"nlp": nlp},
    )
    total = time.perf_counter() - started
    info = result.manifest.extras.get("sentence_graph")
    assert info is not None and result.status == "built", result.status
    passes = info.seconds
    # spaCy and the embedder overlap: their wall time is spaCy's plus the wait for the embedder after it.
    parse_embed = passes["spacy"] + passes["embed_wait"]
    rest = total - parse_embed - passes["similarity"] - passes["graph"]

    print(
        f"\n{len(docs)} docs, {info.sentences} sentences (floor: {floor['sentences']}), "
        f"{info.entities} entities, {info.key_entities} key entities; "
        f"edges EC {info.ec_edges}, SS {info.ss_edges}, SA {info.sa_edges}"
    )
    print(
        f"floor  spaCy {floor['spacy_s']:7.1f} s   embed {floor['embed_s']:7.1f} s   "
        f"top-10 {floor['knn_top10_s']:6.1f} s   total {floor_total:7.1f} s"
    )
    print(
        f"build  spaCy + embed {parse_embed:7.1f} s (spaCy {passes['spacy']:.1f} s overlapped with the "
        f"embedder, then {passes['embed_wait']:.1f} s more; embedder busy {passes['embed']:.1f} s, "
        f"Chroma inserts {passes['chroma']:.1f} s)"
    )
    print(
        f"       top-10 {passes['similarity']:6.1f} s   graph {passes['graph']:5.1f} s   "
        f"chunk part copy + rest {rest:5.1f} s"
    )
    print(
        f"total  {total:.1f} s   overhead vs floor {total - floor_total:+.1f} s   "
        f"ratio {total / floor_total:.3f}"
    )
    print(
        json.dumps(
            {
                "docs": len(docs),
                "sentences": info.sentences,
                "floor_s": round(floor_total, 1),
                "floor": {key: floor[key] for key in ("spacy_s", "embed_s", "knn_top10_s")},
                "total_s": round(total, 1),
                "passes_s": passes,
                "spacy_embed_wall_s": round(parse_embed, 1),
                "rest_s": round(rest, 1),
                "ratio": round(total / floor_total, 3),
            }
        )
    )


if __name__ == "__main__":
    main()
