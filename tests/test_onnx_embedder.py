"""The onnx embedding backends (embedding_backend = "onnx" / "onnx-int8") on the real MiniLM and onnxruntime:
the export from the installed files, an interrupted export redone, vectors and token spans against torch's,
the setting, an index refusing the other backend's search, and the eval key.

The export lives in the machine's shared model folder (as `hopgraph model` leaves it), except in the test
that interrupts one, which exports into its own folder.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import MODEL_DIR, REPO

from graphs.treehop.model import CheckpointError, load_checkpoint
from hopgraph import onnx_export
from hopgraph.evaluate import model_identity
from hopgraph.onnx_export import RECORD, ensure_export, export_folder, made_from, model_source
from hopgraph.providers import SHIPPED_TREEHOP, OnnxEmbedder, SentenceTransformerEmbedder, embedder_for
from hopgraph.settings import Settings, SettingsError
from stores.errors import IndexMismatchError
from stores.index import IndexParams, IndexStore
from tests.test_cold_start import heavy_modules_after
from tests.test_settings import summary_of

NAME = "all-MiniLM-L6-v2"
ARTICLES = Path(__file__).parent / "fixtures" / "corpora" / "articles.jsonl"
SENTENCES = [
    "Mount St. Helens erupted in 1980.",
    "Bees dance to share where flowers are.",
    "Sam Bankman-Fried's trial began on October 3, 2023, in Manhattan federal court.",
    "Café owners in Zürich said “prices rose 12%” — naïve forecasts missed it.",
    " ".join(["The Bears' Hail Mary beat the Browns after a long, rain-soaked fourth quarter."] * 30),
]


@pytest.fixture(scope="module")
def torch() -> SentenceTransformerEmbedder:
    return SentenceTransformerEmbedder(NAME)


@pytest.fixture(scope="module")
def onnx() -> OnnxEmbedder:
    return OnnxEmbedder(NAME, "onnx", MODEL_DIR)


@pytest.fixture(scope="module")
def onnx_int8() -> OnnxEmbedder:
    return OnnxEmbedder(NAME, "onnx-int8", MODEL_DIR)


def test_fp32_vectors_and_token_spans_equal_torchs(
    torch: SentenceTransformerEmbedder, onnx: OnnxEmbedder
) -> None:
    """Equal vectors, past the 256-token window too (the last sentence), and the chunker's spans."""
    ours, theirs = onnx.embed(SENTENCES), torch.embed(SENTENCES)
    assert ours.shape == theirs.shape == (len(SENTENCES), 384) and ours.dtype == np.float32
    assert np.all(np.sum(ours * theirs, axis=1) > 0.9999)
    document = ARTICLES.read_text(encoding="utf-8")
    assert onnx.token_spans(document) == torch.token_spans(document)
    assert onnx.dimension == 384 and onnx.space == torch.space == NAME


def test_int8_vectors_are_close_to_torchs(
    torch: SentenceTransformerEmbedder, onnx_int8: OnnxEmbedder
) -> None:
    """Measured here on these sentences: cosine 0.989-0.993; on the 6,532 MultiHop-RAG chunks min 0.965,
    mean 0.993 (docs/benchmarks.md)."""
    cosine = np.sum(onnx_int8.embed(SENTENCES) * torch.embed(SENTENCES), axis=1)
    assert np.all(cosine > 0.95) and np.all(cosine < 0.9999)  # close, and truly another model
    assert onnx_int8.space != NAME


def test_an_interrupted_export_is_redone_and_never_loaded(tmp_path: Path) -> None:
    """An export killed while writing leaves its temporary file and no record; a half-written model file
    at the final name (planted) is not loaded: the next use exports again, then loads."""
    folder = export_folder(tmp_path, NAME)
    script = (
        "from pathlib import Path\nfrom hopgraph.onnx_export import ensure_export\n"
        f"ensure_export(Path({str(tmp_path)!r}), {NAME!r})"
    )
    exporting = subprocess.Popen([sys.executable, "-c", script], cwd=REPO)
    try:
        deadline = time.monotonic() + 120
        while not any(p.stat().st_size for p in folder.glob(".fp32.onnx.*.tmp") if p.exists()):
            assert exporting.poll() is None and time.monotonic() < deadline, "the export ended unseen"
            time.sleep(0.05)
        exporting.send_signal(signal.SIGKILL)
    finally:
        exporting.wait()
    assert not (folder / RECORD).exists() and list(folder.glob(".fp32.onnx.*.tmp"))
    (folder / "fp32.onnx").write_bytes(b"half a model")

    vectors = OnnxEmbedder(NAME, "onnx", tmp_path).embed(SENTENCES[:2])

    assert np.allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-5)
    assert not list(folder.glob(".*.tmp")) and (folder / "fp32.onnx").stat().st_size > 1_000_000
    assert json.loads((folder / RECORD).read_text()) == made_from(model_source(NAME))


