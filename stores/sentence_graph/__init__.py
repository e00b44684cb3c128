"""ChainRAG's sentence graph (paper section 3.1): sentences as nodes, three labelled kinds of edges.

- EC (entity co-occurrence): two sentences share a key entity. A sentence's key entities are the top
  alpha% of its spaCy entities by BM25 importance (the entity is the term, the sentences the collection).
- SS (semantic similarity): one sentence is among the other's `similar_m` most similar by embedding.
- SA (structural adjacency): same document, at most `window` sentences apart.

Edges are stored compactly, because a hub entity ("2023", "Google") sits in thousands of sentences and
would otherwise materialise millions of EC edges: EC as an inverted index (key entity -> sentences), SS as
CSR arrays, SA not at all (a document's sentences are numbered consecutively, so adjacency is arithmetic).

    sentences/sentences.json.gz  spaCy's output per document (spans, text, entity mentions); written right
                                 after the spaCy pass, so a resumed or incremental build re-parses nothing
                                 it already has
    sentences/graph.npz          embeddings; sentence -> entities and sentence -> key entities (CSR);
                                 EC as the inverted index key entity -> sentences; SS as symmetric CSR
    sentences/entities.json.gz   display name of every entity, by entity number
    chroma/ collection "sentences"  the same sentences and vectors, for filtered vector search

The package follows the build's seams: `parse` (spaCy), `embedding` (the threaded embedder), `similarity`
(SS), `entities` (key entities and EC), `build` (the stages in order), `reader` (queries), `extra` (how
the index store builds and opens it); `records`, `csr` and `params` are what several of them share.
"""

from stores.sentence_graph.extra import SENTENCE_GRAPH
from stores.sentence_graph.params import SentenceGraphInfo, SentenceGraphParams
from stores.sentence_graph.reader import EDGE_KINDS, Sentence, SentenceGraph

__all__ = [
    "EDGE_KINDS",
    "SENTENCE_GRAPH",
    "Sentence",
    "SentenceGraph",
    "SentenceGraphInfo",
    "SentenceGraphParams",
]
