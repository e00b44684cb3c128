"""Benchmark loaders: each public multi-hop QA set, read in its original file format, in one shape.

Every benchmark becomes questions with gold answers and gold evidence, plus the corpus to retrieve from.
Gold evidence is located in the corpus as character spans, so retrieval can be scored by overlap whatever
unit a method retrieves (see evals.metrics.evidence_found). The corpus of the Wikipedia-based sets is the
union of the evaluated questions' paragraphs, the usual "distractor" setting: gold and distractor
paragraphs of every question are in one index, and every question competes with all the others' too.
The questions IR-CoT's in-context demonstrations were built from (prompts.demonstrations) are left out of
every benchmark, so no method is ever evaluated on a question a prompt has shown worked.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from evals.gold import GoldEvidence
from evals.metrics import locate_span
from prompts.demonstrations import DEMONSTRATION_IDS, DEMONSTRATION_QUESTIONS
from stores.documents import Document
from stores.errors import HopgraphError

DatasetName = Literal["multihop_rag", "hotpotqa", "2wikimultihopqa", "musique"]

#: Default questions file of each dataset inside its folder (what the CLI opens when given a folder).
DATASETS: dict[str, str] = {
    "multihop_rag": "MultiHopRAG.json",
    "hotpotqa": "hotpot_dev_distractor_v1.json",
    "2wikimultihopqa": "2wikimultihopqa_dev_200.jsonl",
    "musique": "musique_ans_v1.0_dev.jsonl",
}
#: Runtime options a benchmark implies, applied by `hopgraph eval` unless the caller sets them: MultiHop-RAG's
#: null queries are answered right only by refusing, which a method does on purpose with `unanswerable`.
DATASET_OPTIONS: dict[str, dict[str, Any]] = {"multihop_rag": {"unanswerable": True}}
#: MultiHop-RAG's articles, always next to its questions file.
MULTIHOP_RAG_CORPUS = "corpus.json"
_MULTIHOP_RAG_METADATA = ("author", "source", "published_at", "category", "url")
# How each sentence-annotated set joins a paragraph's sentences into one text. HotpotQA's sentences carry
# their own leading spaces (and some splits fall inside a word), so plain concatenation restores the
# original paragraph; 2WikiMultihopQA's sentences are stripped, so they need a space between them.
_SENTENCE_JOINERS = {"hotpotqa": "", "2wikimultihopqa": " "}


class DatasetError(HopgraphError):
    """A benchmark file that cannot be loaded: missing, unreadable, or a record that is malformed."""


@dataclass(frozen=True)
class QAExample:
    """One benchmark question with everything needed to score an answer and the retrieval behind it.

    `answers` holds the gold answer first, then its aliases. `hops` is the number of distinct evidence
    documents (MultiHop-RAG, HotpotQA, 2Wiki) or gold sub-questions (MuSiQue); None when the question has
    no evidence to hop over (MultiHop-RAG null queries). `decomposition` is MuSiQue's gold sub-questions as
    {"question", "answer", "doc_id"} dicts (doc_id None when the sub-question has no support paragraph).
    """

    id: str
    dataset: str
    question: str
    answers: tuple[str, ...]
    evidence: tuple[GoldEvidence, ...]
    question_type: str | None
    hops: int | None
    decomposition: tuple[dict[str, str | None], ...]
    answerable: bool


@dataclass
class Benchmark:
    """The evaluated questions of one dataset and the corpus their retrieval runs over."""

    name: str
    examples: list[QAExample]
    corpus: list[Document]


@dataclass(frozen=True)
class _Record:
    """One JSON object of a dataset file, with its position, so every error can point at it."""

    index: int
    where: str
    data: dict[str, Any]


def _type_name(kind: type | tuple[type, ...]) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    names = {str: "a string", int: "an integer", bool: "true/false", list: "a list", dict: "an object"}
    return " or ".join(names.get(k, k.__name__) for k in kinds)


def _get(obj: Any, key: str, kind: type | tuple[type, ...], where: str, default: Any = ...) -> Any:
    """obj[key] checked against `kind`; a missing key falls back to `default` or is reported at `where`."""
    if not isinstance(obj, dict):
        raise DatasetError(f"{where}: expected an object, got {type(obj).__name__}")
    if key not in obj:
        if default is not ...:
            return default
        raise DatasetError(f"{where}: missing field {key!r}")
    value = obj[key]
    # bool is a subclass of int in Python, but true/false is never a valid index or count here.
    wrong_bool = isinstance(value, bool) and kind is int
    if wrong_bool or not isinstance(value, kind):
        raise DatasetError(f"{where}: field {key!r} should be {_type_name(kind)}, got {value!r:.80}")
    return value


def _strings(value: Any, where: str) -> list[str]:
    if not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
        raise DatasetError(f"{where}: expected a list of strings")
    return value


def _jsonl_items(path: Path, text: str) -> Iterator[tuple[str, Any]]:
    """Parse JSON Lines lazily, so a limit stops parsing early; blank lines are skipped."""
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            yield f"line {lineno}", json.loads(line)
        except json.JSONDecodeError as e:
            raise DatasetError(f"{path}: line {lineno}: not valid JSON: {e.msg} (column {e.colno})") from e


def _is_demonstration(dataset: str, data: dict[str, Any]) -> bool:
    """A question an in-context demonstration was built from (prompts.demonstrations), which is never
    evaluated: known by its id within its own dataset (other datasets reuse ids such as "dev_97"), in the
    official (`_id`) or FlashRAG (`id`) layout, and by its text in any dataset."""
    qid = data.get("_id", data.get("id"))
    question = data.get("question", data.get("query"))
    return qid in DEMONSTRATION_IDS.get(dataset, frozenset()) or question in DEMONSTRATION_QUESTIONS


def _read_records(
    path: Path, limit: int | None, questions_of: str | None = None, skip: int = 0
) -> list[_Record]:
    """The first `limit` JSON objects of a file holding either one JSON array or JSON Lines, after `skip`.

    The layout is told from the content (a leading "["), not the file name, because the same datasets
    circulate as .json arrays, .jsonl files and JSON Lines saved under .json. For a questions file of
    dataset `questions_of`, the questions demonstrations were built from are skipped before the limit
    counts, so `limit` questions are always evaluated ones; `skip` drops that many of them first (questions
    disjoint from the first ones, for a benchmark that decides a setting on other questions than those
    evaluated).
    """
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as e:
        raise DatasetError(f"{path}: no such file") from e
    except (OSError, UnicodeDecodeError) as e:
        raise DatasetError(f"{path}: cannot be read: {e}") from e
    if not text.strip():
        raise DatasetError(f"{path}: the file is empty")
    items: Iterator[tuple[str, Any]]
    if text.lstrip().startswith("["):
        try:
            parsed = json.loads(text)
        except json.JSONDecodeError as e:
            raise DatasetError(f"{path}: not valid JSON: {e.msg} (line {e.lineno}, column {e.colno})") from e
        items = ((f"record {i}", item) for i, item in enumerate(parsed))
    else:
        items = _jsonl_items(path, text)
    records: list[_Record] = []
    for label, item in items:
        if limit is not None and len(records) >= limit:
            break
        where = f"{path}: {label}"
        if not isinstance(item, dict):
            raise DatasetError(f"{where}: expected a JSON object, got {type(item).__name__}")
        if questions_of is not None and _is_demonstration(questions_of, item):
            continue
        if skip > 0:
            skip -= 1
            continue
        records.append(_Record(len(records), where, item))
    return records


def dataset_records(path: Path) -> list[dict[str, Any]]:
    """Every JSON object of a questions file as it stands (one JSON array or JSON Lines), read as the loaders
    read it, its errors included: for writing a subset of a dataset back in its own layout."""
    return [record.data for record in _read_records(path, None)]


def _unique(values: list[str]) -> tuple[str, ...]:
    """Drop repeated answers/aliases, keeping the first (the gold answer) first."""
    return tuple(dict.fromkeys(values))


def _document(where: str, doc_id: str, title: str, text: str, metadata: dict[str, Any]) -> Document:
    """A Document, with its own validation (e.g. an empty id) reported at the record that caused it."""
    try:
        return Document(id=doc_id, title=title, text=text, metadata=metadata)
    except ValueError as e:
        raise DatasetError(f"{where}: {e}") from e


class _Corpus:
    """The union of the evaluated questions' paragraphs, one Document per id, first seen kept.

    The same Wikipedia title recurs across questions; keeping the first copy avoids indexing duplicates.
    Evidence is then located in the copy that was kept, which is why `add` returns it.
    """

    def __init__(self) -> None:
        self._docs: dict[str, Document] = {}

    def add(self, where: str, doc_id: str, title: str, text: str) -> Document:
        if doc_id not in self._docs:
            self._docs[doc_id] = _document(where, doc_id, title, text, {})
        return self._docs[doc_id]

    def documents(self) -> list[Document]:
        return list(self._docs.values())


def _evidence_in(doc: Document, text: str, span: tuple[int, int] | None) -> GoldEvidence:
    """GoldEvidence for `text`, whose `span` is known in its own paragraph when that paragraph is `doc`.

    When the kept document differs from the paragraph the record gave (same title, other text), the span
    no longer applies and the text is searched for in the kept document instead.
    """
    located = span if span is not None else locate_span(text, doc.text)
    start, end = located if located is not None else (None, None)
    return GoldEvidence(doc_id=doc.id, title=doc.title, text=text, char_start=start, char_end=end)


# --- MultiHop-RAG -------------------------------------------------------------------------------------


def _load_multihop_rag(questions: Path, limit: int | None, skip: int = 0) -> Benchmark:
    """MultiHopRAG.json + corpus.json: articles keyed by url; evidence facts located in their article."""
    corpus_path = questions.parent / MULTIHOP_RAG_CORPUS
    if not corpus_path.is_file():
        raise DatasetError(
            f"{corpus_path}: no such file (MultiHop-RAG needs its corpus next to {questions.name})"
        )
    corpus: list[Document] = []
    by_url: dict[str, Document] = {}
    by_title: dict[str, Document] = {}
    for rec in _read_records(corpus_path, None):
        url = _get(rec.data, "url", str, rec.where)
        if url in by_url:
            raise DatasetError(f"{rec.where}: url {url!r} repeats an earlier article")
        metadata: dict[str, Any] = {}
        for key in _MULTIHOP_RAG_METADATA:
            value = _get(rec.data, key, (str, int, float, bool, type(None)), rec.where, None)
            if value is not None:
                metadata[key] = value
        title = _get(rec.data, "title", str, rec.where)
        doc = _document(rec.where, url, title, _get(rec.data, "body", str, rec.where), metadata)
        corpus.append(doc)
        by_url[url] = doc
        by_title.setdefault(doc.title, doc)

    examples: list[QAExample] = []
    for rec in _read_records(questions, limit, "multihop_rag", skip):
        question_type = _get(rec.data, "question_type", str, rec.where)
        evidence: list[GoldEvidence] = []
        for j, item in enumerate(_get(rec.data, "evidence_list", list, rec.where)):
            where = f"{rec.where}: evidence_list[{j}]"
            fact = _get(item, "fact", str, where)
            url, title = item.get("url"), item.get("title")
            doc = by_url.get(url) if isinstance(url, str) else None
            if doc is None and isinstance(title, str):
                doc = by_title.get(title)
            if doc is None:
                raise DatasetError(
                    f"{where}: no article of {corpus_path.name} has url {url!r} or title {title!r}"
                )
            evidence.append(_evidence_in(doc, fact, None))
        answerable = question_type != "null_query"
        examples.append(
            QAExample(
                id=f"mhr_{rec.index}",
                dataset="multihop_rag",
                question=_get(rec.data, "query", str, rec.where),
                answers=(_get(rec.data, "answer", str, rec.where),),
                evidence=tuple(evidence),
                question_type=question_type,
                hops=len({e.doc_id for e in evidence}) if answerable else None,
                decomposition=(),
                answerable=answerable,
            )
        )
    return Benchmark("multihop_rag", examples, corpus)


# --- HotpotQA and 2WikiMultihopQA (sentence-level supporting facts) -----------------------------------


@dataclass(frozen=True)
class _SentenceQA:
    """A HotpotQA / 2Wiki record in the official layout, whichever layout the file used."""

    id: str
    question: str
    answers: tuple[str, ...]
    question_type: str | None
    context: list[tuple[str, list[str]]]
    supporting: list[tuple[str, int]]


def _official_sentence_qa(rec: _Record) -> _SentenceQA:
    """Official layout: `_id`, `answer`, context [[title, [sentences]]], supporting_facts [[title, i]]."""
    context: list[tuple[str, list[str]]] = []
    for i, pair in enumerate(_get(rec.data, "context", list, rec.where)):
        where = f"{rec.where}: context[{i}]"
        if not (isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], str)):
            raise DatasetError(f"{where}: expected [title, [sentences]]")
        context.append((pair[0], _strings(pair[1], where)))
    supporting: list[tuple[str, int]] = []
    for i, fact in enumerate(_get(rec.data, "supporting_facts", list, rec.where)):
        ok = isinstance(fact, list) and len(fact) >= 2 and isinstance(fact[0], str)
        if not (ok and isinstance(fact[1], int) and not isinstance(fact[1], bool)):
            raise DatasetError(f"{rec.where}: supporting_facts[{i}]: expected [title, sentence index]")
        supporting.append((fact[0], fact[1]))
    return _SentenceQA(
        id=_get(rec.data, "_id", str, rec.where),
        question=_get(rec.data, "question", str, rec.where),
        answers=(_get(rec.data, "answer", str, rec.where),),
        question_type=_get(rec.data, "type", str, rec.where, None),
        context=context,
        supporting=supporting,
    )


def _flashrag_sentence_qa(rec: _Record) -> _SentenceQA:
    """FlashRAG layout: `id`, `golden_answers`, metadata.context / metadata.supporting_facts as columns."""
    meta = _get(rec.data, "metadata", dict, rec.where)
    where = f"{rec.where}: metadata"
    ctx = _get(meta, "context", dict, where)
    titles = _strings(_get(ctx, "title", list, f"{where}.context"), f"{where}.context.title")
    # FlashRAG names the sentence lists "content" for 2Wiki and "sentences" for HotpotQA.
    key = "content" if "content" in ctx else "sentences"
    contents = _get(ctx, key, list, f"{where}.context")
    if len(titles) != len(contents):
        raise DatasetError(f"{where}.context: {len(titles)} titles but {len(contents)} sentence lists")
    context = [
        (t, _strings(c, f"{where}.context.{key}[{i}]"))
        for i, (t, c) in enumerate(zip(titles, contents, strict=True))
    ]
    sf = _get(meta, "supporting_facts", dict, where)
    sf_where = f"{where}.supporting_facts"
    sf_titles = _strings(_get(sf, "title", list, sf_where), f"{sf_where}.title")
    sent_ids = _get(sf, "sent_id", list, sf_where)
    integers = all(isinstance(i, int) and not isinstance(i, bool) for i in sent_ids)
    if len(sf_titles) != len(sent_ids) or not integers:
        raise DatasetError(f"{sf_where}: needs as many integer sent_id as titles")
    answers = _strings(_get(rec.data, "golden_answers", list, rec.where), f"{rec.where}: golden_answers")
    if not answers:
        raise DatasetError(f"{rec.where}: golden_answers is empty")
    return _SentenceQA(
        id=_get(rec.data, "id", str, rec.where),
        question=_get(rec.data, "question", str, rec.where),
        answers=_unique(answers),
        question_type=_get(meta, "type", str, where, None),
        context=context,
        supporting=list(zip(sf_titles, sent_ids, strict=True)),
    )


def _join_sentences(sentences: list[str], joiner: str) -> tuple[str, list[tuple[int, int]]]:
    """The paragraph text and the (start, end) of every sentence in it."""
    spans: list[tuple[int, int]] = []
    pos = 0
    for i, s in enumerate(sentences):
        if i:
            pos += len(joiner)
        spans.append((pos, pos + len(s)))
        pos += len(s)
    return joiner.join(sentences), spans


def _load_sentence_qa(name: str, path: Path, limit: int | None, skip: int = 0) -> Benchmark:
    """HotpotQA / 2Wiki: a Document per paragraph title, one GoldEvidence per supporting sentence."""
    joiner = _SENTENCE_JOINERS[name]
    corpus = _Corpus()
    examples: list[QAExample] = []
    for rec in _read_records(path, limit, name, skip):
        qa = _flashrag_sentence_qa(rec) if "golden_answers" in rec.data else _official_sentence_qa(rec)
        # title -> (kept document, sentences, sentence spans valid in the kept document or None)
        paragraphs: dict[str, tuple[Document, list[str], list[tuple[int, int]] | None]] = {}
        for title, sentences in qa.context:
            text, spans = _join_sentences(sentences, joiner)
            kept = corpus.add(rec.where, title, title, text)
            paragraphs.setdefault(title, (kept, sentences, spans if kept.text == text else None))
        evidence: list[GoldEvidence] = []
        for title, idx in dict.fromkeys(qa.supporting):
            fact = f"{rec.where}: supporting fact [{title!r}, {idx}]"
            if title not in paragraphs:
                raise DatasetError(f"{fact} names no context paragraph")
            doc, sentences, spans = paragraphs[title]
            if not 0 <= idx < len(sentences):
                raise DatasetError(f"{fact}: the paragraph has only {len(sentences)} sentences")
            sentence = sentences[idx]
            text = sentence.strip()  # the leading space HotpotQA keeps is layout, not evidence
            if not text:
                continue  # a blank sentence holds no evidence and could never be found
            span = None
            if spans is not None:
                start = spans[idx][0] + len(sentence) - len(sentence.lstrip())
                span = (start, start + len(text))
            evidence.append(_evidence_in(doc, text, span))
        examples.append(
            QAExample(
                id=qa.id,
                dataset=name,
                question=qa.question,
                answers=qa.answers,
                evidence=tuple(evidence),
                question_type=qa.question_type,
                hops=len({t for t, _ in qa.supporting}),
                decomposition=(),
                answerable=True,
            )
        )
    return Benchmark(name, examples, corpus.documents())


# --- MuSiQue (paragraph-level support and gold decompositions) ----------------------------------------


def _paragraph_id(title: str, text: str) -> str:
    """MuSiQue reuses titles for different paragraphs, so the id adds a short hash of the text."""
    return f"{title}::{hashlib.sha1(text.encode('utf-8')).hexdigest()[:8]}"


def _paragraph(obj: Any, corpus: _Corpus, where: str) -> tuple[int, GoldEvidence]:
    """Add one MuSiQue paragraph to the corpus; return its idx and its whole-paragraph evidence."""
    idx = _get(obj, "idx", int, where)
    title = _get(obj, "title", str, where)
    text = _get(obj, "paragraph_text", str, where)
    doc = corpus.add(where, _paragraph_id(title, text), title, text)
    return idx, _evidence_in(doc, text, (0, len(text)) if doc.text == text else None)


# Where a sentence ends: ., ! or ? (and any closing quote or bracket), then whitespace.
_SENTENCE_END = re.compile(r"""[.!?]["')\]]*\s+""")


