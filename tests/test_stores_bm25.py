"""BM25: tokenization, ranking, tie order, filtering, and the gzip JSON round trip."""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path

import numpy as np
import pytest
from rank_bm25 import BM25Okapi

from stores.bm25 import K1, BM25Index, reciprocal_rank_fusion, scores_among, tokenize, top_positive

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
    # A term found in half the texts or more has no positive idf, so the tied texts are a minority.
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


def test_scores_are_every_texts_score_in_index_order() -> None:
    index = BM25Index(IDS, TEXTS)
    scores = index.scores("volcanic ash coffee")
    assert scores.shape == (4,) and scores[1] == scores[3] == 0
    assert index.search("volcanic ash coffee", k=4) == [("volcano", scores[0]), ("espresso", scores[2])]
    assert not index.scores("the zebra").any()


def test_top_positive_ranks_positive_scores_ties_in_position_order() -> None:
    scores = np.array([0.0, 2.0, 1.0, 2.0, -1.0, 1.0])
    assert top_positive(scores, 6).tolist() == [1, 3, 2, 5]
    assert top_positive(scores, 3).tolist() == [1, 3, 2]
    assert top_positive(scores, 6, mask=np.array([True, False, True, True, True, True])).tolist() == [3, 2, 5]


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


# No word of these is in more than half the texts, where the two libraries' idf floors differ (stores.bm25).
CORPUS = [
    *TEXTS,
    "Volcanic eruptions in Iceland can melt glaciers and flood the plains below.",
    "Coffee growers in Brazil fear that hot summers will shrink their harvest.",
    "Bees pollinate coffee flowers, and a hive can hold fifty thousand bees.",
    "Flights over the Atlantic were rerouted around the ash cloud for a week.",
    "Record heat in Europe during 2022 dried rivers and cut hydropower.",
]
QUERIES = [
    "Which volcano's ash grounded flights in Europe?",
    "bees coffee flowers",
    "hot summer glacier ice",
    "coffee coffee Brazil",  # a repeated word counts twice in both libraries
    "Atlantic heat 2022 rivers",
]


@pytest.mark.parametrize("query", QUERIES)
def test_same_ranking_and_scores_as_rank_bm25(query: str) -> None:
    """bm25s replaced rank-bm25: the same top k, and Okapi scores up to rank-bm25's constant k1 + 1."""
    ids = [f"t{i}" for i in range(len(CORPUS))]
    okapi = BM25Okapi([tokenize(text) for text in CORPUS])
    expected = okapi.get_scores(tokenize(query))
    ranked = [i for i in np.lexsort((np.arange(len(ids)), -expected)) if expected[i] > 0]
    results = BM25Index(ids, CORPUS).search(query, k=len(ids))
    assert [doc_id for doc_id, _ in results] == [ids[i] for i in ranked]
    assert [score * (K1 + 1) for _, score in results] == pytest.approx(expected[ranked], rel=1e-5)


@pytest.mark.parametrize("query", [*QUERIES, "zebra", "the of", "volcanic zebra"])
def test_scores_among_a_few_texts_are_those_of_an_index_over_them(query: str) -> None:
    """Counted for the query's words alone and scored with bm25s's formula functions: bit for bit bm25s's
    own index over the same texts, stopword-only and empty texts included."""
    texts = [*CORPUS, "the of and", ""]
    expected = BM25Index([str(i) for i in range(len(texts))], texts).scores(query)
    assert np.array_equal(scores_among(query, [tokenize(text) for text in texts]), expected)
    assert scores_among(query, []).shape == (0,)


def test_scores_among_equal_bm25s_bit_for_bit_on_random_texts() -> None:
    """A hundred texts of random length over a small vocabulary (so words repeat within and across texts,
    and some are in more than half of them, where idf floors at zero), queries with repeated words."""
    rng = random.Random(18)
    vocabulary = [f"w{n}" for n in range(40)]
    for _ in range(50):
        texts = [" ".join(rng.choices(vocabulary, k=rng.randint(0, 30))) for _ in range(100)]
        query = " ".join(rng.choices([*vocabulary[:8], "absent"], k=rng.randint(1, 12)))
        expected = BM25Index([str(i) for i in range(len(texts))], texts).scores(query)
        assert np.array_equal(scores_among(query, [tokenize(text) for text in texts]), expected)


def test_texts_without_an_indexable_word_match_nothing() -> None:
    assert BM25Index(["a", "b"], ["the of", "and"]).search("the zebra", k=3) == []


def test_a_file_of_an_unknown_format_names_the_rebuild(tmp_path: Path) -> None:
    path = tmp_path / "bm25.json.gz"
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        json.dump({"version": 99, "ids": IDS, "tokens": [tokenize(text) for text in TEXTS]}, handle)
    with pytest.raises(ValueError, match=r"format 99.*hopgraph index PATH --name NAME"):
        BM25Index.load(path)


def test_reciprocal_rank_fusion_sums_one_over_sixty_plus_rank() -> None:
    fused = reciprocal_rank_fusion([["a", "b", "c"], ["c", "a"]])
    assert fused == pytest.approx({"a": 1 / 61 + 1 / 62, "b": 1 / 62, "c": 1 / 63 + 1 / 61})
    assert list(fused) == ["a", "b", "c"]  # first-seen order, so sorting keeps ties in ranking order
    assert reciprocal_rank_fusion([]) == {}
