"""Answer and retrieval metrics against values computed by hand."""

from __future__ import annotations

from pathlib import Path

import pytest

from evals.gold import GoldEvidence
from evals.metrics import (
    WORD_BUCKETS,
    RetrievedSpan,
    answer_words,
    dedupe_spans,
    evidence_found,
    exact_match,
    full_at_k,
    full_within_chars,
    gold_coverage,
    hop_prf,
    locate_span,
    macro_by_hop,
    multihop_rag_official,
    normalize_answer,
    normalize_text,
    normalize_with_offsets,
    past_gold,
    recall_at_k,
    recall_within_chars,
    token_f1,
    within_chars,
    word_buckets,
)


def gold(doc: str, start: int | None = 0, end: int | None = 10, text: str | None = None) -> GoldEvidence:
    return GoldEvidence(doc, doc.upper(), text if text is not None else f"gold fact of {doc}", start, end)


def span(
    doc: str, start: int | None = 0, end: int | None = 10, text: str = "unrelated words"
) -> RetrievedSpan:
    return RetrievedSpan(doc, start, end, text)


# --- answers ------------------------------------------------------------------------------------------


def test_normalize_answer_drops_case_punctuation_articles_and_extra_space() -> None:
    assert normalize_answer("  The Cat,   sat!  ") == "cat sat"
    assert normalize_answer("An apple a day") == "apple day"
    assert normalize_answer("theatre") == "theatre"  # articles only as whole words


def test_exact_match_normalises_and_takes_the_best_alias() -> None:
    assert exact_match("the Eiffel Tower.", ("Eiffel Tower",)) == 1.0
    assert exact_match("NYC", ("New York City", "nyc")) == 1.0
    assert exact_match("New York", ("New York City", "NYC")) == 0.0
    assert exact_match("Paris", "paris") == 1.0  # a bare string is one answer, not a list of letters


def test_token_f1_by_hand() -> None:
    # pred tokens quick brown fox, gold quick brown dog: 2 shared, P = R = 2/3
    assert token_f1("The quick brown fox", ("quick brown dog",)) == pytest.approx(2 / 3)
    # repeated tokens count once per occurrence on both sides: red+blue shared, P = R = 2/3
    assert token_f1("red red blue", ("red blue blue",)) == pytest.approx(2 / 3)
    assert token_f1("completely different", ("nothing shared",)) == 0.0


def test_token_f1_is_the_max_over_aliases() -> None:
    # against "cat": 0; against "quick brown dog": P = 1, R = 2/3, F1 = 0.8
    assert token_f1("brown dog", ("cat", "quick brown dog")) == pytest.approx(0.8)


def test_yes_no_rule_gives_no_partial_credit() -> None:
    # without the rule: P = 1, R = 1/3, F1 = 0.5
    assert token_f1("yes", ("yes it was",)) == 0.0
    assert token_f1("yes it was", ("yes",)) == 0.0
    assert token_f1("no", ("no",)) == 1.0
    assert token_f1("No.", ("yes", "no")) == 1.0
    assert token_f1("noanswer", ("no answer here",)) == 0.0


def test_unanswerable_and_empty_answers() -> None:
    assert exact_match("Insufficient information", ("Insufficient information.",)) == 1.0
    assert token_f1("insufficient info", ("Insufficient information.",)) == pytest.approx(0.5)
    assert token_f1("The", ("a",)) == 1.0  # both normalise to nothing: agreement
    assert token_f1("", ("x",)) == 0.0
    with pytest.raises(ValueError):
        exact_match("x", ())
    with pytest.raises(ValueError):
        token_f1("x", [])


# --- text normalisation and locating ------------------------------------------------------------------


def test_normalize_text_matches_the_baselines_rule() -> None:
    assert normalize_text("Hello,\tWORLD!  It's 2023 — café") == "hello world it s 2023 caf"
    assert normalize_text("!!!") == ""


