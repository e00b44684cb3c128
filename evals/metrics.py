"""Answer and retrieval metrics: pure functions of the gold data and of what a method returned.

Answers are scored the way the benchmarks' own scripts score them (SQuAD / HotpotQA normalisation), so
numbers can be set beside published ones. Retrieved evidence is scored by mapping both the gold evidence
and what a method retrieved onto spans of the corpus, because methods retrieve at different granularities
(sentences, propositions, chunks, whole documents) and a string comparison alone would favour whichever
granularity happens to resemble the gold annotation.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from evals.gold import GoldEvidence

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_DROP_PUNCTUATION = str.maketrans("", "", string.punctuation)
# HotpotQA's rule: a yes/no (or no-answer) prediction shares no partial credit with anything else, since
# "no" against "yes, it was" would otherwise earn token overlap for the opposite answer.
_CLOSED_ANSWERS = frozenset({"yes", "no", "noanswer"})
_TEXT_TOKEN = re.compile(r"[a-z0-9]+")
# Share of a gold item's words that must appear in one retrieved text for the word-presence rule.
_WORD_SHARE = 0.9
# Shorter gold texts must appear whole: a few common words are present in almost any chunk.
_MIN_WORDS = 4


def normalize_answer(s: str) -> str:
    """Lowercase, drop punctuation and the articles a/an/the, fold whitespace (SQuAD / HotpotQA)."""
    s = _ARTICLES.sub(" ", s.lower().translate(_DROP_PUNCTUATION))
    return " ".join(s.split())


def _gold_answers(answers: str | Sequence[str]) -> tuple[str, ...]:
    """Accept one answer or a sequence of them; a bare string must not be iterated letter by letter."""
    out = (answers,) if isinstance(answers, str) else tuple(answers)
    if not out:
        raise ValueError("no gold answers to score against")
    return out


def exact_match(pred: str, answers: str | Sequence[str]) -> float:
    """1.0 when the normalised prediction equals any normalised gold answer or alias, else 0.0."""
    p = normalize_answer(pred)
    return float(any(p == normalize_answer(a) for a in _gold_answers(answers)))


def _f1(pred_norm: str, gold_norm: str) -> float:
    """Token-overlap F1 of two normalised answers.

    Both empty counts as agreement (SQuAD 2.0); HotpotQA's script would return 0 there, but an empty gold
    answer only arises from an answer made solely of punctuation/articles, where agreement is the truth.
    """
    if (pred_norm in _CLOSED_ANSWERS or gold_norm in _CLOSED_ANSWERS) and pred_norm != gold_norm:
        return 0.0
    p, g = pred_norm.split(), gold_norm.split()
    if not p or not g:
        return float(p == g)
    common = sum((Counter(p) & Counter(g)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(p), common / len(g)
    return 2 * precision * recall / (precision + recall)


def token_f1(pred: str, answers: str | Sequence[str]) -> float:
    """Token F1 of the prediction against the best-matching gold answer or alias."""
    p = normalize_answer(pred)
    return max(_f1(p, normalize_answer(a)) for a in _gold_answers(answers))


# Answer lengths in words, bucketed as a distribution is read: a span (1-3 words), a long span or short
# phrase (4-5), a clause (6-10) and a sentence (more); 0 is an empty answer.
WORD_BUCKETS: tuple[tuple[str, int, int | None], ...] = (
    ("0", 0, 0), ("1", 1, 1), ("2", 2, 2), ("3", 3, 3), ("4-5", 4, 5), ("6-10", 6, 10), ("> 10", 11, None),
)  # fmt: skip
PAST_GOLD_WORDS = 3


def answer_words(answer: str) -> int:
    """Words of an answer as written (whitespace-separated, before normalisation): its length as read."""
    return len(answer.split())


def past_gold(answer: str, answers: str | Sequence[str], margin: int = PAST_GOLD_WORDS) -> bool:
    """Longer than the shortest gold answer by more than `margin` words: a sentence where the benchmark
    scores a span, which EM cannot credit even when the span is inside it."""
    return answer_words(answer) > min(answer_words(a) for a in _gold_answers(answers)) + margin


def word_bucket(answer: str) -> str:
    """The name of the WORD_BUCKETS bucket the answer's length in words falls in."""
    words = answer_words(answer)
    return next(name for name, low, high in WORD_BUCKETS if low <= words and (high is None or words <= high))