def _sentence_around(text: str, start: int, end: int) -> tuple[int, int]:
    """The (start, end) of the sentence of `text` that holds text[start:end] (a rule, not a parser: the
    scorer must not depend on a model, and MuSiQue's paragraphs are plain Wikipedia prose)."""
    begin = 0
    for m in _SENTENCE_END.finditer(text, 0, start):
        begin = m.end()
    m = _SENTENCE_END.search(text, end)
    return begin, m.start() + len(m.group().rstrip()) if m else len(text.rstrip())


def _with_answer_sentence(gold: GoldEvidence, answer: str) -> GoldEvidence:
    """`gold` (a whole paragraph) with the sentence holding `answer` as its key span, when it is written
    there; the first place it occurs, as a reader would find it."""
    if gold.char_start is None or gold.key_start is not None:
        return gold
    found = locate_span(answer, gold.text)
    if found is None:
        return gold
    start, end = _sentence_around(gold.text, *found)
    return replace(gold, key_start=gold.char_start + start, key_end=gold.char_start + end)


def _musique_question_type(qid: str) -> str | None:
    """Official ids start with the reasoning shape ("2hop", "3hop1", ...); FlashRAG's "dev_N" do not."""
    return qid.split("__", 1)[0] if "__" in qid else None


def _musique_example(
    rec: _Record,
    qid: str,
    answers: tuple[str, ...],
    answerable: bool,
    steps: list[Any],
    by_idx: dict[int, GoldEvidence],
    supporting: list[int],
) -> QAExample:
    """Shared tail of both MuSiQue layouts: decomposition, evidence in sub-question order, then the rest."""
    decomposition: list[dict[str, str | None]] = []
    order: list[int] = []
    for j, step in enumerate(steps):
        where = f"{rec.where}: question_decomposition[{j}]"
        support = _get(step, "paragraph_support_idx", (int, type(None)), where, None)
        if support is not None and support not in by_idx:
            raise DatasetError(f"{where}: paragraph_support_idx {support} names no paragraph of the record")
        decomposition.append(
            {
                "question": _get(step, "question", str, where),
                "answer": _get(step, "answer", str, where),
                "doc_id": by_idx[support].doc_id if support is not None else None,
            }
        )
        if support is not None:
            order.append(support)
            by_idx[support] = _with_answer_sentence(by_idx[support], decomposition[-1]["answer"] or "")
    evidence = tuple(by_idx[i] for i in dict.fromkeys(order + supporting))
    return QAExample(
        id=qid,
        dataset="musique",
        question=_get(rec.data, "question", str, rec.where),
        answers=answers,
        evidence=evidence,
        question_type=_musique_question_type(qid),
        hops=len(steps),
        decomposition=tuple(decomposition),
        answerable=answerable,
    )


