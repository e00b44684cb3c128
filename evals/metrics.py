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
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from evals.datasets import GoldEvidence

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


def _covers(gold: GoldEvidence, span: RetrievedSpan) -> bool:
    """Span rule: same document, both spans known, and the overlap is at least half the shorter span."""
    gs, ge, ss, se = gold.char_start, gold.char_end, span.char_start, span.char_end
    if span.doc_id != gold.doc_id or gs is None or ge is None or ss is None or se is None:
        return False
    shorter = min(ge - gs, se - ss)
    overlap = min(ge, se) - max(gs, ss)
    return shorter > 0 and 2 * overlap >= shorter


@dataclass(frozen=True)
class _NormalisedText:
    """A text normalised once, with its word set, so matching many pairs does not redo the work."""

    norm: str
    words: frozenset[str]

    @classmethod
    def of(cls, text: str) -> _NormalisedText:
        norm = normalize_text(text)
        return cls(norm, frozenset(norm.split()))


def _text_match(gold: _NormalisedText, retrieved: _NormalisedText) -> bool:
    """Text rule of the reference baselines: gold inside retrieved, or >= 90% of its (>= 4) words present."""
    if not gold.norm:
        return False
    if gold.norm in retrieved.norm:
        return True
    words = gold.norm.split()
    if len(words) < _MIN_WORDS:
        return False
    # computed as a ratio, like the baselines, so borderline cases round the same way
    return sum(w in retrieved.words for w in words) / len(words) >= _WORD_SHARE


class _Matcher:
    """Answers "does retrieved unit j match gold item i" with each text normalised only once."""

    def __init__(self, gold: Sequence[GoldEvidence]) -> None:
        self.gold = list(gold)
        self._gold_text = [_NormalisedText.of(g.text) for g in self.gold]

    def matches(self, span: RetrievedSpan) -> list[bool]:
        """For every gold item, whether `span` counts as retrieving it."""
        text = _NormalisedText.of(span.text)
        return [
            _covers(g, span) or _text_match(gt, text)
            for g, gt in zip(self.gold, self._gold_text, strict=True)
        ]

    def found(self, spans: Sequence[RetrievedSpan]) -> list[bool]:
        """For every gold item, whether any of `spans` retrieves it."""
        found = [False] * len(self.gold)
        for s in spans:
            found = [f or m for f, m in zip(found, self.matches(s), strict=True)]
        return found


def evidence_found(gold: GoldEvidence, retrieved: Sequence[RetrievedSpan]) -> bool:
    """Whether a gold evidence item counts as retrieved by any of `retrieved`.

    Two rules, either suffices:
    - span rule: a retrieved span of the same document overlaps the gold span by at least half of the
      shorter of the two (both spans known): a unit larger than the gold must hold half of it, and a unit
      smaller than the gold must lie at least half inside it. Offsets are exact at every granularity, so
      sentence-level, proposition-level and chunk-level methods are judged alike: a chunk that cuts a long
      fact in the middle gets credit for the half it holds, and a sentence of a gold paragraph (MuSiQue's
      evidence is whole paragraphs) counts as retrieving that paragraph.
    - text rule (the reference baselines' rule, applied to every retrieved unit): the normalised gold text
      is inside the normalised retrieved text, or at least 90% of its words (when it has at least 4) are.
      It covers what offsets cannot: units whose text does not map to corpus offsets, gold items that
      could not be located, and the same fact repeated in another article. Because it is applied in full,
      anything the baselines count as found is counted here too, so our Hits@k / Full@k are comparable.
    """
    return _Matcher([gold]).found(retrieved)[0]


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


def hits_at_k(gold: Sequence[GoldEvidence], retrieved: Sequence[RetrievedSpan], k: int) -> float | None:
    """MultiHop-RAG's Hits@k as the reference baselines compute it: the share of gold facts in the top k.

    That is exactly `recall_at_k`; both names exist because MultiHop-RAG papers say Hits@k and the
    HotpotQA / MuSiQue literature says Recall@k for the same quantity.
    """
    return recall_at_k(gold, retrieved, k)


def recall_within_chars(
    gold: Sequence[GoldEvidence], retrieved: Sequence[RetrievedSpan], chars: int
) -> float | None:
    """Share of gold evidence found in the leading distinct units whose texts total at most `chars`.

    Recall at equal reading budget: a sentence-level method's top k holds far less text than a chunk
    retriever's, so comparing them at the same k would measure unit size, not retrieval. None without gold.
    """
    if chars < 1:
        raise ValueError(f"chars must be at least 1, got {chars}")
    if not gold:
        return None
    budget: list[RetrievedSpan] = []
    used = 0
    for span in dedupe_spans(retrieved):
        used += len(span.text)
        if used > chars:
            break
        budget.append(span)
    found = _Matcher(gold).found(budget)
    return sum(found) / len(found)


def full_at_k(gold: Sequence[GoldEvidence], retrieved: Sequence[RetrievedSpan], k: int) -> float | None:
    """1.0 when every gold evidence item is found in the first k distinct retrieved units; None without gold.

    Multi-hop answers usually need all their evidence, which partial recall hides.
    """
    _check_k(k)
    if not gold:
        return None
    return float(all(_Matcher(gold).found(dedupe_spans(retrieved)[:k])))


def hop_prf(
    gold: Sequence[GoldEvidence], retrieved_per_hop: Sequence[Sequence[RetrievedSpan]]
) -> list[tuple[float, float, float]]:
    """Hop-conditioned (precision, recall, F1) after each retrieval hop r = 1..R.

    After hop r the evidence set is everything retrieved in hops 1..r, deduplicated. Precision is the share
    of that set matching some gold item (by `evidence_found`'s rules), recall the share of gold items found
    in it, F1 their harmonic mean (0 when both are 0). An empty set has precision 0. So recall never falls
    with more hops while precision usually does: the pair shows what each extra round of retrieval buys.

    No gold evidence gives [] (the question is left out of macro averages). A method that made no
    retrieval at all is scored as one hop that retrieved nothing, so it is not silently left out too.
    """
    if not gold:
        return []
    matcher = _Matcher(gold)
    seen: set[tuple[str, int | None, int | None, str | None]] = set()
    n_retrieved = n_relevant = 0
    found = [False] * len(gold)
    out: list[tuple[float, float, float]] = []
    for hop in retrieved_per_hop or [[]]:
        for span in hop:
            key = _span_key(span)
            if key in seen:
                continue
            seen.add(key)
            m = matcher.matches(span)
            n_retrieved += 1
            n_relevant += any(m)
            found = [f or x for f, x in zip(found, m, strict=True)]
        precision = n_relevant / n_retrieved if n_retrieved else 0.0
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
