"""Benchmark loaders against the real shared dev slices, plus every way a file can be wrong."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

from evals.datasets import DATASETS, Benchmark, DatasetError, load_benchmark
from evals.metrics import normalize_text
from prompts.demonstrations import DEMONSTRATION_IDS

DATA = Path(__file__).parents[2] / "shared" / "data"
MHR, HOTPOT, WIKI2, MUSIQUE = (DATA / d for d in ("multihop_rag", "hotpotqa", "2wikimultihopqa", "musique"))
MUSIQUE_FLASHRAG = MUSIQUE / "musique_dev_200.jsonl"


def evaluated_hotpotqa_records() -> list[dict]:
    """The HotpotQA file's records without the two IR-CoT demonstrations were built from (never loaded)."""
    raw = json.loads((HOTPOT / DATASETS["hotpotqa"]).read_text())
    return [r for r in raw if r["_id"] not in DEMONSTRATION_IDS["hotpotqa"]]


@pytest.fixture(scope="module")
def mhr() -> Benchmark:
    return load_benchmark("multihop_rag", MHR)


@pytest.fixture(scope="module")
def hotpot() -> Benchmark:
    return load_benchmark("hotpotqa", HOTPOT)


@pytest.fixture(scope="module")
def wiki2() -> Benchmark:
    return load_benchmark("2wikimultihopqa", WIKI2)


@pytest.fixture(scope="module")
def musique() -> Benchmark:
    return load_benchmark("musique", MUSIQUE)


def assert_exact_spans(bench: Benchmark) -> None:
    """Every gold item is located, and its span holds exactly its text."""
    docs = {d.id: d for d in bench.corpus}
    for ex in bench.examples:
        for ev in ex.evidence:
            assert ev.char_start is not None and ev.char_end is not None, (ex.id, ev.text)
            assert docs[ev.doc_id].text[ev.char_start : ev.char_end] == ev.text, (ex.id, ev.doc_id)


def assert_corpus_ids_unique(bench: Benchmark) -> None:
    ids = [d.id for d in bench.corpus]
    assert len(ids) == len(set(ids))


# --- MultiHop-RAG -------------------------------------------------------------------------------------


def test_multihop_rag_counts(mhr: Benchmark) -> None:
    assert mhr.name == "multihop_rag"
    assert len(mhr.examples) == 1757
    assert len(mhr.corpus) == 609
    assert_corpus_ids_unique(mhr)
    assert Counter(ex.question_type for ex in mhr.examples) == {
        "comparison_query": 588,
        "inference_query": 561,
        "temporal_query": 401,
        "null_query": 207,
    }
    assert sum(len(ex.evidence) for ex in mhr.examples) == 4182


def test_multihop_rag_first_record(mhr: Benchmark) -> None:
    ex = mhr.examples[0]
    assert ex.id == "mhr_0"
    assert ex.dataset == "multihop_rag"
    assert ex.question.startswith("Who is the individual associated with the cryptocurrency industry")
    assert ex.answers == ("Sam Bankman-Fried",)
    assert ex.question_type == "inference_query"
    assert ex.answerable and ex.hops == 3 and ex.decomposition == ()
    first = ex.evidence[0]
    assert (
        first.doc_id
        == "https://www.theverge.com/2023/9/28/23893269/ftx-sam-bankman-fried-trial-evidence-crypto"
    )
    assert first.title == "The FTX trial is bigger than Sam Bankman-Fried"
    assert first.text.startswith("Before his fall, Bankman-Fried made himself out")
    doc = next(d for d in mhr.corpus if d.id == first.doc_id)
    assert doc.metadata == {
        "author": "Elizabeth Lopatto",
        "source": "The Verge",
        "published_at": "2023-09-28T12:00:00+00:00",
        "category": "technology",
        "url": first.doc_id,
    }


def test_multihop_rag_corpus_documents(mhr: Benchmark) -> None:
    first = mhr.corpus[0]
    assert first.id == "https://mashable.com/article/cyber-monday-deals-amazon-2023"
    assert first.title == "200+ of the best deals from Amazon's Cyber Monday sale"
    assert first.text.startswith("Table of Contents")
    assert "author" not in first.metadata  # null author dropped
    assert sum("author" not in d.metadata for d in mhr.corpus) == 64


