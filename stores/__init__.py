"""Corpus ingestion and everything hopgraph persists about a corpus: documents, chunks, Chroma, BM25."""