def test_normalize_with_offsets_maps_every_character_back() -> None:
    raw = "A-b  C!"
    norm, offsets = normalize_with_offsets(raw)
    assert norm == normalize_text(raw) == "a b c"
    assert len(offsets) == len(norm)
    assert [raw[offsets[i]].lower() for i in (0, 2, 4)] == ["a", "b", "c"]


def test_locate_span_exact_then_normalised() -> None:
    assert locate_span("b c", "a b c d") == (2, 5)
    hay = "Say: hello world. Bye"
    start, end = locate_span("Hello,   World!", hay) or (0, 0)
    assert hay[start:end] == "hello world"
    # the normalised search only matches whole words: "cat" inside "concatenate" is skipped
    assert locate_span("CAT", "concatenate cat") == (12, 15)
    assert locate_span("zebra", "no such animal") is None
    assert locate_span("", "anything") is None
    assert locate_span("...", "anything") is None


# --- evidence matching --------------------------------------------------------------------------------


def test_span_rule_needs_half_of_the_gold_span_in_the_same_document() -> None:
    g = gold("d1", 10, 30, text="alpha beta gamma delta")  # 20 characters long
    assert evidence_found(g, [span("d1", 20, 50)])  # overlap 10 = half
    assert not evidence_found(g, [span("d1", 21, 50)])  # overlap 9
    assert evidence_found(g, [span("d1", 0, 100)])  # covers all
    assert not evidence_found(g, [span("d2", 10, 30)])  # same offsets, other document
    assert not evidence_found(g, [span("d1", None, None)])  # no offsets, text does not match
    assert not evidence_found(g, [])


def test_one_sentence_does_not_earn_a_whole_paragraph() -> None:
    """Defect 2 of issue 37: the old rule credited a unit lying half inside a longer gold span."""
    paragraph = gold("d1", 100, 400, text="a whole gold paragraph")  # 300 characters long
    assert not evidence_found(paragraph, [span("d1", 150, 210)])  # one 60-character sentence of it
    # what was read of the document counts together: three sentences, 150 of the 300 characters
    sentences = [span("d1", 100, 160), span("d1", 160, 220), span("d1", 220, 250)]
    assert evidence_found(paragraph, sentences)
    assert not evidence_found(paragraph, sentences[:2])  # 120 of 300
    # overlapping units are counted once: 100..240 read twice over is still 140 characters
    assert not evidence_found(paragraph, [span("d1", 100, 240), span("d1", 120, 240), span("d1", 130, 200)])
    assert not evidence_found(paragraph, [span("d2", 100, 400)])
    assert not evidence_found(paragraph, [span("d1", 150, 150)])  # an empty unit retrieves nothing


def test_key_sentence_finds_a_paragraph_that_supports_one_sub_question() -> None:
    """MuSiQue: reading the sentence holding the sub-question's answer finds its paragraph."""
    paragraph = GoldEvidence("d1", "D1", "a whole gold paragraph", 100, 400, key_start=250, key_end=310)
    assert evidence_found(paragraph, [span("d1", 250, 310)])  # the answer's sentence
    assert evidence_found(paragraph, [span("d1", 240, 290)])  # half of it (40 of 60)
    assert not evidence_found(paragraph, [span("d1", 150, 210)])  # another sentence of the paragraph
    assert not evidence_found(paragraph, [span("d2", 250, 310)])  # the same offsets elsewhere


def test_gold_coverage_is_the_share_of_gold_characters_read() -> None:
    paragraph = gold("d1", 100, 400)
    assert gold_coverage([paragraph], [span("d1", 150, 210)]) == pytest.approx(0.2)
    # union: 100..200 and 150..250 cover 150 characters; other documents add nothing
    assert gold_coverage([paragraph], [span("d1", 100, 200), span("d1", 150, 250), span("d2", 0, 999)]) == 0.5
    unlocated = gold("d1", None, None, text="alpha beta gamma delta")
    assert gold_coverage([paragraph, unlocated], [span("d1", 0, 999, "x alpha beta gamma delta")]) == 1.0
    assert gold_coverage([unlocated], [span("d1", 0, 9, "nothing")]) == 0.0
    assert gold_coverage([], [span("d1")]) is None


