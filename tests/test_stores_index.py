"""Chunk indexes end to end: real Chroma, the real MiniLM embedding model, builds that resume and switch.

The extras mechanism is exercised with two tiny extras defined here (word counts of the chunks, and their
total, which depends on the counts), so it is tested apart from any real method's extra.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from embedders import Counting, MiniLM

from hopgraph.providers import SentenceTransformerEmbedder
from stores.chunking import chunk_corpus
from stores.documents import Document, load_corpus
from stores.errors import IndexMismatchError, IndexNotFoundError
from stores.extra_registry import EXTRAS
from stores.extras import Extra, ExtraBuild, ExtraMissingError, ExtraSource, UnknownExtraError
from stores.files import LinkedPathError
from stores.index import EMBED_BATCH, IndexParams, IndexStore, Manifest

CORPORA = Path(__file__).parent / "fixtures" / "corpora"
MULTIHOP = CORPORA / "multihop_rag.json"
FOX = (
    "https://www.foxnews.com/entertainment/"
    "robin-williams-drug-addiction-made-monster-friends-recall-depth-actors-cocaine-use"
)
BEARS = (
    "https://www.sportingnews.com/us/nfl/news/bears-hail-mary-darnell-mooney-browns/ee147cccbf7ad4ae91ce0ea1"
)
SBF = "https://techcrunch.com/2023/10/06/sbf-trial-the-latest-updates-from-the-ftx-collapses-courtroom-drama/"
PARAMS = IndexParams(chunk_size=64, chunk_overlap=16)


@pytest.fixture(scope="module")
def torch_minilm() -> SentenceTransformerEmbedder:
    """MiniLM through sentence-transformers, the backend builds were made with before manifests named one:
    the tests pinning build ids check those builds keep theirs."""
    return SentenceTransformerEmbedder("all-MiniLM-L6-v2")


@pytest.fixture
def store(tmp_path: Path) -> Iterator[IndexStore]:
    yield IndexStore(tmp_path / "indexes")


def chunks_seen_by_another_process(chroma_dir: Path) -> int:
    """Count the collection from a fresh interpreter, which cannot share this process's Chroma state."""
    script = (
        "import sys, chromadb\n"
        "settings = chromadb.config.Settings(anonymized_telemetry=False)\n"
        "client = chromadb.PersistentClient(path=sys.argv[1], settings=settings)\n"
        "print(client.get_collection('chunks').count())\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(chroma_dir)], capture_output=True, text=True, check=True
    )
    return int(done.stdout.split()[-1])


def top_doc(index: Any, query: str, mode: str, **kwargs: Any) -> str:
    return index.search(query, k=3, mode=mode, **kwargs)[0].chunk.doc_id


def test_build_and_search_all_modes(store: IndexStore, minilm: MiniLM) -> None:
    stages: list[tuple[str, int, int]] = []
    result = store.build("news", MULTIHOP, minilm, PARAMS, progress=lambda *event: stages.append(event))
    docs = load_corpus(MULTIHOP)
    chunks = chunk_corpus(docs, minilm.token_spans, PARAMS.chunk_size, PARAMS.chunk_overlap)
    assert result.status == "built"
    manifest = result.manifest
    assert (manifest.documents, manifest.chunks) == (3, len(chunks))
    assert manifest.embedding_model == "all-MiniLM-L6-v2" and manifest.dimension == 384
    assert manifest.corpus_path == str(MULTIHOP.resolve()) and manifest.params == PARAMS
    assert {stage for stage, _, _ in stages} == {"chunk", "embed", "bm25"}
    assert ("embed", len(chunks), len(chunks)) in stages and ("chunk", 3, 3) in stages

    index = store.open("news", minilm)
    query = "Which comedian's cocaine addiction was described in a documentary?"
    for mode in ("dense", "bm25", "hybrid"):
        hits = index.search(query, k=3, mode=mode)
        assert hits[0].chunk.doc_id == FOX, mode
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert top_doc(index, "Darnell Mooney nearly caught the Hail Mary for Chicago", "hybrid") == BEARS
    assert top_doc(index, "Sam Bankman-Fried testimony at the FTX fraud trial", "dense") == SBF
    dense = index.search(query, k=2, mode="dense")
    assert 0.0 < dense[0].score <= 1.0

    by_id = {doc.id: doc for doc in docs}
    assert index.all_chunks() == chunks
    for hit in index.search(query, k=5):
        doc = by_id[hit.chunk.doc_id]
        assert hit.chunk.text == doc.text[hit.chunk.char_start : hit.chunk.char_end]
        assert hit.chunk.metadata == doc.metadata
    ids = [chunks[3].id, chunks[0].id]
    assert [c.id for c in index.get(ids)] == ids
    vectors = index.embeddings(ids)
    assert vectors.shape == (2, 384) and vectors.dtype == np.float32
    expected = minilm.embed([chunks[3].indexed_text, chunks[0].indexed_text])
    assert np.allclose(vectors, expected, atol=1e-5)
    with pytest.raises(KeyError, match="nope#0"):
        index.get(["nope#0"])