def test_multihop_rag_null_queries(mhr: Benchmark) -> None:
    null = [ex for ex in mhr.examples if ex.question_type == "null_query"]
    assert len(null) == 207
    assert all(not ex.answerable for ex in null)
    assert all(ex.answers == ("Insufficient information.",) and ex.evidence == () for ex in null)
    assert all(ex.hops is None for ex in null)
    assert all(ex.answerable for ex in mhr.examples if ex.question_type != "null_query")


def test_multihop_rag_hops_count_distinct_articles(mhr: Benchmark) -> None:
    hops = Counter(ex.hops for ex in mhr.examples if ex.answerable)
    assert hops == {2: 806, 3: 525, 4: 219}


def test_multihop_rag_facts_located(mhr: Benchmark) -> None:
    docs = {d.id: d for d in mhr.corpus}
    facts = [ev for ex in mhr.examples for ev in ex.evidence]
    located = [ev for ev in facts if ev.char_start is not None]
    exact = [ev for ev in located if docs[ev.doc_id].text[ev.char_start : ev.char_end] == ev.text]
    share = len(located) / len(facts)
    print(f"MultiHop-RAG facts located: {len(located)}/{len(facts)} = {share:.4f}; exact text: {len(exact)}")
    assert share >= 0.99
    assert len(exact) / len(facts) >= 0.99


def test_multihop_rag_limit_keeps_the_full_corpus() -> None:
    bench = load_benchmark("multihop_rag", MHR, limit=10)
    assert [ex.id for ex in bench.examples] == [f"mhr_{i}" for i in range(10)]
    assert len(bench.corpus) == 609


def test_multihop_rag_accepts_either_file_of_the_folder() -> None:
    by_questions = load_benchmark("multihop_rag", MHR / "MultiHopRAG.json", limit=3)
    by_corpus = load_benchmark("multihop_rag", str(MHR / "corpus.json"), limit=3)
    assert by_questions.examples == by_corpus.examples
    assert len(by_corpus.corpus) == 609


def test_multihop_rag_fact_with_other_whitespace_is_located(tmp_path: Path) -> None:
    body = "First line.\nThe  company’s SHARES rose 5%, analysts said.\nLast line."
    corpus = [{"title": "T", "author": None, "source": "S", "url": "u1", "body": body}]
    query = {
        "query": "q",
        "answer": "a",
        "question_type": "inference_query",
        "evidence_list": [
            {"title": "T", "url": "gone", "fact": "the company's shares rose 5% , analysts said"}
        ],
    }
    (tmp_path / "corpus.json").write_text(json.dumps(corpus))
    (tmp_path / "MultiHopRAG.json").write_text(json.dumps([query]))
    ev = load_benchmark("multihop_rag", tmp_path).examples[0].evidence[0]
    assert ev.doc_id == "u1"  # url unknown: matched by title
    assert body[ev.char_start : ev.char_end] == "The  company’s SHARES rose 5%, analysts said"


# --- HotpotQA -----------------------------------------------------------------------------------------


def test_hotpotqa_counts_and_first_record(hotpot: Benchmark) -> None:
    assert len(hotpot.examples) == 298  # 300 in the file, 2 of them IR-CoT demonstrations
    assert Counter(ex.question_type for ex in hotpot.examples) == {"bridge": 247, "comparison": 51}
    ex = hotpot.examples[0]
    assert ex.id == "5a8b57f25542995d1e6f1371"
    assert ex.question == "Were Scott Derrickson and Ed Wood of the same nationality?"
    assert ex.answers == ("yes",)
    assert ex.question_type == "comparison" and ex.hops == 2 and ex.answerable
    assert [(e.doc_id, e.char_start) for e in ex.evidence] == [("Scott Derrickson", 0), ("Ed Wood", 0)]
    assert (
        ex.evidence[0].text
        == "Scott Derrickson (born July 16, 1966) is an American director, screenwriter and producer."
    )