def test_text_rule_when_spans_cannot_decide() -> None:
    g = gold("d1", 10, 30, text="alpha beta gamma delta")
    assert evidence_found(g, [span("d1", None, None, "...Alpha, beta gamma DELTA! more")])
    assert evidence_found(g, [span("other", 0, 5, "x alpha beta gamma delta y")])  # a verbatim copy elsewhere
    unlocated = gold("d1", None, None, text="alpha beta gamma delta")
    assert evidence_found(unlocated, [span("d1", 0, 100, "alpha beta gamma delta")])
    assert not evidence_found(unlocated, [span("d1", 0, 100, "alpha beta")])


def test_word_share_counts_only_in_the_gold_document() -> None:
    """Defect 3 of issue 37: another team's sentence sharing nine words in ten is not the gold fact."""
    fact = gold(
        "soccer", None, None, text="The soccer team competes in the America East Conference since 2001"
    )
    lookalike = "The basketball team competes in the America East Conference since 2001"
    assert not evidence_found(fact, [span("basketball", 0, 70, lookalike)])
    assert evidence_found(fact, [span("soccer", 500, 570, lookalike)])  # a rewording in its own article


def test_text_rule_ninety_percent_of_words() -> None:
    words = ["w0", "w1", "w2", "w3", "w4", "w5", "w6", "w7", "w8", "w9"]
    g = gold("d", None, None, text=" ".join(words))
    nine = " ".join(reversed(words[:9]))  # 9 of 10 words, not as a run
    eight = " ".join(reversed(words[:8]))
    assert evidence_found(g, [span("d", None, None, nine)])
    assert not evidence_found(g, [span("d", None, None, eight)])
    short = gold("d", None, None, text="red green blue")  # under 4 words: must appear whole
    assert not evidence_found(short, [span("x", None, None, "blue green red")])
    assert evidence_found(short, [span("x", None, None, "Red, green; blue.")])


# --- Recall@k, Full@k, equal budgets -----------------------------------------------------------------


GOLD3 = [gold("a"), gold("b"), gold("c")]


def test_duplicates_are_dropped_before_the_top_k() -> None:
    retrieved = [span("a"), span("a"), span("b"), span("x"), span("c")]
    assert dedupe_spans(retrieved) == [span("a"), span("b"), span("x"), span("c")]
    assert recall_at_k(GOLD3, retrieved, 2) == pytest.approx(2 / 3)  # would be 1/3 with the duplicate
    assert recall_at_k(GOLD3, retrieved, 3) == pytest.approx(2 / 3)
    assert recall_at_k(GOLD3, retrieved, 4) == 1.0
    assert full_at_k(GOLD3, retrieved, 3) == 0.0
    assert full_at_k(GOLD3, retrieved, 4) == 1.0


def test_units_without_offsets_are_told_apart_by_text() -> None:
    retrieved = [span("a", None, None, "one"), span("a", None, None, "two"), span("a", None, None, "one")]
    assert [s.text for s in dedupe_spans(retrieved)] == ["one", "two"]


def test_empty_retrieval_and_no_gold() -> None:
    assert recall_at_k(GOLD3, [], 5) == 0.0
    assert full_at_k(GOLD3, [], 5) == 0.0
    assert recall_at_k([], [span("a")], 5) is None
    assert full_at_k([], [span("a")], 5) is None
    assert recall_within_chars([], [span("a")], 100) is None
    with pytest.raises(ValueError):
        recall_at_k(GOLD3, [], 0)


def test_within_chars_cuts_the_last_unit_to_the_budget() -> None:
    units = [span("a", 0, 40, "x" * 40), span("a", 0, 40, "x" * 40), span("b", 100, 160, "y" * 60)]
    assert within_chars(units, 70) == [span("a", 0, 40, "x" * 40), span("b", 100, 130, "y" * 30)]
    assert within_chars(units, 40) == [span("a", 0, 40, "x" * 40)]
    assert within_chars([span("c", None, None, "z" * 9)], 4) == [span("c", None, None, "zzzz")]
    with pytest.raises(ValueError):
        within_chars(units, 0)