def test_where_filter_on_source(store: IndexStore, minilm: MiniLM) -> None:
    store.build("news", MULTIHOP, minilm, PARAMS)
    index = store.open("news", minilm)
    query = "a Hail Mary"
    assert top_doc(index, query, "bm25") == BEARS
    for mode in ("dense", "bm25", "hybrid"):
        hits = index.search(query, k=5, mode=mode, where={"source": "TechCrunch"})
        assert hits and {h.chunk.metadata["source"] for h in hits} == {"TechCrunch"}, mode
        hits = index.search(
            query, k=50, mode=mode, where={"source": {"$in": ["TechCrunch", "Sporting News"]}}
        )
        assert {h.chunk.doc_id for h in hits} == {SBF, BEARS}, mode
    assert index.search(query, k=5, mode="bm25", where={"source": "Nobody"}) == []


def test_unchanged_corpus_is_not_rebuilt(
    store: IndexStore, torch_minilm: SentenceTransformerEmbedder
) -> None:
    minilm = torch_minilm
    first = store.build("news", MULTIHOP, minilm, PARAMS)
    # Pinned: measured results and evaluation response caches are keyed by build id (computed before extras).
    assert first.manifest.build_id == "84430ca03dc69514"
    counting = Counting(minilm)
    again = store.build("news", MULTIHOP, counting, PARAMS)
    assert again.status == "unchanged" and counting.calls == 0
    assert again.manifest == first.manifest
    assert store.open("news", minilm) is store.open("news", counting)
    assert store.exists("news") and [m.name for m in store.list()] == ["news"]
    other = store.build("news", MULTIHOP, counting, IndexParams(chunk_size=48, chunk_overlap=8))
    assert other.status == "built" and other.manifest.build_id != first.manifest.build_id


def test_changed_corpus_switches_and_removes_old_build(store: IndexStore, minilm: MiniLM) -> None:
    docs = load_corpus(MULTIHOP)
    extra = Document(
        "kiwi", "Kiwi birds", "The kiwi is a flightless bird of New Zealand that lays huge eggs."
    )
    v1 = store.build("news", docs, minilm, PARAMS).manifest
    old_index = store.open("news", minilm)
    assert old_index.search("flightless bird that lays huge eggs", k=3, mode="bm25") == []

    counting = Counting(minilm)
    v2 = store.build("news", [*docs, extra], counting, PARAMS)
    assert v2.status == "built" and v2.manifest.build_id != v1.build_id
    assert counting.texts == 1  # unchanged chunks reuse the previous build's vectors
    builds = store.root / "news" / "builds"
    assert [p.name for p in builds.iterdir()] == [v2.manifest.build_id]
    assert os.readlink(store.root / "news" / "current") == f"builds/{v2.manifest.build_id}"
    index = store.open("news", minilm)
    assert index is not old_index and index.manifest.chunks == v1.chunks + 1
    assert top_doc(index, "flightless bird that lays huge eggs", "hybrid") == "kiwi"

    # Changing the corpus back recreates the deleted build's folder; Chroma must not reuse stale state.
    back = store.build("news", docs, counting, PARAMS)
    assert back.manifest.build_id == v1.build_id and counting.texts == 1
    restored = store.open("news", minilm)
    assert restored.manifest.chunks == v1.chunks
    assert chunks_seen_by_another_process(store.root / "news" / "current" / "chroma") == v1.chunks
    assert top_doc(restored, "Which comedian's cocaine addiction was described?", "dense") == FOX