def test_hotpotqa_every_supporting_sentence_has_an_exact_span(hotpot: Benchmark) -> None:
    raw = evaluated_hotpotqa_records()
    assert sum(len(ex.evidence) for ex in hotpot.examples) == sum(len(r["supporting_facts"]) for r in raw)
    assert_exact_spans(hotpot)
    docs = {d.id: d for d in hotpot.corpus}
    for r, ex in zip(raw, hotpot.examples, strict=True):
        paragraphs = dict((t, s) for t, s in r["context"])
        for (title, idx), ev in zip(r["supporting_facts"], ex.evidence, strict=True):
            assert ev.doc_id == title and ev.text == paragraphs[title][idx].strip()
            assert docs[title].text == "".join(paragraphs[title])  # HotpotQA's own join


def test_hotpotqa_corpus_is_the_deduplicated_union(hotpot: Benchmark) -> None:
    raw = evaluated_hotpotqa_records()
    titles = {t for r in raw for t, _ in r["context"]}
    assert sum(len(r["context"]) for r in raw) == 2951  # a few questions have fewer than 10
    assert len(hotpot.corpus) == len(titles) == 2945
    assert_corpus_ids_unique(hotpot)


def test_hotpotqa_limit() -> None:
    bench = load_benchmark("hotpotqa", HOTPOT / DATASETS["hotpotqa"], limit=5)
    raw = json.loads((HOTPOT / DATASETS["hotpotqa"]).read_text())[:5]
    assert len(bench.examples) == 5
    assert {d.id for d in bench.corpus} == {t for r in raw for t, _ in r["context"]}
    assert load_benchmark("hotpotqa", HOTPOT, limit=0).examples == []


def test_skip_loads_the_questions_after_the_evaluated_ones_over_their_own_paragraphs(
    hotpot: Benchmark,
) -> None:
    """`skip` counts evaluated questions (demonstrations are never among them), and the corpus is what the
    kept questions are asked over, as with a limit: a disjoint group for benchmarks.retrieval_modes."""
    rest = load_benchmark("hotpotqa", HOTPOT, skip=50)
    raw = evaluated_hotpotqa_records()[50:]
    assert [q.id for q in rest.examples] == [q.id for q in hotpot.examples[50:]] == [r["_id"] for r in raw]
    assert {d.id for d in rest.corpus} == {t for r in raw for t, _ in r["context"]}
    middle = load_benchmark("hotpotqa", HOTPOT, limit=2, skip=3)
    assert [q.id for q in middle.examples] == [q.id for q in hotpot.examples[3:5]]
    assert load_benchmark("musique", MUSIQUE, skip=50).examples == []  # the slice's 50, all evaluated
    mhr_rest = load_benchmark("multihop_rag", MHR, skip=50)
    assert len(mhr_rest.corpus) == 609  # MultiHop-RAG's questions always run over the full corpus


def test_hotpotqa_repeated_title_keeps_the_first_text(tmp_path: Path) -> None:
    records = [
        {"_id": "1", "question": "q1", "answer": "a", "type": "bridge",
         "context": [["P", ["Alpha one.", " Beta two."]]], "supporting_facts": [["P", 1]]},
        {"_id": "2", "question": "q2", "answer": "b", "type": "bridge",
         "context": [["P", ["Intro.", " Beta two."]]], "supporting_facts": [["P", 1], ["P", 0]]},
    ]  # fmt: skip
    path = tmp_path / "hotpot.json"
    path.write_text(json.dumps(records))
    bench = load_benchmark("hotpotqa", path)
    assert [d.text for d in bench.corpus] == ["Alpha one. Beta two."]
    beta, intro = bench.examples[1].evidence
    assert (beta.text, beta.char_start, beta.char_end) == ("Beta two.", 11, 20)  # found in the kept text
    assert (intro.text, intro.char_start, intro.char_end) == ("Intro.", None, None)  # not in it
    assert bench.examples[1].hops == 1


# --- 2WikiMultihopQA ----------------------------------------------------------------------------------