def _official_musique(rec: _Record, corpus: _Corpus) -> QAExample:
    """Official layout: 20 paragraphs (gold and distractors) with is_supporting flags."""
    by_idx: dict[int, GoldEvidence] = {}
    supporting: list[int] = []
    for i, p in enumerate(_get(rec.data, "paragraphs", list, rec.where)):
        where = f"{rec.where}: paragraphs[{i}]"
        idx, evidence = _paragraph(p, corpus, where)
        by_idx[idx] = evidence
        if _get(p, "is_supporting", bool, where, False):
            supporting.append(idx)
    aliases = _strings(_get(rec.data, "answer_aliases", list, rec.where, []), f"{rec.where}: answer_aliases")
    return _musique_example(
        rec,
        qid=_get(rec.data, "id", str, rec.where),
        answers=_unique([_get(rec.data, "answer", str, rec.where), *aliases]),
        answerable=_get(rec.data, "answerable", bool, rec.where, True),
        steps=_get(rec.data, "question_decomposition", list, rec.where),
        by_idx=by_idx,
        supporting=supporting,
    )


def _flashrag_musique(rec: _Record, corpus: _Corpus) -> QAExample:
    """FlashRAG layout: only the support paragraphs, each inside its decomposition step."""
    meta = _get(rec.data, "metadata", dict, rec.where)
    steps = _get(meta, "question_decomposition", list, f"{rec.where}: metadata")
    by_idx: dict[int, GoldEvidence] = {}
    for j, step in enumerate(steps):
        where = f"{rec.where}: question_decomposition[{j}]"
        paragraph = _get(step, "support_paragraph", dict, where)
        idx, evidence = _paragraph(paragraph, corpus, f"{where}.support_paragraph")
        by_idx[idx] = evidence
    answers = _strings(_get(rec.data, "golden_answers", list, rec.where), f"{rec.where}: golden_answers")
    if not answers:
        raise DatasetError(f"{rec.where}: golden_answers is empty")
    return _musique_example(
        rec,
        qid=_get(rec.data, "id", str, rec.where),
        answers=_unique(answers),
        answerable=_get(meta, "answerable", bool, f"{rec.where}: metadata", True),
        steps=steps,
        by_idx=by_idx,
        supporting=[],
    )


