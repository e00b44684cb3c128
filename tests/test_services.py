"""Services of different settings share the models those settings agree on: a second data directory (an
evaluation's, every test's own) costs no second embedder or spaCy load, and settings naming another model get
their own."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from hopgraph import Settings, services_for
from tests.conftest import MODEL_DIR


def test_two_data_directories_share_the_loaded_embedder_and_spacy_not_their_indexes(tmp_path: Path) -> None:
    first = services_for(Settings(data_dir=tmp_path / "a", model_dir=MODEL_DIR))
    second = services_for(Settings(data_dir=tmp_path / "b", model_dir=MODEL_DIR))
    assert first is not second and first.indexes is not second.indexes
    assert second.embedder is first.embedder and second.nlp is first.nlp

    vector = first.embedder.embed(["The library reopened in 2021."])
    assert vector.shape == (1, 384) and np.isclose(np.linalg.norm(vector), 1.0, atol=1e-5)
    assert [token.text for token in second.nlp("It reopened.")] == ["It", "reopened", "."]


def test_settings_naming_another_embedding_backend_get_their_own_embedder(tmp_path: Path) -> None:
    fp32 = services_for(Settings(data_dir=tmp_path / "a", model_dir=MODEL_DIR))
    int8 = services_for(Settings(data_dir=tmp_path / "b", model_dir=MODEL_DIR, embedding_backend="onnx-int8"))
    assert int8.embedder is not fp32.embedder
    assert (fp32.embedder.backend, int8.embedder.backend) == ("onnx", "onnx-int8")
    assert int8.nlp is fp32.nlp