def test_equal_budget_compares_what_was_read_not_unit_counts() -> None:
    """Defect 4 of issue 37: at k = 2 a chunk retriever reads 900 characters, a sentence retriever 120."""
    facts = [gold("a", 0, 100), gold("b", 300, 400)]
    chunks = [span("a", 0, 450, "c" * 450), span("b", 0, 450, "c" * 450)]
    sentences = [span("a", 0, 60, "s" * 60), span("x", 0, 60, "s" * 60), span("b", 300, 360, "s" * 60)]
    assert recall_at_k(facts, chunks, 2) == 1.0 and recall_at_k(facts, sentences, 2) == 0.5
    # within 500 characters the chunk retriever has read its first chunk only
    assert recall_within_chars(facts, chunks, 500) == 0.5 and full_within_chars(facts, chunks, 500) == 0.0
    assert (
        recall_within_chars(facts, sentences, 500) == 1.0 and full_within_chars(facts, sentences, 500) == 1.0
    )
    # a fact cut by the budget: 40 of b's 100 characters fit, 50 are needed
    assert recall_within_chars(facts, [span("b", 300, 400, "f" * 100)], 40) == 0.0
    assert recall_within_chars(facts, [span("b", 300, 400, "f" * 100)], 50) == 0.5


# --- MultiHop-RAG's own retrieval metrics ------------------------------------------------------------


def test_multihop_rag_official_metrics_on_hand_made_rankings() -> None:
    """Hits@k, AP@10 and RR@10 as MultiHop-RAG's retrieval_evaluate.py defines them, computed by hand."""
    facts = ["Fact one is here.", "Fact two\nis there."]
    ranking = [
        "nothing",
        "x Fact  one is here. y",
        "no",
        "no",
        "factone",
        "Facttwo is there. Fact one is here.",
    ]
    # squeezed (spaces and newlines removed, case kept): rank 2 holds fact 1, rank 6 holds fact 2 (and 1
    # again, not counted twice); the lower-case "factone" at rank 5 does not match
    got = multihop_rag_official(facts, ranking)
    assert got == {"hits@4": 1.0, "hits@10": 1.0, "map@10": pytest.approx((1 / 2 + 1 / 6) / 2), "mrr@10": 0.5}
    # first relevant at rank 5: a hit at 10, not at 4 (Hits@k is per query, not the share of facts)
    late = multihop_rag_official(facts, ["no"] * 4 + ["Fact one is here."])
    assert late == {"hits@4": 0.0, "hits@10": 1.0, "map@10": pytest.approx(1 / 5 / 2), "mrr@10": 0.2}
    # only the top 10 count; a repeated gold fact still counts in the divisor min(len(gold), 10)
    assert multihop_rag_official(facts, ["no"] * 10 + ["Fact one is here."])["hits@10"] == 0.0
    repeated = multihop_rag_official(["A b", "A b", "C"], ["Ab", "C"])
    assert repeated == {
        "hits@4": 1.0,
        "hits@10": 1.0,
        "map@10": pytest.approx((1 + 1 / 2) / 3),
        "mrr@10": 1.0,
    }
    assert multihop_rag_official([], ["anything"]) is None


# --- hop-conditioned precision / recall / F1 ----------------------------------------------------------


def test_hop_prf_three_hops_by_hand() -> None:
    g = [gold("a"), gold("b")]
    hops = [
        [span("a"), span("x")],  # D1 = {a, x}: P 1/2, R 1/2, F1 1/2
        [span("a"), span("y")],  # a repeats: D2 = {a, x, y}: P 1/3, R 1/2, F1 0.4
        [span("b"), span("z")],  # D3 = {a, x, y, b, z}: P 2/5, R 1, F1 = 0.8 / 1.4 = 4/7
    ]
    out = hop_prf(g, hops)
    expected = [(0.5, 0.5, 0.5), (1 / 3, 0.5, 0.4), (0.4, 1.0, 4 / 7)]
    assert len(out) == 3
    for got, want in zip(out, expected, strict=True):
        assert got == pytest.approx(want)


