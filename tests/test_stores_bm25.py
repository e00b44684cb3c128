"""BM25: tokenization, ranking, tie order, filtering, and the gzip JSON round trip."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from stores.bm25 import BM25Index, reciprocal_rank_fusion, tokenize

IDS = ["volcano", "bees", "espresso", "glacier"]
TEXTS = [
    "Eyjafjallajökull erupted in 2010 and its volcanic ash grounded flights across Europe.",
    "Honeybees perform the waggle dance to tell the hive where flowers are.",
    "An espresso shot pushes hot water through finely ground coffee at nine bars.",
    "Alpine glaciers lost record ice volume during the hot summer of 2022.",
]


def test_tokenize_lowercases_and_drops_stopwords() -> None:
    words = tokenize("The Ash-cloud of 2010, and Eyjafjallajökull!")
    assert words == ["ash", "cloud", "2010", "eyjafjallajökull"]


def test_obvious_document_ranks_first() -> None:
    index = BM25Index(IDS, TEXTS)
    results = index.search("Which volcano's ash grounded flights in Europe?", k=3)
    assert results[0][0] == "volcano"
    assert all(score > 0 for _, score in results)
    assert [score for _, score in results] == sorted((score for _, score in results), reverse=True)


def test_only_positive_scores_and_empty_queries() -> None:
    index = BM25Index(IDS, TEXTS)
    assert index.search("waggle", k=10) == [("bees", index.search("waggle", k=1)[0][1])]
    assert index.search("the of and", k=5) == []
    assert index.search("zebra", k=5) == []
    assert index.search("waggle", k=0) == []


def test_ties_break_by_index_order() -> None:
    # BM25Okapi gives a term found in half the texts or more a non-positive idf, so the tied texts
    # are a minority of this corpus.
    texts = [f"filler text number {i}" for i in range(8)]
    for i in (5, 2, 3):
        texts[i] = "shared term"
    index = BM25Index([f"d{i}" for i in range(8)], texts)
    assert [doc_id for doc_id, _ in index.search("shared", k=2)] == ["d2", "d3"]
    assert [doc_id for doc_id, _ in index.search("shared", k=8)] == ["d2", "d3", "d5"]


def test_mask_filters_before_top_k() -> None:
    index = BM25Index(IDS, TEXTS)
    mask = np.array([False, False, True, True])
    assert {doc_id for doc_id, _ in index.search("coffee alpine", k=4, mask=mask)} == {"espresso", "glacier"}
    assert [doc_id for doc_id, _ in index.search("volcanic ash coffee", k=1, mask=mask)] == ["espresso"]
    assert index.search("volcanic ash", k=3, mask=mask) == []


def test_save_load_round_trip(tmp_path: Path) -> None:
    index = BM25Index(IDS, TEXTS)
    path = tmp_path / "bm25.json.gz"
    index.save(path)
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        payload = json.load(handle)
    assert payload["ids"] == IDS and payload["tokens"][1] == tokenize(TEXTS[1])
    loaded = BM25Index.load(path)
    for query in ("volcanic ash Europe", "hot coffee", "glacier ice 2022"):
        assert loaded.search(query, k=4) == index.search(query, k=4)
    assert len(loaded) == 4


def test_reciprocal_rank_fusion_sums_one_over_sixty_plus_rank() -> None:
    fused = reciprocal_rank_fusion([["a", "b", "c"], ["c", "a"]])
    assert fused == pytest.approx({"a": 1 / 61 + 1 / 62, "b": 1 / 62, "c": 1 / 63 + 1 / 61})
    assert list(fused) == ["a", "b", "c"]  # first-seen order, so sorting keeps ties in ranking order
    assert reciprocal_rank_fusion([]) == {}