def test_interrupted_build_keeps_old_index_and_resumes(store: IndexStore, minilm: MiniLM) -> None:
    store.build("news", CORPORA / "articles.jsonl", minilm, PARAMS)
    small = IndexParams(chunk_size=8, chunk_overlap=2)
    total = len(
        chunk_corpus(load_corpus(MULTIHOP), minilm.token_spans, small.chunk_size, small.chunk_overlap)
    )
    assert total > EMBED_BATCH  # so the crash lands after one batch is stored

    crashing = Counting(minilm, fail_after=1)
    with pytest.raises(RuntimeError, match="simulated crash"):
        store.build("news", MULTIHOP, crashing, small)
    assert crashing.texts == EMBED_BATCH
    (partial,) = [p for p in (store.root / "news" / "builds").iterdir() if (p / ".incomplete").exists()]
    assert chunks_seen_by_another_process(partial / "chroma") == EMBED_BATCH  # the stored batch is durable

    for reader in (store, IndexStore(store.root)):  # this process, and a fresh one
        index = reader.open("news", minilm)
        assert index.manifest.documents == 3 and index.manifest.params == PARAMS
        assert top_doc(index, "espresso pressure and ground coffee", "hybrid") == "espresso"
        (glacier,) = index.get(["glacier#0"])
        assert glacier.metadata == {"source": "Climate Desk", "year": 2022, "peer_reviewed": False}
    assert [m.corpus_path for m in store.list()] == [str((CORPORA / "articles.jsonl").resolve())]

    counting = Counting(minilm)
    resumed = store.build("news", MULTIHOP, counting, small)
    assert resumed.status == "resumed"
    assert counting.texts == total - EMBED_BATCH
    index = store.open("news", minilm)
    assert index.manifest.chunks == total and len(index.all_chunks()) == total
    assert top_doc(index, "Sam Bankman-Fried testimony at the FTX fraud trial", "dense") == SBF
    assert len(list((store.root / "news" / "builds").iterdir())) == 1


def test_an_interrupted_builds_marker_planted_as_a_link_is_refused(
    store: IndexStore, minilm: MiniLM, tmp_path: Path
) -> None:
    """A copied data directory may hold an interrupted build whose `.incomplete` marker links elsewhere:
    resuming it refuses the link in one line, and creates nothing where it points."""
    small = IndexParams(chunk_size=8, chunk_overlap=2)
    with pytest.raises(RuntimeError, match="simulated crash"):
        store.build("news", MULTIHOP, Counting(minilm, fail_after=1), small)
    (partial,) = [p for p in (store.root / "news" / "builds").iterdir() if (p / ".incomplete").exists()]
    outside = tmp_path / "elsewhere" / "created-through-the-link"
    outside.parent.mkdir()
    (partial / ".incomplete").unlink()
    (partial / ".incomplete").symlink_to(outside)
    with pytest.raises(LinkedPathError, match=r"\.incomplete: this file is a symbolic link"):
        store.build("news", MULTIHOP, minilm, small)
    assert not outside.exists()