def test_2wiki_counts_and_first_record(wiki2: Benchmark) -> None:
    assert len(wiki2.examples) == 98  # dev_97 and dev_99 are IR-CoT demonstrations
    assert Counter(ex.question_type for ex in wiki2.examples) == {
        "compositional": 38,
        "comparison": 24,
        "bridge_comparison": 21,
        "inference": 15,
    }
    ex = wiki2.examples[0]
    assert ex.id == "dev_0"
    assert ex.question == "Who is the mother of the director of film Polish-Russian War (Film)?"
    assert ex.answers == ("Małgorzata Braunek",)
    assert ex.question_type == "compositional" and ex.hops == 2
    assert [e.doc_id for e in ex.evidence] == ["Polish-Russian War (film)", "Xawery Żuławski"]
    assert ex.evidence[1].text == "He is the son of actress Małgorzata Braunek and director Andrzej Żuławski."
    assert wiki2.examples[1].answers == (
        "The Mask Of Fu Manchu",
        "Mask of Fu Manchu",
        "The Mask of Fu Manchu",
    )


def test_2wiki_spans_and_space_joined_paragraphs(wiki2: Benchmark) -> None:
    assert_exact_spans(wiki2)
    assert_corpus_ids_unique(wiki2)  # dev_20 and dev_89 list one paragraph twice
    docs = {d.id: d for d in wiki2.corpus}
    assert docs["Polish-Russian War (film)"].text.startswith(
        "Polish-Russian War (Wojna polsko-ruska) is a 2009"
    )
    assert sum(len(ex.evidence) for ex in wiki2.examples) == 240  # 244 with the two demonstrations


def test_2wiki_official_layout_loads_the_same(tmp_path: Path, wiki2: Benchmark) -> None:
    lines = (WIKI2 / DATASETS["2wikimultihopqa"]).read_text().splitlines()[:3]
    official = []
    for line in lines:
        r = json.loads(line)
        meta = r["metadata"]
        context = zip(meta["context"]["title"], meta["context"]["content"], strict=True)
        facts = zip(meta["supporting_facts"]["title"], meta["supporting_facts"]["sent_id"], strict=True)
        official.append(
            {
                "_id": r["id"],
                "type": meta["type"],
                "question": r["question"],
                "answer": r["golden_answers"][0],
                "context": [list(p) for p in context],
                "supporting_facts": [list(f) for f in facts],
                "evidences": [["subject", "relation", "object"]],
            }
        )
    path = tmp_path / "dev.json"
    path.write_text(json.dumps(official))
    bench = load_benchmark("2wikimultihopqa", path)
    assert [ex.evidence for ex in bench.examples] == [ex.evidence for ex in wiki2.examples[:3]]
    assert [ex.answers[0] for ex in bench.examples] == [ex.answers[0] for ex in wiki2.examples[:3]]
    small = load_benchmark("2wikimultihopqa", WIKI2, limit=3)
    assert {d.id: d.text for d in bench.corpus} == {d.id: d.text for d in small.corpus}


# --- MuSiQue ------------------------------------------------------------------------------------------


def test_musique_counts_and_first_record(musique: Benchmark) -> None:
    assert len(musique.examples) == 50
    assert Counter(ex.question_type for ex in musique.examples) == {
        "2hop": 29,
        "3hop1": 11,
        "4hop1": 5,
        "3hop2": 4,
        "4hop3": 1,
    }
    ex = musique.examples[0]
    assert ex.id == "2hop__82713_84616"
    assert ex.question == "What did the actress in My Fair Lady win a Tony for?"
    assert ex.answers == (
        "for Best Performance by a Leading Actress in a Play in Ondine",
        "leading role",
        "star",
        "leading actress",
        "lead",
    )
    assert ex.hops == 2 and ex.answerable
    assert [d["question"] for d in ex.decomposition] == [
        "who was the actress in my fair lady",
        "what did #1 won a tony for",
    ]
    assert ex.decomposition[0]["answer"] == "Audrey Hepburn"
    assert [d["doc_id"] for d in ex.decomposition] == [e.doc_id for e in ex.evidence]
    assert re.fullmatch(r"My Fair Lady \(film\)::[0-9a-f]{8}", ex.evidence[0].doc_id)


def test_musique_decomposition_and_paragraph_evidence(musique: Benchmark) -> None:
    assert_exact_spans(musique)
    assert_corpus_ids_unique(musique)
    docs = {d.id: d for d in musique.corpus}
    for ex in musique.examples:
        assert ex.hops == len(ex.decomposition) == int(ex.question_type[0])  # type: ignore[index]
        assert {d["doc_id"] for d in ex.decomposition} == {e.doc_id for e in ex.evidence}
        for ev in ex.evidence:
            assert (ev.char_start, ev.char_end) == (0, len(docs[ev.doc_id].text))