def word_buckets(answers: Sequence[str]) -> dict[str, float]:
    """The share of `answers` (0-1) in each of WORD_BUCKETS, in its order; all 0.0 for no answer."""
    counts = Counter(map(word_bucket, answers))
    return {name: counts[name] / len(answers) if answers else 0.0 for name, _, _ in WORD_BUCKETS}


def normalize_text(s: str) -> str:
    """Lowercase, keep only ASCII letters and digits, fold everything else into single spaces.

    This is the evidence-text normalisation of the reference baselines (shared/peers), kept identical so
    that the text rule of `evidence_found` reproduces their Hits@k / Full@k on the same retrieval.
    """
    return " ".join(_TEXT_TOKEN.findall(s.lower()))


def normalize_with_offsets(s: str) -> tuple[str, list[int]]:
    """`normalize_text(s)` plus, for every character of it, the index in `s` it came from.

    Lets a match found in normalised text (where whitespace, punctuation and case no longer differ) be
    mapped back to exact offsets of the raw text.
    """
    lowered: list[str] = []
    origin: list[int] = []
    for i, ch in enumerate(s):
        low = ch.lower()  # may be longer than one character, hence the explicit origin map
        lowered.append(low)
        origin.extend([i] * len(low))
    flat = "".join(lowered)
    parts: list[str] = []
    offsets: list[int] = []
    for m in _TEXT_TOKEN.finditer(flat):
        if parts:
            parts.append(" ")
            offsets.append(origin[m.start()])
        parts.append(m.group())
        offsets.extend(origin[m.start() : m.end()])
    return "".join(parts), offsets


def locate_span(needle: str, haystack: str) -> tuple[int, int] | None:
    """Where `needle` sits in `haystack` as raw (start, end) offsets, or None.

    The first exact occurrence wins; otherwise both are normalised and the needle is searched as a run of
    whole normalised words, then mapped back to raw offsets. Gold facts are sometimes copied with different
    whitespace, quotes or case than the article body, yet still name one exact stretch of it.
    """
    if not needle:
        return None
    i = haystack.find(needle)
    if i >= 0:
        return i, i + len(needle)
    n = normalize_text(needle)
    if not n:
        return None
    h, offsets = normalize_with_offsets(haystack)
    p = f" {h} ".find(f" {n} ")  # padded so the match starts and ends on word boundaries
    if p < 0:
        return None
    return offsets[p], offsets[p + len(n) - 1] + 1


@dataclass(frozen=True)
class RetrievedSpan:
    """One unit a method retrieved: a stretch of corpus document `doc_id` (offsets None if unknown)."""

    doc_id: str
    char_start: int | None
    char_end: int | None
    text: str


def _span_key(span: RetrievedSpan) -> tuple[str, int | None, int | None, str | None]:
    """Identity of a retrieved unit: its corpus span when known, else its text within its document.

    Without offsets, two different chunks of one document would otherwise collapse into one.
    """
    if span.char_start is not None and span.char_end is not None:
        return span.doc_id, span.char_start, span.char_end, None
    return span.doc_id, None, None, span.text


def dedupe_spans(spans: Sequence[RetrievedSpan]) -> list[RetrievedSpan]:
    """Drop repeated units (same document and span), keeping the first occurrence and the order.

    Done before cutting the top k: a method that returns the same chunk twice must not fill its k slots
    with it, nor have it counted twice in precision.
    """
    seen: set[tuple[str, int | None, int | None, str | None]] = set()
    out: list[RetrievedSpan] = []
    for s in spans:
        key = _span_key(s)
        if key not in seen:
            seen.add(key)
            out.append(s)
    return out