def _load_musique(path: Path, limit: int | None, skip: int = 0) -> Benchmark:
    """MuSiQue in the official or the FlashRAG layout, told apart per record by its fields."""
    corpus = _Corpus()
    examples = [
        _flashrag_musique(rec, corpus) if "golden_answers" in rec.data else _official_musique(rec, corpus)
        for rec in _read_records(path, limit, "musique", skip)
    ]
    return Benchmark("musique", examples, corpus.documents())


# --- entry point -------------------------------------------------------------------------------------


def _questions_file(name: str, path: Path) -> Path:
    """The questions file meant by `path`: the dataset's default file when given its folder."""
    if path.is_dir():
        path = path / DATASETS[name]
    elif name == "multihop_rag" and path.name == MULTIHOP_RAG_CORPUS:
        path = path.parent / DATASETS[name]
    if not path.is_file():
        hint = f" (expected {DATASETS[name]} or a file given explicitly)" if path.parent.is_dir() else ""
        raise DatasetError(f"{path}: no such file{hint}")
    return path


def load_benchmark(name: DatasetName, path: str | Path, limit: int | None = None, skip: int = 0) -> Benchmark:
    """Load the first `limit` questions of a benchmark (all when None), after its first `skip`, and the corpus
    they are asked over.

    `path` is the dataset folder (its default file, DATASETS[name], is read) or a file in it. MultiHop-RAG's
    corpus is always the full corpus.json; the others' corpus is the union of the loaded questions'
    paragraphs, so a limit shrinks the corpus with the questions.
    """
    if name not in DATASETS:
        raise DatasetError(f"unknown dataset {name!r}; known: {', '.join(DATASETS)}")
    if limit is not None and limit < 0:
        raise DatasetError(f"limit must not be negative, got {limit}")
    if skip < 0:
        raise DatasetError(f"skip must not be negative, got {skip}")
    questions = _questions_file(name, Path(path))
    if name == "multihop_rag":
        return _load_multihop_rag(questions, limit, skip)
    if name == "musique":
        return _load_musique(questions, limit, skip)
    return _load_sentence_qa(name, questions, limit, skip)