def test_musique_paragraph_key_is_the_sentence_holding_its_sub_answer(musique: Benchmark) -> None:
    """Each supporting paragraph's key span is the whole sentence where its sub-question's answer is
    written (the sentence a reader needs), located in the paragraph for all 127 of the first 50."""
    paragraph, tony = musique.examples[0].evidence
    assert paragraph.text[paragraph.key_start : paragraph.key_end] == (  # type: ignore[misc]
        "The film stars Audrey Hepburn as Eliza Doolittle and Rex Harrison as Henry Higgins, with Stanley"
        " Holloway, Gladys Cooper and Wilfrid Hyde - White in supporting roles."
    )
    assert tony.text[tony.key_start : tony.key_end] == (  # type: ignore[misc]
        "She also won the 1954 Tony Award for Best Performance by a Leading Actress in a Play in Ondine,"
        " and received a Special Tony Award in 1968."
    )
    keyed = [ev for ex in musique.examples for ev in ex.evidence]
    assert len(keyed) == 127 and all(ev.key_start is not None for ev in keyed)
    for ex in musique.examples:
        answers = {d["doc_id"]: d["answer"] for d in reversed(ex.decomposition)}  # the first sub-question
        for ev in ex.evidence:
            sentence = ev.text[ev.key_start - ev.char_start : ev.key_end - ev.char_start]  # type: ignore[operator]
            assert normalize_text(answers[ev.doc_id]) in normalize_text(sentence)
            assert 0 < len(sentence) < len(ev.text) or ev.text.count(". ") == 0


def test_musique_corpus_is_the_deduplicated_union(musique: Benchmark) -> None:
    raw = [json.loads(line) for line in (MUSIQUE / DATASETS["musique"]).read_text().splitlines()]
    assert sum(len(r["paragraphs"]) for r in raw) == 1000
    distinct = {(p["title"], p["paragraph_text"]) for r in raw for p in r["paragraphs"]}
    assert len(musique.corpus) == len(distinct) == 945
    assert len({d.title for d in musique.corpus}) < len(musique.corpus)  # titles repeat, ids do not
    small = load_benchmark("musique", MUSIQUE, limit=2)
    assert len(small.examples) == 2 and len(small.corpus) == 40


def test_musique_flashrag_layout() -> None:
    bench = load_benchmark("musique", MUSIQUE_FLASHRAG)
    assert len(bench.examples) == 200
    ex = bench.examples[0]
    assert ex.id == "dev_0" and ex.question == "Who is the spouse of the Green performer?"
    assert ex.answers == ("Miquette Giraudy",) and ex.question_type is None and ex.hops == 2
    assert [d["answer"] for d in ex.decomposition] == ["Steve Hillage", "Miquette Giraudy"]
    assert_exact_spans(bench)
    assert_corpus_ids_unique(bench)
    # no distractors: the corpus is exactly the support paragraphs
    assert {d.id for d in bench.corpus} == {e.doc_id for ex in bench.examples for e in ex.evidence}


def test_musique_both_layouts_give_the_same_ids() -> None:
    official = {ex.question: ex for ex in load_benchmark("musique", MUSIQUE).examples}
    flashrag = {ex.question: ex for ex in load_benchmark("musique", MUSIQUE_FLASHRAG).examples}
    shared = official.keys() & flashrag.keys()
    assert len(shared) == 10
    for q in shared:
        assert official[q].evidence == flashrag[q].evidence
        assert official[q].decomposition == flashrag[q].decomposition


# --- errors -------------------------------------------------------------------------------------------


def test_unknown_dataset_lists_the_known_ones() -> None:
    with pytest.raises(
        DatasetError,
        match=r"unknown dataset 'squad'; known: multihop_rag, hotpotqa, 2wikimultihopqa, musique",
    ):
        load_benchmark("squad", DATA)  # type: ignore[arg-type]


def test_missing_paths(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match=r"nope\.json: no such file"):
        load_benchmark("hotpotqa", tmp_path / "nope.json")
    with pytest.raises(DatasetError, match=r"hotpot_dev_distractor_v1\.json: no such file"):
        load_benchmark("hotpotqa", tmp_path)
    (tmp_path / "MultiHopRAG.json").write_text("[]")
    with pytest.raises(DatasetError, match=r"corpus\.json: no such file"):
        load_benchmark("multihop_rag", tmp_path)


