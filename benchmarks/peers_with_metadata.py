"""The plain dense and BM25 peers on MultiHop-RAG with every chunk carrying its article's source and date.

    .venv/bin/python -m benchmarks.peers_with_metadata [--limit N]

Issue 38 gave hopgraph's passages a metadata line (`source: TechCrunch · published_at: October 7, 2023
(2023-10-07)`), embedded, BM25-indexed, reranked and read; a peer without it would be compared at a
disadvantage. This runs the peers' own code unchanged (../shared/peers/plain_rag_peer.py and
bm25_peer.py: 1,000-character chunks with 128 overlap, all-MiniLM-L6-v2 or rank-bm25, their metrics),
only with their chunker wrapped so that each chunk of an article starts with the line hopgraph writes for
it (`stores.evidence.about_line`), and prints each peer's one-line JSON summary. The peers' numbers
without the line are in ../shared/peers/README.md.
"""

from __future__ import annotations

import argparse
import json
import runpy
import sys
from collections.abc import Callable, Iterator

from benchmarks.peer_scripts import PEERS, SHARED, command_line, load
from stores.evidence import about_line

CORPUS = SHARED / "data" / "multihop_rag" / "corpus.json"
QUERIES = SHARED / "data" / "multihop_rag" / "MultiHopRAG.json"
FIELDS = ("source", "published_at")  # hopgraph's default embed_metadata


def with_lines(chunks_of: Callable[[str, int, int], Iterator[str]], lines: dict[str, str]):  # type: ignore[no-untyped-def]
    """The peer's chunker, each chunk of a known article's text preceded by that article's line."""

    def chunked(text: str, size: int, overlap: int):  # type: ignore[no-untyped-def]
        line = lines.get(text)
        for chunk in chunks_of(text, size, overlap):
            yield f"{line}\n{chunk}" if line else chunk

    return chunked


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=0, help="first N non-null queries (dense peer only)")
    args = parser.parse_args()
    docs = json.loads(CORPUS.read_text(encoding="utf-8"))
    lines = {f"{d['title']}\n{d['body']}": about_line(d, FIELDS) for d in docs}
    dense = load("plain_rag_peer")
    dense.chunks_of = with_lines(dense.chunks_of, lines)
    sys.modules["plain_rag_peer"] = dense  # bm25_peer imports its chunker from here
    argv = [
        "plain_rag_peer",
        str(CORPUS),
        str(QUERIES),
        *(["--limit", str(args.limit)] if args.limit else []),
    ]
    print("plain dense peer, chunks with the metadata line:", flush=True)
    with command_line(argv):
        dense.main()
    print("plain BM25 peer, chunks with the metadata line:", flush=True)
    with command_line(["bm25_peer", str(CORPUS), str(QUERIES)]):
        runpy.run_path(str(PEERS / "bm25_peer.py"), run_name="__main__")


if __name__ == "__main__":
    main()