def _merged(intervals: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """Sorted, non-overlapping intervals covering the same characters as `intervals`."""
    out: list[tuple[int, int]] = []
    for start, end in sorted(i for i in intervals if i[1] > i[0]):
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out


def _covered(read: Sequence[tuple[int, int]], start: int, end: int) -> int:
    """How many characters of [start, end) the merged intervals `read` cover."""
    return sum(max(0, min(end, e) - max(start, s)) for s, e in read)


def _half_read(read: Sequence[tuple[int, int]], start: int | None, end: int | None) -> bool:
    """At least half of the span [start, end) is read (an unknown or empty span never is)."""
    if start is None or end is None or end <= start:
        return False
    return 2 * _covered(read, start, end) >= end - start


@dataclass(frozen=True)
class _NormalisedText:
    """A text normalised once, with its word set, so matching many pairs does not redo the work."""

    norm: str
    words: frozenset[str]

    @classmethod
    @lru_cache(maxsize=65536)
    def of(cls, text: str) -> _NormalisedText:
        """Cached: every metric of a question, and every method of a report, reads the same texts."""
        norm = normalize_text(text)
        return cls(norm, frozenset(norm.split()))


def _text_match(gold: _NormalisedText, retrieved: _NormalisedText, same_document: bool) -> bool:
    """Text rule: the gold's normalised text inside the unit's (any document: a verbatim copy is the
    fact), or, in a unit of the gold's own document, >= 90% of its (>= 4) words present.

    The word share is confined to the gold's own document because a sentence can share nearly all its
    words with another document's ("The team competes in the America East Conference." is true of the
    basketball team and of the soccer team): it exists for facts that straddle a chunk border, or that
    the dataset copied with other wording than the document, not for lookalikes elsewhere.
    """
    if not gold.norm:
        return False
    if gold.norm in retrieved.norm:
        return True
    words = gold.norm.split()
    if not same_document or len(words) < _MIN_WORDS:
        return False
    # computed as a ratio, like the baselines, so borderline cases round the same way
    return sum(w in retrieved.words for w in words) / len(words) >= _WORD_SHARE


class _Matcher:
    """Scores what a method read against one question's gold evidence, each text normalised once.

    A gold item is found by the units read together, not by any one unit: the characters read of the
    gold's document are the union of every read unit's span there, so three sentences of a gold paragraph
    read one by one count as much as one chunk holding them, and one sentence of a long paragraph counts
    only as the sentence it is.
    """

    def __init__(self, gold: Sequence[GoldEvidence]) -> None:
        self.gold = list(gold)
        self._gold_text = [_NormalisedText.of(g.text) for g in self.gold]

    def _read_by_document(self, spans: Sequence[RetrievedSpan]) -> dict[str, list[tuple[int, int]]]:
        by_doc: dict[str, list[tuple[int, int]]] = {}
        for s in spans:
            if s.char_start is not None and s.char_end is not None:
                by_doc.setdefault(s.doc_id, []).append((s.char_start, s.char_end))
        return {doc: _merged(intervals) for doc, intervals in by_doc.items()}

    def _text_found(self, i: int, spans: Sequence[RetrievedSpan]) -> bool:
        g, gt = self.gold[i], self._gold_text[i]
        return any(_text_match(gt, _NormalisedText.of(s.text), s.doc_id == g.doc_id) for s in spans)

    def found(self, spans: Sequence[RetrievedSpan]) -> list[bool]:
        """For every gold item, whether `spans` read together find it (`evidence_found`'s rules)."""
        read = self._read_by_document(spans)
        out = []
        for i, g in enumerate(self.gold):
            in_doc = read.get(g.doc_id, [])
            out.append(
                _half_read(in_doc, g.char_start, g.char_end)
                or _half_read(in_doc, g.key_start, g.key_end)
                or self._text_found(i, spans)
            )
        return out

    def coverage(self, spans: Sequence[RetrievedSpan]) -> list[float]:
        """For every gold item, the share of its characters read; an item without a span in its document
        counts 1.0 when the text rule finds it (its words were read) and 0.0 otherwise."""
        read = self._read_by_document(spans)
        out = []
        for i, g in enumerate(self.gold):
            if g.char_start is not None and g.char_end is not None and g.char_end > g.char_start:
                covered = _covered(read.get(g.doc_id, []), g.char_start, g.char_end)
                out.append(covered / (g.char_end - g.char_start))
            else:
                out.append(float(self._text_found(i, spans)))
        return out

    def relevant(self, span: RetrievedSpan) -> bool:
        """Whether one unit is about the gold, for precision: in the gold's own document it holds half of a
        gold span or lies at least half inside one, or it holds a gold text (the text rule)."""
        for g, gt in zip(self.gold, self._gold_text, strict=True):
            if span.doc_id == g.doc_id and _mostly_overlap(g, span):
                return True
            if _text_match(gt, _NormalisedText.of(span.text), span.doc_id == g.doc_id):
                return True
        return False


def _mostly_overlap(gold: GoldEvidence, span: RetrievedSpan) -> bool:
    """Both spans known and their overlap is at least half of the shorter one."""
    gs, ge, ss, se = gold.char_start, gold.char_end, span.char_start, span.char_end
    if gs is None or ge is None or ss is None or se is None:
        return False
    shorter = min(ge - gs, se - ss)
    return shorter > 0 and 2 * (min(ge, se) - max(gs, ss)) >= shorter


def evidence_found(gold: GoldEvidence, retrieved: Sequence[RetrievedSpan]) -> bool:
    """Whether a gold evidence item counts as found by everything in `retrieved` read together.

    Any of three rules suffices:
    - span rule: the characters read of the gold's own document (the union of every unit's span there)
      cover at least half of the gold span. A chunk that cuts a long fact in the middle is credited for the
      half it holds; one 60-character sentence of a 1,000-character gold paragraph is not credited with
      the paragraph.
    - key rule, for a gold paragraph that supports one sub-question (MuSiQue): what was read of it covers
      at least half of the sentence holding that sub-question's answer (`GoldEvidence.key_start/key_end`),
      the part of the paragraph a reader needs.
    - text rule (the reference baselines' rule, for units without offsets, gold items that could not be
      located, and facts copied with other wording): the normalised gold text is inside a unit's
      normalised text (in any document: a verbatim copy is the fact), or, in a unit of the gold's own
      document, at least 90% of its words (when it has at least 4) are.
    """
    return _Matcher([gold]).found(retrieved)[0]


def about_gold(gold: Sequence[GoldEvidence], retrieved: Sequence[RetrievedSpan]) -> list[bool]:
    """For every unit, whether it is about some gold item (the unit rule of hop precision): what the
    explorer marks as gold among a method's passages."""
    matcher = _Matcher(gold)
    return [matcher.relevant(span) for span in retrieved]


def _check_k(k: int) -> None:
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")


def recall_at_k(gold: Sequence[GoldEvidence], retrieved: Sequence[RetrievedSpan], k: int) -> float | None:
    """Share of gold evidence items found in the first k distinct retrieved units; None without gold.

    None (rather than 0 or 1) keeps questions with nothing to retrieve, such as MultiHop-RAG null
    queries, out of the averages.
    """
    _check_k(k)
    if not gold:
        return None
    found = _Matcher(gold).found(dedupe_spans(retrieved)[:k])
    return sum(found) / len(found)


def full_at_k(gold: Sequence[GoldEvidence], retrieved: Sequence[RetrievedSpan], k: int) -> float | None:
    """1.0 when every gold evidence item is found in the first k distinct retrieved units; None without gold.

    Multi-hop answers usually need all their evidence, which partial recall hides.
    """
    _check_k(k)
    if not gold:
        return None
    return float(all(_Matcher(gold).found(dedupe_spans(retrieved)[:k])))


def within_chars(retrieved: Sequence[RetrievedSpan], chars: int) -> list[RetrievedSpan]:
    """The first `chars` characters read: the leading distinct units, the last one cut to what is left.

    A cut unit keeps its start and its text's first characters, so what it is credited with is exactly
    what fits in the budget; a unit without offsets keeps them unknown.
    """
    if chars < 1:
        raise ValueError(f"chars must be at least 1, got {chars}")
    out: list[RetrievedSpan] = []
    left = chars
    for span in dedupe_spans(retrieved):
        if left <= 0:
            break
        if len(span.text) > left:
            end = None if span.char_start is None else span.char_start + left
            span = RetrievedSpan(span.doc_id, span.char_start, end, span.text[:left])
        out.append(span)
        left -= len(span.text)
    return out


def recall_within_chars(
    gold: Sequence[GoldEvidence], retrieved: Sequence[RetrievedSpan], chars: int
) -> float | None:
    """Share of gold evidence found in the first `chars` characters read (`within_chars`); None without gold.

    Recall at equal reading budget: a sentence-level method's top k holds far less text than a chunk
    retriever's, so comparing them at the same k would measure unit size, not retrieval.
    """
    budget = within_chars(retrieved, chars)
    if not gold:
        return None
    found = _Matcher(gold).found(budget)
    return sum(found) / len(found)


def full_within_chars(
    gold: Sequence[GoldEvidence], retrieved: Sequence[RetrievedSpan], chars: int
) -> float | None:
    """1.0 when every gold item is found in the first `chars` characters read; None without gold."""
    budget = within_chars(retrieved, chars)
    if not gold:
        return None
    return float(all(_Matcher(gold).found(budget)))


def gold_coverage(gold: Sequence[GoldEvidence], retrieved: Sequence[RetrievedSpan]) -> float | None:
    """Mean over gold items of the share of each item's characters read (`_Matcher.coverage`); None
    without gold. Unlike found / not found, it shows how much of a long gold paragraph was read."""
    if not gold:
        return None
    shares = _Matcher(gold).coverage(dedupe_spans(retrieved))
    return sum(shares) / len(shares)


def _squeezed(text: str) -> str:
    """MultiHop-RAG's own matching form: the text with spaces and newlines removed, nothing else."""
    return text.replace(" ", "").replace("\n", "")


def multihop_rag_official(gold_facts: Sequence[str], ranked_texts: Sequence[str]) -> dict[str, float] | None:
    """MultiHop-RAG's retrieval metrics for one query, as its `retrieval_evaluate.py` defines them.

    A retrieved text is relevant when some gold fact, spaces and newlines removed, is a substring of it
    (likewise squeezed). Hits@4 / Hits@10: a relevant text in the top 4 / 10 (not the share of facts:
    that is Recall@k). RR@10: 1 / the rank of the first relevant text. AP@10: over the top 10, each
    relevant rank adds (gold facts first found there) / rank, and the sum is divided by min(number of
    gold facts, 10), repeated facts included, as the script does. The benchmark averages them over its
    non-null queries (MAP@10, MRR@10); None for a query without gold facts.
    """
    if not gold_facts:
        return None
    facts = [_squeezed(f) for f in gold_facts]
    found: set[str] = set()
    first: int | None = None
    precision_sum = 0.0
    for rank, text in enumerate((_squeezed(t) for t in ranked_texts[:10]), start=1):
        present = {f for f in facts if f in text}
        if not present:
            continue
        first = first or rank
        precision_sum += len(present - found) / rank
        found |= present
    return {
        "hits@4": float(first is not None and first <= 4),
        "hits@10": float(first is not None),
        "map@10": precision_sum / min(len(facts), 10),
        "mrr@10": 1.0 / first if first else 0.0,
    }


def hop_prf(
    gold: Sequence[GoldEvidence], retrieved_per_hop: Sequence[Sequence[RetrievedSpan]]
) -> list[tuple[float, float, float]]:
    """Hop-conditioned (precision, recall, F1) after each retrieval hop r = 1..R.

    After hop r the evidence set is everything retrieved in hops 1..r, deduplicated. Precision is the share
    of that set's units about some gold item (`_Matcher.relevant`), recall the share of gold items the set
    finds read together (`evidence_found`'s rules), F1 their harmonic mean (0 when both are 0). An empty
    set has precision 0. So recall never falls with more hops while precision usually does: the pair shows
    what each extra round of retrieval buys.

    No gold evidence gives [] (the question is left out of macro averages). A method that made no
    retrieval at all is scored as one hop that retrieved nothing, so it is not silently left out too.
    """
    if not gold:
        return []
    matcher = _Matcher(gold)
    read: list[RetrievedSpan] = []
    seen: set[tuple[str, int | None, int | None, str | None]] = set()
    n_relevant = 0
    out: list[tuple[float, float, float]] = []
    for hop in retrieved_per_hop or [[]]:
        for span in hop:
            key = _span_key(span)
            if key not in seen:
                seen.add(key)
                read.append(span)
                n_relevant += matcher.relevant(span)
        precision = n_relevant / len(read) if read else 0.0
        found = matcher.found(read)
        recall = sum(found) / len(found)
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        out.append((precision, recall, f1))
    return out


def macro_by_hop(
    per_question: Sequence[Sequence[tuple[float, float, float]]], max_hop: int | None = None
) -> list[tuple[int, float, float, float]]:
    """Macro-average `hop_prf` results over questions: (r, precision, recall, F1) for r = 1..max_hop.

    max_hop defaults to the most hops any question took. A question that stopped before hop r carries
    its last value forward: its evidence set no longer grows, and that is what it would score at hop r.
    Dropping it instead would make later hops an average over only the hardest questions, and scoring
    it 0 would punish a method for stopping once it had what it needed. Questions with no values (no gold
    evidence) are left out.
    """
    scored = [q for q in per_question if q]
    if not scored:
        return []
    last = max(len(q) for q in scored) if max_hop is None else max_hop
    out: list[tuple[int, float, float, float]] = []
    for r in range(1, last + 1):
        at_r = [q[min(r, len(q)) - 1] for q in scored]
        n = len(at_r)
        out.append((r, sum(v[0] for v in at_r) / n, sum(v[1] for v in at_r) / n, sum(v[2] for v in at_r) / n))
    return out