def test_hop_prf_edge_cases() -> None:
    g = [gold("a"), gold("b")]
    assert hop_prf(g, [[]]) == [(0.0, 0.0, 0.0)]
    assert hop_prf(g, []) == [(0.0, 0.0, 0.0)]  # no retrieval at all still counts
    assert hop_prf([], [[span("a")]]) == []
    # one unit matching both gold items is one relevant unit: P = 1, R = 1
    both = span("a", 0, 100, "gold fact of a gold fact of b")
    assert hop_prf(g, [[both]]) == [(1.0, 1.0, 1.0)]


def test_macro_by_hop_carries_a_finished_question_forward() -> None:
    q1 = [(0.5, 0.5, 0.5), (1 / 3, 0.5, 0.4), (0.4, 1.0, 4 / 7)]
    q2 = [(1.0, 1.0, 1.0)]  # stopped after one hop
    out = macro_by_hop([q1, q2, []])  # [] = no gold, left out
    expected = [(1, 0.75, 0.75, 0.75), (2, 2 / 3, 0.75, 0.7), (3, 0.7, 1.0, 11 / 14)]
    assert [r for r, *_ in out] == [1, 2, 3]
    for got, want in zip(out, expected, strict=True):
        assert got == pytest.approx(want)
    longer = macro_by_hop([q1, q2], max_hop=4)
    assert longer[3][1:] == pytest.approx(longer[2][1:])
    assert macro_by_hop([q1, q2], max_hop=1) == out[:1]
    assert macro_by_hop([[], []]) == []


def test_multihop_rag_official_agrees_with_the_peer_scripts_rendering_on_random_rankings() -> None:
    """The same rankings through `multihop_rag_official` and through ../shared/peers' independent
    rendering of MultiHop-RAG's retrieval_evaluate.py give the same Hits@4/10, MAP@10 and MRR@10."""
    import importlib.util
    import random

    path = Path(__file__).resolve().parents[2] / "shared" / "peers" / "plain_rag_peer.py"
    spec = importlib.util.spec_from_file_location("plain_rag_peer", path)
    assert spec is not None and spec.loader is not None
    peer = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(peer)
    rng = random.Random(7)
    facts_pool = [f"Fact {i} about\nthing {i % 5}." for i in range(12)]
    for _ in range(300):
        # distinct facts: on a repeated one the peer counts each copy as newly found where the benchmark's
        # script (and ours, tested by hand above) counts it once; no dev query repeats a fact
        facts = rng.sample(facts_pool, rng.randint(1, 4))
        ranking = [
            " ".join(rng.sample(facts_pool, rng.randint(0, 2))) + rng.choice(["", " filler", "x"])
            for _ in range(rng.randint(0, 14))
        ]
        ours = multihop_rag_official(facts, ranking)
        assert ours is not None
        theirs = peer.official(ranking, facts)
        assert ours == pytest.approx(theirs), (facts, ranking)


def test_an_answer_is_past_the_gold_when_longer_than_its_shortest_gold_by_more_than_three_words() -> None:
    golds = ["Ilse Varga", "Varga"]  # the alias sets the bar: 1 word + 3
    assert answer_words("  Ilse   Varga ") == 2
    assert not past_gold("the novelist Ilse Varga", golds)  # 4 words
    assert past_gold("it was Ilse Varga herself", golds)  # 5 words
    assert past_gold("a b c", "x", margin=1) and not past_gold("a b", "x", margin=1)
    with pytest.raises(ValueError, match="no gold answers"):
        past_gold("Varga", [])


def test_word_buckets_share_answers_by_their_length_in_order() -> None:
    answers = ["", "Yes", "the Vell", "a small town", "one two three four five", "w " * 7, "w " * 11]
    lengths = word_buckets(answers)
    assert list(lengths) == [name for name, _, _ in WORD_BUCKETS]
    assert lengths == {name: 1 / 7 for name in lengths}  # one answer in each bucket
    assert word_buckets(["a b c d", "a b c d e"])["4-5"] == 1.0
    assert set(word_buckets([]).values()) == {0.0}