def test_open_missing_index_says_so_without_naming_the_others(store: IndexStore, minilm: MiniLM) -> None:
    """The store's message reaches Studio and API callers, who may be anyone reaching the server: it names
    neither the other indexes nor the data directory (the command line adds the names for its user)."""
    store.build("news", CORPORA / "articles.jsonl", minilm, PARAMS)
    with pytest.raises(IndexNotFoundError) as error:
        store.open("nope", minilm)
    assert str(error.value) == "No index named 'nope'. Build it with `hopgraph index PATH --name nope`."
    assert not store.exists("nope")


def test_open_reuses_an_opened_build_without_reading_its_manifest(
    store: IndexStore, minilm: MiniLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    store.build("news", CORPORA / "articles.jsonl", minilm, PARAMS)
    first = store.open("news", minilm)
    monkeypatch.setattr(Manifest, "from_json", lambda text: pytest.fail("the manifest was read again"))
    assert store.open("news", minilm) is first


def test_open_with_other_model(store: IndexStore, minilm: MiniLM) -> None:
    store.build("news", CORPORA / "articles.jsonl", minilm, PARAMS)
    store.open("news", minilm)  # an opened build is still checked against the model it is opened with
    with pytest.raises(IndexMismatchError) as error:
        store.open("news", Counting(minilm, name="bge-small-en-v1.5"))
    message = str(error.value)
    assert "'all-MiniLM-L6-v2'" in message and "'bge-small-en-v1.5'" in message
    assert "hopgraph index PATH --name news" in message


@pytest.mark.parametrize("name", ["", "..", "a/b", "../x", ".hidden", "spaces here"])
def test_invalid_index_name(store: IndexStore, minilm: MiniLM, name: str) -> None:
    with pytest.raises(ValueError, match="invalid index name"):
        store.build(name, CORPORA / "articles.jsonl", minilm, PARAMS)


def test_folder_corpus_builds(store: IndexStore, minilm: MiniLM) -> None:
    result = store.build("notes", CORPORA / "notes", minilm)
    assert result.manifest.documents == 3 and result.manifest.chunks == 3
    index = store.open("notes", minilm)
    assert top_doc(index, "how do bees tell each other where flowers are", "hybrid") == "sub/bees.txt"
    assert (
        top_doc(index, "Iceland eruption ash cloud", "dense", where={"path": "volcanoes.md"})
        == "volcanoes.md"
    )


@dataclass(frozen=True)
class WordParams:
    """Build parameters of the test extras; like any extra's, they enter the build id."""

    min_length: int = 1


@dataclass
class WordInfo:
    params: WordParams
    value: int  # chunks counted, or the total


def words(text: str, params: WordParams) -> int:
    return sum(1 for word in text.split() if len(word) >= params.min_length)


class WordCounts(Extra[WordParams, WordInfo, dict[str, int]]):
    """Words per chunk, built chunk by chunk into one file each (so an interrupted build keeps the chunks
    it finished), then gathered into counts.json, which `open` reads."""

    name = "word_counts"
    description = "words per chunk (a test extra)"
    params_type = WordParams
    directory = "word_counts"

    def __init__(self) -> None:
        self.crash_after: int | None = None
        self.counted = 0  # chunks counted by every build so far

    def build(self, job: ExtraBuild[WordParams]) -> tuple[WordInfo, bool]:
        counts, resumed = {}, False
        for position, chunk in enumerate(job.chunks()):
            done = job.directory / f"{position}.txt"
            if done.exists():
                resumed = True
            else:
                if self.crash_after is not None and self.counted >= self.crash_after:
                    raise RuntimeError("simulated crash while counting")
                done.write_text(str(words(chunk.text, job.params)))
                self.counted += 1
            counts[chunk.id] = int(done.read_text())
        (job.directory / "counts.json").write_text(json.dumps(counts))
        return WordInfo(job.params, len(counts)), resumed

    def open(self, source: ExtraSource[WordInfo]) -> dict[str, int]:
        return json.loads((source.directory / "counts.json").read_text())

    def info_from_dict(self, data: dict[str, Any]) -> WordInfo:
        return WordInfo(WordParams(**data["params"]), data["value"])


class WordTotal(Extra[WordParams, WordInfo, tuple[int, dict[str, int]]]):
    """The sum of the word counts: built from, and opened with, the extra it depends on."""

    name = "word_total"
    description = "total words (a test extra)"
    params_type = WordParams
    directory = "word_total"
    depends_on = ("word_counts",)

    def __init__(self) -> None:
        self.built = 0

    def build(self, job: ExtraBuild[WordParams]) -> tuple[WordInfo, bool]:
        self.built += 1
        total = sum(job.dependencies["word_counts"].values())
        (job.directory / "total.txt").write_text(str(total))
        return WordInfo(job.params, total), False

    def open(self, source: ExtraSource[WordInfo]) -> tuple[int, dict[str, int]]:
        return int((source.directory / "total.txt").read_text()), source.dependencies["word_counts"]

    def info_from_dict(self, data: dict[str, Any]) -> WordInfo:
        return WordInfo(WordParams(**data["params"]), data["value"])


@pytest.fixture
def word_extras(monkeypatch: pytest.MonkeyPatch) -> tuple[WordCounts, WordTotal]:
    counts, total = WordCounts(), WordTotal()
    monkeypatch.setitem(EXTRAS, counts.name, counts)
    monkeypatch.setitem(EXTRAS, total.name, total)
    return counts, total


def counted_by_hand(index: Any, params: WordParams) -> dict[str, int]:
    return {chunk.id: words(chunk.text, params) for chunk in index.all_chunks()}


def test_an_extra_builds_resumes_after_a_crash_and_opens_once(
    store: IndexStore, minilm: MiniLM, word_extras: tuple[WordCounts, WordTotal]
) -> None:
    counts, _ = word_extras
    chunk_only = store.build("news", MULTIHOP, minilm, PARAMS).manifest
    counts.crash_after = 2
    counting = Counting(minilm)
    with pytest.raises(RuntimeError, match="simulated crash"):
        store.build("news", MULTIHOP, counting, PARAMS, extras={"word_counts": WordParams()})
    assert counts.counted == 2 and store.current_manifest("news") == chunk_only  # the old build serves

    counts.crash_after = None
    result = store.build("news", MULTIHOP, counting, PARAMS, extras={"word_counts": WordParams()})
    assert result.status == "resumed" and counts.counted == chunk_only.chunks  # the rest, once each
    assert counting.texts == 0  # no chunk was embedded again, before or after the crash
    assert result.manifest.extras == {"word_counts": WordInfo(WordParams(), chunk_only.chunks)}
    assert result.manifest.build_id != chunk_only.build_id
    index = store.open("news", minilm)
    assert index.extra("word_counts") == counted_by_hand(index, WordParams())
    assert index.extra("word_counts") is index.extra("word_counts")
    # asked by its class, the extra comes back as its own reader (typed `dict[str, int]`), the same object
    assert index.extra(WordCounts) is index.extra("word_counts")
    assert IndexStore(store.root).current_manifest("news") == result.manifest  # info survives manifest.json


def test_adding_an_extra_keeps_the_chunks_and_the_extras_already_built(
    store: IndexStore, torch_minilm: SentenceTransformerEmbedder, word_extras: tuple[WordCounts, WordTotal]
) -> None:
    minilm = torch_minilm
    counts, word_total = word_extras
    first = store.build("news", MULTIHOP, minilm, PARAMS, extras={"word_counts": WordParams()}).manifest
    counting, stages = Counting(minilm), []
    both = {"word_total": WordParams(), "word_counts": WordParams()}
    result = store.build("news", MULTIHOP, counting, PARAMS, lambda *event: stages.append(event), extras=both)
    assert counting.texts == 0 and counts.counted == first.chunks  # chunks and word counts copied
    assert ("copy-chunks", first.chunks, first.chunks) in stages
    assert list(result.manifest.extras) == ["word_counts", "word_total"]  # dependencies first
    index = store.open("news", minilm)
    total, opened_counts = index.extra("word_total")
    assert opened_counts is index.extra("word_counts")  # a dependency is opened once and shared
    assert (
        total
        == sum(counted_by_hand(index, WordParams()).values())
        == result.manifest.extras["word_total"].value
    )
    same = store.build("news", MULTIHOP, counting, PARAMS, extras=dict(reversed(both.items())))
    assert same.status == "unchanged"  # the build id does not depend on the order extras are named in

    # Another parameter rebuilds that extra and what depends on it; a dependency comes with its defaults.
    longer = WordParams(min_length=5)
    changed = store.build("news", MULTIHOP, counting, PARAMS, extras={"word_total": longer}).manifest
    assert changed.extras["word_counts"].params == WordParams() and counts.counted == first.chunks
    assert word_total.built == 2
    assert changed.extras["word_total"] == WordInfo(longer, total)  # counts kept, so the same total

    dropped = store.build("news", MULTIHOP, counting, PARAMS).manifest
    assert dropped.extras == {} and dropped.build_id == "84430ca03dc69514" and counting.texts == 0
    with pytest.raises(ExtraMissingError, match=r"Index 'news' .* --name news --with word_total"):
        store.open("news", minilm).extra("word_total")


def test_an_unknown_extra_is_an_error_naming_the_known_ones(
    store: IndexStore, minilm: MiniLM, word_extras: tuple[WordCounts, WordTotal]
) -> None:
    known = (
        r"known extras: sentence_graph \(ChainRAG's sentence graph\); metadata \(filterable metadata[^)]*\); "
        r"questions \(hypothetical questions per chunk[^)]*\); question_graph \(BiQOG's question-chunk graph"
        r"[^)]*\); word_counts \(words per chunk"
    )
    with pytest.raises(UnknownExtraError, match=rf"Unknown index extra 'nope'; {known}"):
        store.build("news", MULTIHOP, minilm, PARAMS, extras={"nope": WordParams()})
    assert not (store.root / "news").exists()  # refused before any work
    store.build("news", MULTIHOP, minilm, PARAMS)
    with pytest.raises(UnknownExtraError, match="'nope'"):
        store.open("news", minilm).extra("nope")


def test_embedded_metadata_is_indexed_with_the_chunks_and_enters_the_build_id_only_when_set(
    store: IndexStore, torch_minilm: SentenceTransformerEmbedder
) -> None:
    minilm = torch_minilm
    docs = [
        Document(
            id="a", title="Harbour", text="The harbour bridge reopened.", metadata={"source": "Zephyr Post"}
        ),
        Document(
            id="b", title="Market", text="The fish market moved indoors.", metadata={"source": "Daily Tide"}
        ),
        Document(
            id="c", title="Ferry", text="The night ferry was cancelled.", metadata={"source": "Daily Tide"}
        ),
    ]
    plain = store.build("plain", docs, minilm, PARAMS).manifest
    tagged = store.build("tagged", docs, minilm, IndexParams(64, 16, embed_metadata=["source"])).manifest
    # the id indexes had before the option existed, so they are not rebuilt
    old_key = json.dumps(
        [plain.corpus_hash, minilm.name, {"chunk_size": 64, "chunk_overlap": 16}], sort_keys=True
    )
    assert plain.build_id == hashlib.sha256(old_key.encode("utf-8")).hexdigest()[:16]
    assert tagged.build_id != plain.build_id and tagged.params.embed_metadata == ["source"]

    # the source is searchable, the stored text is the document's own
    [hit] = store.open("tagged", minilm).search("Zephyr", 1, mode="bm25")
    assert hit.chunk.doc_id == "a" and hit.chunk.text == "The harbour bridge reopened." and hit.score > 0
    assert store.open("plain", minilm).search("Zephyr", 3, mode="bm25") == []
    assert store.current_manifest("tagged") == tagged  # the option survives the manifest's round trip