def test_unreadable_and_malformed_files(tmp_path: Path) -> None:
    empty = tmp_path / "empty.json"
    empty.write_text("  \n")
    with pytest.raises(DatasetError, match=r"empty\.json: the file is empty"):
        load_benchmark("hotpotqa", empty)
    broken = tmp_path / "broken.json"
    broken.write_text('[{"_id": 1,\n')
    with pytest.raises(DatasetError, match=r"broken\.json: not valid JSON.*line 2"):
        load_benchmark("hotpotqa", broken)
    binary = tmp_path / "binary.json"
    binary.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(DatasetError, match=r"binary\.json: cannot be read"):
        load_benchmark("hotpotqa", binary)
    lines = tmp_path / "bad.jsonl"
    lines.write_text('{"id": "a"}\n\n{oops\n')
    with pytest.raises(DatasetError, match=r"bad\.jsonl: line 3: not valid JSON"):
        load_benchmark("musique", lines)
    not_objects = tmp_path / "list.json"
    not_objects.write_text("[1, 2]")
    with pytest.raises(DatasetError, match=r"list\.json: record 0: expected a JSON object, got int"):
        load_benchmark("hotpotqa", not_objects)
    with pytest.raises(DatasetError, match="limit must not be negative"):
        load_benchmark("hotpotqa", HOTPOT, limit=-1)
    with pytest.raises(DatasetError, match="skip must not be negative"):
        load_benchmark("hotpotqa", HOTPOT, skip=-1)


def test_malformed_records_name_position_and_field(tmp_path: Path) -> None:
    good = {
        "_id": "x",
        "question": "q",
        "answer": "a",
        "context": [["P", ["One."]]],
        "supporting_facts": [["P", 0]],
    }
    cases = [
        ({k: v for k, v in good.items() if k != "question"}, r"record 1: missing field 'question'"),
        ({**good, "answer": 3}, r"record 1: field 'answer' should be a string, got 3"),
        ({**good, "context": [["P"]]}, r"record 1: context\[0\]: expected \[title, \[sentences\]\]"),
        (
            {**good, "supporting_facts": [["P", 4]]},
            r"record 1: supporting fact \['P', 4\]: the paragraph has only 1",
        ),
        ({**good, "supporting_facts": [["Q", 0]]}, r"record 1: supporting fact \['Q', 0\] names no context"),
        (
            {**good, "supporting_facts": [["P", True]]},
            r"record 1: supporting_facts\[0\]: expected \[title, sentence",
        ),
        ({**good, "context": [["", ["One."]]]}, r"record 1: document id must be a non-empty string"),
    ]
    for i, (bad, message) in enumerate(cases):
        path = tmp_path / f"case{i}.json"
        path.write_text(json.dumps([good, bad]))
        with pytest.raises(DatasetError, match=message) as err:
            load_benchmark("hotpotqa", path)
        assert f"case{i}.json" in str(err.value)


def test_malformed_musique_and_multihop_rag_records(tmp_path: Path) -> None:
    record = json.loads((MUSIQUE / DATASETS["musique"]).read_text().splitlines()[0])
    record["question_decomposition"][1]["paragraph_support_idx"] = 99
    path = tmp_path / "m.jsonl"
    path.write_text(json.dumps(record) + "\n")
    with pytest.raises(
        DatasetError, match=r"m\.jsonl: line 1: question_decomposition\[1\]: paragraph_support_idx 99"
    ):
        load_benchmark("musique", path)

    (tmp_path / "corpus.json").write_text(json.dumps([{"title": "T", "url": "u", "body": "b"}]))
    query = {"query": "q", "answer": "a", "question_type": "comparison_query",
             "evidence_list": [{"title": "Other", "url": "v", "fact": "f"}]}  # fmt: skip
    (tmp_path / "MultiHopRAG.json").write_text(json.dumps([query]))
    with pytest.raises(
        DatasetError, match=r"record 0: evidence_list\[0\]: no article of corpus\.json has url 'v'"
    ):
        load_benchmark("multihop_rag", tmp_path)