def test_a_stale_export_is_made_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A record of other library versions (or another source folder, opset, format) is not current."""
    current = ensure_export(MODEL_DIR, NAME)
    folder = export_folder(tmp_path, NAME)
    folder.mkdir(parents=True)
    stale = {**json.loads((current / RECORD).read_text()), "onnxruntime": "0.0.1"}
    (folder / RECORD).write_text(json.dumps(stale))
    made: list[Path] = []
    monkeypatch.setattr(onnx_export, "_export", lambda _source, into, _record: made.append(into))
    ensure_export(tmp_path, NAME)
    assert made == [folder]


def test_the_backend_is_chosen_by_the_setting(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    chosen = embedder_for(Settings(data_dir=tmp_path, embedding_backend="onnx-int8"))
    assert isinstance(chosen, OnnxEmbedder) and chosen.backend == "onnx-int8"
    monkeypatch.setenv("HOPGRAPH_EMBEDDING_BACKEND", "onnx")
    assert embedder_for(Settings(data_dir=tmp_path)).backend == "onnx"
    assert embedder_for(Settings(data_dir=tmp_path, embedding_backend="sentence-transformers")).backend == (
        "sentence-transformers"
    )
    with pytest.raises(SettingsError, match="embedding_backend"):
        Settings(data_dir=tmp_path, embedding_backend="openvino")


def test_an_index_is_searched_only_with_the_backend_it_was_built_with(
    tmp_path: Path, torch: SentenceTransformerEmbedder, onnx: OnnxEmbedder
) -> None:
    store = IndexStore(tmp_path / "indexes")
    params = IndexParams(chunk_size=64, chunk_overlap=16)
    torch_build = store.build("news", ARTICLES, torch, params).manifest
    assert torch_build.embedding_backend == "sentence-transformers"
    with pytest.raises(IndexMismatchError) as error:
        store.open("news", onnx)
    message = str(error.value)
    assert "'sentence-transformers'" in message and "'onnx'" in message
    assert "embedding_backend" in message and "hopgraph index PATH --name news" in message

    onnx_build = store.build("news", ARTICLES, onnx, params).manifest
    assert onnx_build.build_id != torch_build.build_id and onnx_build.embedding_backend == "onnx"
    assert store.open("news", onnx).search("Hail Mary", k=1, mode="dense")
    with pytest.raises(IndexMismatchError, match=r"'onnx'.*'sentence-transformers'"):
        store.open("news", torch)


def test_the_eval_key_names_the_backend(tmp_path: Path) -> None:
    keys = [
        model_identity(summary_of(Settings(data_dir=tmp_path, embedding_backend=backend)))
        for backend in ("sentence-transformers", "onnx", "onnx-int8")
    ]
    assert [key["embedding_backend"] for key in keys] == ["sentence-transformers", "onnx", "onnx-int8"]
    assert keys[0] != keys[1] != keys[2]  # part of every result's settings key (evals.runner)


def test_treehop_refuses_int8_vectors_for_a_checkpoint_trained_on_the_models_own(
    onnx: OnnxEmbedder, onnx_int8: OnnxEmbedder
) -> None:
    assert load_checkpoint(SHIPPED_TREEHOP, onnx.space, 384).card.embedding_model == NAME
    with pytest.raises(CheckpointError, match=r"onnx-int8"):
        load_checkpoint(SHIPPED_TREEHOP, onnx_int8.space, 384)


def test_loading_and_embedding_imports_neither_torch_nor_transformers(onnx: OnnxEmbedder) -> None:
    """At query time the onnx backend needs onnxruntime and tokenizers only (the export is made)."""
    onnx.embed(["export first if need be"])
    code = (
        "from pathlib import Path\nfrom hopgraph.providers import OnnxEmbedder\n"
        f"OnnxEmbedder({NAME!r}, 'onnx', Path({str(MODEL_DIR)!r})).embed(['a question'])"
    )
    assert set(heavy_modules_after(code)).isdisjoint({"torch", "sentence_transformers", "transformers"})


class _WatchedSession:
    """An onnxruntime session that counts its runs and those in flight at once (`most`). With `meet`, each
    run waits at a barrier until that many are in flight, which only runs side by side pass (a serialised
    model leaves it waiting until its timeout breaks it); with `fail_on`, a batch holding that token id
    fails, as onnxruntime fails on a batch it cannot run."""

    def __init__(self, inner: Any, meet: int | None = None, fail_on: int | None = None) -> None:
        self.inner = inner
        self.barrier = threading.Barrier(meet, timeout=60) if meet else None
        self.fail_on = fail_on
        self.lock = threading.Lock()
        self.in_flight = self.most = self.runs = 0

    def run(self, outputs: Any, feed: dict[str, np.ndarray]) -> list[np.ndarray]:
        with self.lock:
            self.in_flight += 1
            self.runs += 1
            self.most = max(self.most, self.in_flight)
        try:
            if self.barrier is not None:
                self.barrier.wait()
            if self.fail_on is not None and self.fail_on in feed["input_ids"]:
                raise RuntimeError("onnxruntime failed on this batch")
            return self.inner.run(outputs, feed)
        finally:
            with self.lock:
                self.in_flight -= 1


def _watched(
    meet_all_cores: bool = False, fail_on: str | None = None
) -> tuple[OnnxEmbedder, _WatchedSession]:
    """A fresh fp32 embedder whose session is watched (the module's own is left alone): its runs meet one per
    core, or a batch holding the word `fail_on` fails."""
    embedder = OnnxEmbedder(NAME, "onnx", MODEL_DIR)
    model = embedder._model
    token = model.batches.token_to_id(fail_on) if fail_on else None
    assert fail_on is None or token is not None, "the failing word must be one word piece"
    model.session = watched = _WatchedSession(model.session, model.cores if meet_all_cores else None, token)
    return embedder, watched


def test_concurrent_callers_get_their_own_vectors_one_run_per_core_side_by_side(onnx: OnnxEmbedder) -> None:
    """Callers from many threads each get exactly the vectors one call at a time gives; runs go side by
    side (the barrier is passed by one run per core) and never more than one per core."""
    embedder, watched = _watched(meet_all_cores=True)
    cores = embedder._model.cores
    texts = [f"{sentence} ({n})" for n in range(2 * cores) for sentence in SENTENCES[:2]]
    alone = [onnx.embed([text])[0] for text in texts]

    with ThreadPoolExecutor(len(texts)) as pool:
        together = list(pool.map(lambda text: embedder.embed([text])[0], texts))

    assert all(np.array_equal(mine, theirs) for mine, theirs in zip(together, alone, strict=True))
    assert watched.runs == len(texts) and watched.most == cores


def test_one_call_spreads_its_batches_over_the_cores_in_its_order(onnx: OnnxEmbedder) -> None:
    """A call of many texts (an index build's) runs one batch per core, side by side, and returns the
    vectors in the order of its texts, those one call at a time gives (padding moves them by rounding
    only)."""
    embedder, watched = _watched(meet_all_cores=True)
    texts = SENTENCES * 3

    vectors = embedder.embed(texts)

    assert watched.runs == watched.most == embedder._model.cores
    assert np.allclose(vectors, np.stack([onnx.embed([text])[0] for text in texts]), atol=1e-6)


def test_a_failed_run_reaches_its_caller_only_and_frees_its_core() -> None:
    """A batch onnxruntime fails on raises in the caller that asked for it, whether it called from a thread
    of its own or spread its texts over the cores (only once the call's other batches have ended, so it
    leaves no run behind); every other caller gets its vectors, and later calls run."""
    failing = "The volcano report could not be embedded."
    embedder, watched = _watched(fail_on="volcano")
    texts = [failing, *SENTENCES[:3]] * 2

    with ThreadPoolExecutor(len(texts)) as pool:
        futures = [pool.submit(embedder.embed, [text]) for text in texts]
    for text, future in zip(texts, futures, strict=True):
        if text == failing:
            with pytest.raises(RuntimeError, match="failed on this batch"):
                future.result()
        else:
            assert future.result().shape == (1, 384)
    with pytest.raises(RuntimeError, match="failed on this batch"):
        embedder.embed([*SENTENCES[:3], failing])  # the failing batch ends first; the other is still running
    assert watched.in_flight == 0  # the failed call returned only after its other batch
    assert embedder.embed(SENTENCES[:2]).shape == (2, 384) and watched.in_flight == 0


def test_a_query_is_embedded_once_while_it_is_among_the_latest_remembered(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """ChainRAG embeds a sub-question to pre-filter, to rerank and at each expansion step: one model pass."""
    embedder = OnnxEmbedder(NAME, "onnx", MODEL_DIR)  # its own, with nothing remembered yet
    passes: list[list[str]] = []
    model_pass = embedder._embed

    def counted(texts: list[str]) -> np.ndarray:
        passes.append(list(texts))
        return model_pass(texts)

    monkeypatch.setattr(embedder, "_embed", counted)
    monkeypatch.setattr(embedder, "REMEMBERED_QUERIES", 2)
    first = embedder.embed([SENTENCES[0]])
    again = embedder.embed([SENTENCES[0]])
    assert passes == [[SENTENCES[0]]] and again.shape == (1, 384) and again.dtype == np.float32
    np.testing.assert_array_equal(again, first)
    again[0, 0] = 9.0  # a caller's copy: what is remembered stays as computed
    assert embedder.embed([SENTENCES[0]])[0, 0] == first[0, 0] and len(passes) == 1

    # several texts (chunks, sentences at build time) are computed every time, to the same vectors
    batch = embedder.embed(SENTENCES[:2])
    assert passes[-1] == SENTENCES[:2] and float(batch[0] @ first[0]) > 0.9999
    # past the two latest, the oldest query is computed again
    embedder.embed([SENTENCES[1]])
    embedder.embed([SENTENCES[2]])
    embedder.embed([SENTENCES[0]])
    assert passes[-3:] == [[SENTENCES[1]], [SENTENCES[2]], [SENTENCES[0]]]
