"""The embedded embedding model through both supported backends, and its tokenizer spans."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from hopgraph.providers import ConfigError, FlagEmbedder, SentenceTransformerEmbedder

TEXTS = ["Mount St. Helens erupted in 1980.", "Bees dance to share where flowers are."]


def test_both_backends_load_the_embedded_model_and_agree() -> None:
    st = SentenceTransformerEmbedder("all-MiniLM-L6-v2")
    flag = FlagEmbedder("all-MiniLM-L6-v2")
    a, b = st.embed(TEXTS), flag.embed(TEXTS)
    assert a.shape == b.shape == (2, 384) and a.dtype == np.float32
    assert np.allclose(np.linalg.norm(a, axis=1), 1, atol=1e-4)
    assert np.all(np.sum(a * b, axis=1) > 0.999)


def test_a_flag_backend_that_cannot_import_says_what_to_do(monkeypatch: pytest.MonkeyPatch) -> None:
    """A fresh install once got a transformers release that FlagEmbedding could not import."""
    monkeypatch.setitem(sys.modules, "FlagEmbedding", None)  # the import then raises ImportError
    with pytest.raises(
        ConfigError, match=r"embedding_backend = 'flag'.*scripts/setup.sh.*sentence-transformers"
    ):
        FlagEmbedder("all-MiniLM-L6-v2").embed(TEXTS)


def test_token_spans_cover_the_text_in_the_models_own_tokens(minilm: SentenceTransformerEmbedder) -> None:
    text = "Cybertruck's steel body"
    spans = minilm.token_spans(text)
    assert [text[s:e] for s, e in spans] == ["Cyber", "tr", "uck", "'", "s", "steel", "body"]
