"""Property-based fuzzing of every parser of LLM output (issue 33, item 4).

The embedded 1.5B model's replies are often malformed: empty, cut off at the token cap, broken or deeply
nested JSON, markdown fences, stray control characters, odd Unicode, or the prompt's own rules and examples
copied back. Each parser documents what it makes of such a reply (a named fallback, None, an empty
result), and the nodes rely on that instead of catching exceptions. So these tests feed every parser
random and adversarial text (Hypothesis) and check that it never raises and that its result keeps the
contract its docstring states: the right types, one line where one line is promised, the caps, and the
documented fallback when nothing in the reply is usable. The hand-written cases next to each parser
(tests/test_answers.py, test_metadata_filter.py, test_ircot.py, ...) pin exact outputs; these pin what
must hold for every input. Each input that once broke a parser is kept as an `@example`.

Parsers that read whole replies with spaCy get shorter inputs: every reply they read is capped at a few
hundred tokens, and spaCy's cost would dominate the run. The same holds for `after_restatement` (quadratic
in the number of "is"/"was" in the reply, which the 32-token answer cap bounds) and for `date_mentions`,
which reads the user's question rather than a reply.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from datetime import date
from typing import Any

from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st
from langchain_core.messages import HumanMessage, SystemMessage

from nodes.metadata import DateMention, check, date_mentions, mentions, parse_day, where_clause
from prompts import (
    answer,
    decompose,
    demonstrations,
    edge_judge,
    integrate,
    ircot,
    questions,
    reader,
    refusal_check,
    resp_generator,
    resp_reasoner,
    resp_summarizer,
    rewrite,
    summarize,
)
from prompts import metadata as metadata_prompt
from prompts.decompose import SubQuestionCount
from prompts.echo import NUDGE, EchoGuard, normalise
from prompts.structured import UNREAD, fits
from stores.metadata import MetadataInfo, MetadataParams
from tests.test_metadata_filter import INFO, SOURCES

# Modest example counts keep the whole file to about 20 s of CPU time; `too_slow` is suppressed because
# on a machine busy with other work the wall-clock time of generating examples says nothing of the parsers.
FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SPACY_FUZZ = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])

DEMOS = demonstrations.select(2)
GUARDS: tuple[EchoGuard, ...] = (
    answer.GUARD,
    decompose.GUARD,
    decompose.guard(SubQuestionCount(3, exactly=True)),
    decompose.guard(SubQuestionCount(2, exactly=False)),
    edge_judge.GUARD,
    integrate.GUARD,
    ircot.guard(DEMOS),
    metadata_prompt.GUARD,
    questions.GUARD,
    reader.ANSWER_GUARD,
    resp_generator.GUARD,
    resp_reasoner.GUARD,
    resp_summarizer.GLOBAL_GUARD,
    resp_summarizer.LOCAL_GUARD,
    rewrite.GUARD,
    summarize.GUARD,
)
# Every prompt's own text (rules, worked examples, cues): what a small model copies back.
PROMPT_TEXTS: tuple[str, ...] = tuple(
    sorted(
        {text for guard in GUARDS for text in guard.own_text}
        | {
            ircot.system_text(DEMOS),
            ircot.ANSWER_PHRASE,
            metadata_prompt.EMPTY_REPLY,
            resp_summarizer.END_MARK,
            answer.CUE,
            decompose.cue(),
            decompose.cue(SubQuestionCount(3, exactly=True)),
            resp_reasoner.PLAN_CUE,
            NUDGE,
        }
    )
)
# Pieces a malformed reply is made of: JSON syntax, labels and cues, Yes / No, list markers, refusals,
# dates and sources, and characters that trip up case folding, line splitting or stripping.
FRAGMENTS = (
    *("", " ", "  ", "\n", "\r\n", "\t", "\x00", "\x0b", "\x1c", "\x85", "\u2028", "\u200b", "\ufeff"),
    *("ſ", "İ", "\u212a", "é", "\u0301", "٣", "\U0001f600", "“", "”", "‘", "’", "`"),
    *("[", "]", "{", "}", '"', "'", "\\", "\\n", '\\"', "\\u00e9", "\\ud800", ",", ":", "null", "true", "0"),
    *("-1e999", "1" * 5000, "```", "```json\n", "\n```", "**", "..."),
    *("Yes", "No", "YES", "no.", "**Yes**", "yes_", "Answer:", "Final answer:", "answer is", "[DONE]"),
    *("Q:", "A:", "Wikipedia Title:", "Rewritten:", "Next question:", "[Your Thought]:", "Question 4:"),
    *("1.", "2)", "- ", "* ", "• ", "?", "!", "Thus ", "So ", "Insufficient information.", "Unknown"),
    *("Who", "What", "Is", "Did", "or", "is", "was", "it", "he", "the", "Paris", "Shirley Temple"),
    *('"sources"', '"days"', '"from"', '"to"', "The Verge", "TechCrunch", "FOX News", "the age"),
    *("2023-10-02", "October 2, 2023", "2 Oct 2023", "Nov. 16", "in 2023", "9999-12-31", "0001-01-01"),
    *("after", "before", "between", "and", "since", "until", "prior to", "later than"),
)
# Whole replies at the edges: nested deeper than the JSON decoder goes, a number too long to convert,
# quotes around nothing, letters that case-fold into ASCII ones ("ſ" is an "s" to the regex engine),
# punctuation and labels twice, a long run of spaces after a label.
ADVERSARIAL = (
    *("[" * 3000, '{"sources": ' + "[" * 3000, '["a", ' * 1500, "[" + "9" * 5000 + "]"),
    *('{"from": ' + "9" * 5000 + "}", '" "', '"""', 'Rewritten: " "', "Yeſ", "ſo", "İs it?"),
    *("x . .", "Answer: Answer: x", "-" + " " * 3000 + "x", "[1, null, true, {}]"),
)


def json_values() -> st.SearchStrategy[Any]:
    """Any JSON value, nested a few levels: what a JSON-writing model might put anywhere."""
    leaves = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20)
    return st.recursive(
        leaves,
        lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children),
        max_leaves=12,
    )


@st.composite
def json_replies(draw: st.DrawFn) -> str:
    """JSON as a model writes it: possibly fenced, cut off at the token cap, with text around it."""
    text = json.dumps(draw(json_values()), ensure_ascii=draw(st.booleans()))
    if draw(st.booleans()):
        text = text[: draw(st.integers(0, len(text)))]
    if draw(st.booleans()):
        text = f"```json\n{text}\n```"
    return draw(st.sampled_from(("", "Sure: ", "JSON array: "))) + text + draw(st.text(max_size=10))


def repeated(fragment: str, times: int, max_chars: int = 100_000) -> str:
    """`fragment` over and over (a looping model), `times` times but never past `max_chars` characters."""
    return fragment * min(times, max_chars // max(1, len(fragment)))


def llm_replies(max_repeat: int = 20_000) -> st.SearchStrategy[str]:
    """Random and adversarial replies: any Unicode text, a jumble of fragments and prompt text, JSON,
    and a huge run of one fragment (up to `max_repeat` copies)."""
    piece = st.sampled_from(FRAGMENTS + ADVERSARIAL) | st.sampled_from(PROMPT_TEXTS) | st.text(max_size=12)
    return st.one_of(
        st.sampled_from(ADVERSARIAL),
        st.text(),
        st.lists(piece, max_size=30).map("".join),
        json_replies(),
        st.builds(repeated, st.sampled_from(FRAGMENTS), st.integers(2, max_repeat)),
    )


REPLIES = llm_replies()
SHORT_REPLIES = llm_replies(max_repeat=300).filter(lambda text: len(text) <= 3000)
QUESTIONS = st.text(max_size=200) | st.lists(st.sampled_from(FRAGMENTS), max_size=20).map(" ".join)


def is_one_line(text: str) -> bool:
    """No line break of any kind the parsers split at ("\\x85" and "\\u2028" as much as "\\n")."""
    return len(text.splitlines()) <= 1


# ---- prompts.answer: the answer cleaner, refusals, yes / no, restatements


@FUZZ
@given(REPLIES)
@example("x . .")  # once "x ." (a strip of full stops, then of spaces, left the inner full stop)
@example("Answer: Answer: 1889")  # once "Answer: 1889" (only the first label was taken off)
def test_a_cleaned_answer_is_one_trimmed_line_of_the_reply(reply: str) -> None:
    cleaned = answer.clean(reply)
    assert isinstance(cleaned, str) and is_one_line(cleaned) and cleaned == cleaned.strip()
    assert cleaned in reply  # a span of the reply's first line, nothing added
    assert not cleaned.endswith(tuple(".,;:!"))
    assert not re.match(r"(final\s+)?answer\s*:", cleaned, re.IGNORECASE)
    assert answer.clean(cleaned) == cleaned
    assert isinstance(answer.is_refusal(reply), bool)
    if not normalise(reply):
        assert answer.is_refusal(reply)  # an empty reply declines to answer


@FUZZ
@given(REPLIES)
def test_the_no_answer_phrase_is_a_refusal_whatever_follows_it(rest: str) -> None:
    assert answer.is_refusal(f"{answer.UNANSWERABLE} {rest}")


@FUZZ
@given(QUESTIONS, REPLIES)
@example("Is it?", "Yeſ")  # once "yeſ": under Unicode case folding "ſ" (long s) matched "s"
def test_yes_no_is_the_bare_word_or_none(question: str, reply: str) -> None:
    said = answer.yes_no(question, reply)
    assert said in ("yes", "no", None)
    if said is not None:
        assert answer.is_yes_no_question(question)


@FUZZ
@given(QUESTIONS, SHORT_REPLIES)
def test_an_answer_after_a_restatement_is_short_or_none(question: str, reply: str) -> None:
    rest = answer.after_restatement(question, reply)
    if rest is not None:
        assert rest and len(rest.split()) <= answer.SHORT_WORDS and answer.clean(rest) == rest


# ---- Yes / No verdicts: the sufficiency judges, ReSP's local pathway, BiQOG's edge judge


@FUZZ
@given(REPLIES)
@example("Yeſ")  # once read as No by the readers' judge (and as malformed by the edge judge)
def test_the_two_yes_no_parsers_agree_and_return_their_defined_values(reply: str) -> None:
    said, rest = reader.verdict_and_rest(reply)
    assert said in (True, False, None) and isinstance(rest, str) and rest == rest.strip()
    if said is None:
        assert rest == ""
    assert reader.verdict(reply) is said
    judged = edge_judge.verdict(reply)
    assert judged in edge_judge.VERDICTS
    assert judged == {True: edge_judge.YES, False: edge_judge.NO, None: edge_judge.MALFORMED}[said]


# ---- prompts.decompose: the JSON array of sub-questions


@FUZZ
@given(REPLIES, QUESTIONS, st.integers(-1, 6))
@example("[" * 5000, "q?", 3)  # once RecursionError: nested deeper than the JSON decoder goes
@example("[" + "1" * 5000 + "]", "q?", 3)  # once ValueError: an integer too long to convert
@example('[1, null, {"a": "b"}]', "q?", 3)  # once ["1", "None", "{'a': 'b'}"]: not strings, kept as ones
def test_a_decomposition_is_its_strings_capped_or_the_question_itself(
    reply: str, question: str, limit: int
) -> None:
    subs, fallback = decompose.parse(reply, question, limit)
    assert fallback is None or isinstance(fallback, str)
    assert 1 <= len(subs) <= max(1, limit) and all(isinstance(sub, str) for sub in subs)
    if '"' not in reply:  # no JSON string in it: nothing to split into
        assert subs == [question] and fallback
    if subs == [question]:
        return  # the documented fallback (or a reply that asked the question itself)
    assert all(sub and sub == sub.strip() for sub in subs)
    assert len({normalise(sub) for sub in subs}) == len(subs)
    if len(subs) > 1:
        assert all(normalise(sub) != normalise(question) for sub in subs)


@FUZZ
@given(
    st.lists(st.text(min_size=1).map(str.strip).filter(bool), min_size=1, max_size=6, unique_by=normalise),
    st.integers(1, 6),
    st.text(alphabet=st.characters(exclude_characters="[")),
    st.text(),
    st.booleans(),
)
def test_a_well_formed_array_is_read_as_written(
    items: list[str], limit: int, before: str, after: str, ascii_only: bool
) -> None:
    question = "Which question is this?"
    assume(all(normalise(item) != normalise(question) for item in items))
    subs, fallback = decompose.parse(
        before + json.dumps(items, ensure_ascii=ascii_only) + after, question, limit
    )
    assert subs == items[:limit]
    assert (fallback is None) == (len(items) <= limit)


# ---- prompts.rewrite, prompts.summarize: ChainRAG's rewrite and context summary


@FUZZ
@given(REPLIES, QUESTIONS)
@example('" "', "When was he born?")  # once " " as the rewritten query: quotes taken off, spaces left
def test_a_rewrite_is_one_nonblank_line_or_the_sub_question(reply: str, question: str) -> None:
    query, fallback = rewrite.parse(reply, question)
    if fallback is None:
        assert query and query == query.strip() and is_one_line(query)
    else:
        assert query == question and isinstance(fallback, str)


@FUZZ
@given(REPLIES)
def test_a_summary_is_the_stripped_reply_or_a_note_why_not(reply: str) -> None:
    summary, problem = summarize.parse(reply)
    said = reply.strip()
    declined = len(said.split()) <= answer.SHORT_WORDS and answer.is_refusal(said)  # empty included
    assert (summary, problem == "") == (("", False) if declined else (said, True))


# ---- prompts.resp_reasoner: ReSP's planned sub-question


@FUZZ
@given(REPLIES)
@example("-" + " " * 5000 + "x")  # once 13 s on 4,000 spaces: a label regex backtracking quadratically
def test_a_plan_is_one_line_that_is_no_yes_or_no(reply: str) -> None:
    plan = resp_reasoner.parse_plan(reply)
    assert isinstance(plan, str) and plan == plan.strip() and is_one_line(plan)
    if plan:
        assert normalise(plan) not in {"", "yes", "no"}
        assert resp_reasoner.is_repeat(plan, [f"{plan}?"])


# ---- prompts.questions: QuOTE's and BiQOG's question writer


@FUZZ
@given(REPLIES, st.text() | st.none(), st.integers(0, 6))
def test_kept_questions_are_capped_distinct_questions_and_every_line_is_counted(
    reply: str, chunk: str | None, count: int
) -> None:
    chunk_text = reply if chunk is None else chunk  # None: the model copied the chunk back
    parsed = questions.parse(reply, chunk_text, count)
    assert set(parsed.counts) <= set(questions.OUTCOMES)
    assert len(parsed.questions) == parsed.counts["kept"] <= max(0, count)
    for question in parsed.questions:
        assert question.endswith("?") and is_one_line(question) and question == question.strip()
        assert len(normalise(question).split()) >= 3
    assert len({normalise(question) for question in parsed.questions}) == len(parsed.questions)
    lines = [line for line in reply.splitlines() if line.strip()]
    drops = questions.OUTCOMES[questions.OUTCOMES.index("not_a_question") :]
    read = parsed.counts["kept"] + sum(parsed.counts[drop] for drop in drops if drop != "empty_reply")
    if lines:
        assert parsed.counts["empty_reply"] == 0 and len(lines) <= read <= len(lines) + reply.count("?")
    else:
        assert parsed.counts == {"empty_reply": 1} and parsed.questions == []


# ---- prompts.metadata and nodes.metadata: Multi-Meta-RAG's filter, checked against the index


@FUZZ
@given(REPLIES)
@example('{"sources": ' + "[" * 5000)  # once RecursionError
@example('{"from": ' + "1" * 5000 + "}")  # once ValueError: an integer too long to convert
def test_a_metadata_reply_gives_a_filter_of_strings_or_none(reply: str) -> None:
    extracted, notes = metadata_prompt.parse(reply)
    assert isinstance(notes, list) and all(isinstance(note, str) for note in notes)
    if extracted is None:
        assert notes
        return
    for items in (extracted.sources, extracted.days):
        assert isinstance(items, tuple) and all(isinstance(i, str) and i and i == i.strip() for i in items)
    assert all(day.lower() not in {"null", "none"} for day in extracted.days)
    for value in (extracted.date_from, extracted.date_to):
        assert value is None or (isinstance(value, str) and value and value == value.strip())
        assert value is None or value.lower() not in {"null", "none"}


# ---- prompts.refusal_check: the reader's check of its own refusal


@FUZZ
@given(REPLIES)
@example('{"facts": ' + "[" * 5000)  # nested too deep for the decoder
@example('{"facts": [{"fact": "x", "stated": "TRUE "}], "answer": 7}')
def test_a_refusal_check_reply_gives_stated_facts_or_none_with_a_note(reply: str) -> None:
    found, notes = refusal_check.parse(reply)
    assert isinstance(notes, list) and all(isinstance(note, str) for note in notes)
    if found is None:
        assert notes
        return
    assert found.facts and all(fact and fact == fact.strip() for fact, _ in found.facts)
    assert all(isinstance(stated, bool) for _, stated in found.facts)
    assert isinstance(found.answer, str) and found.answer == found.answer.strip()


DATES = st.dates(date(2023, 9, 1), date(2024, 1, 31)) | st.dates() | st.sampled_from((date.min, date.max))
_WRITTEN = (
    "{:%Y-%m-%d}",
    "{:%B} {.day}, {:%Y}",
    "{.day} {:%b %Y}",
    "{:%b}. {.day}",
    "in {:%Y}",
    "{:%Y/%m/%d}",
)


def written(day: date, form: str) -> str:
    """`day` as a question writes it, in one of the `_WRITTEN` forms."""
    return form.format(*([day] * form.count("{")))


DATED = INFO
UNDATED = MetadataInfo(params=MetadataParams(), sources=SOURCES)


@st.composite
def filter_and_question(draw: st.DrawFn) -> tuple[metadata_prompt.ExtractedFilter, str]:
    """A question naming sources and dates (in the ways questions write them, with bound words around
    them) among noise, and a reply's filter that mixes some of them with names and dates it never says."""
    days = draw(st.lists(DATES, max_size=4))
    names = draw(st.lists(st.sampled_from([*SOURCES, "FOX News", "Wired"]), max_size=3))
    said = [
        *(
            f"{draw(st.sampled_from(FRAGMENTS))} {written(day, draw(st.sampled_from(_WRITTEN)))}"
            for day in days
        ),
        *names,
        *draw(st.lists(st.sampled_from(FRAGMENTS) | st.text(max_size=10), max_size=6)),
    ]
    question = " ".join(draw(st.permutations(said)))
    date_text = st.sampled_from([day.isoformat() for day in days] or ["2023-10-02"]) | DATES.map(str)
    date_text |= st.builds(written, DATES, st.sampled_from(_WRITTEN)) | st.text(max_size=12)
    extracted = metadata_prompt.ExtractedFilter(
        sources=tuple(draw(st.lists(st.sampled_from([*names, "the age", "Wired"]) | st.text(max_size=12)))),
        date_from=draw(st.none() | date_text),
        date_to=draw(st.none() | date_text),
        days=tuple(draw(st.lists(date_text, max_size=4))),
    )
    return extracted, question


@FUZZ
@given(filter_and_question(), st.sampled_from((DATED, UNDATED)))
@example(
    (metadata_prompt.ExtractedFilter(date_to="9999-12-31"), "Published before December 31, 9999?"), DATED
)  # once OverflowError in `where_clause`: the day after 9999-12-31 is no date
def test_a_checked_filter_holds_only_what_the_index_has_and_the_question_says(
    case: tuple[metadata_prompt.ExtractedFilter, str], info: MetadataInfo
) -> None:
    extracted, question = case
    chosen, notes = check(extracted, info, question)
    assert all(isinstance(note, str) for note in notes)
    assert len(set(chosen["sources"])) == len(chosen["sources"])
    assert all(source in info.sources and mentions(question, source) for source in chosen["sources"])
    assert chosen["days"] == sorted(set(chosen["days"]))
    written_dates = date_mentions(question)
    kept = [*chosen["days"], *(d for d in (chosen["date_from"], chosen["date_to"]) if d)]
    assert all(any(m.matches(date.fromisoformat(day)) for m in written_dates) for day in kept)
    if not info.dated:
        assert kept == []
    if chosen["date_from"] and chosen["date_to"]:
        assert chosen["date_from"] <= chosen["date_to"]
    for dates in ("days", "range"):
        where = where_clause(chosen, info, dates)
        assert (where is None) == (not chosen["sources"] and not kept)


@FUZZ
@given(QUESTIONS | st.builds(written, DATES, st.sampled_from(_WRITTEN)) | st.text(max_size=2000))
@example("on ſep 5 and ٣ March ٢٠٢٣")  # "ſep" folds to "Sep", "٣" is a digit: both read, neither raises
def test_date_mentions_are_read_from_any_question(question: str) -> None:
    found = date_mentions(question)
    assert all(isinstance(mention, DateMention) for mention in found)
    for mention in found:
        assert mention.role in ("day", "from", "to")
        assert all(
            part is None or isinstance(part, int) for part in (mention.year, mention.month, mention.day)
        )


@FUZZ
@given(DATES, REPLIES)
def test_a_reply_date_parses_to_a_date_or_none(day: date, reply: str) -> None:
    assert parse_day(day.isoformat()) == day
    parsed = parse_day(reply)
    assert parsed is None or isinstance(parsed, date)


# ---- IR-CoT's chain of thought and ReSP's global evidence (read with spaCy)


WRITTEN_SENTENCES = st.lists(
    st.sampled_from([s for demo in DEMOS for s in demo.reasoning]) | st.text(max_size=40)
)


@SPACY_FUZZ
@given(SHORT_REPLIES, WRITTEN_SENTENCES, st.booleans())
def test_the_next_sentence_is_a_new_line_of_the_chain_or_nothing_with_a_note(
    spacy_nlp: Any, reply: str, written_so_far: list[str], restate: bool
) -> None:
    reply = " ".join(written_so_far) + " " + reply if restate else reply  # the model starting over
    chain = ircot.chain_text(reply)
    assert is_one_line(chain)
    sentence, problem = ircot.next_sentence(reply, written_so_far, spacy_nlp)
    if not sentence:
        assert isinstance(problem, str) and problem
        return
    assert problem is None or isinstance(problem, str)
    assert is_one_line(sentence) and sentence == sentence.strip()
    assert normalise(sentence) not in {normalise(done) for done in written_so_far}
    assert isinstance(ircot.says_answer(sentence), bool) and isinstance(ircot.is_conclusion(sentence), bool)


@SPACY_FUZZ
@given(SHORT_REPLIES | st.sampled_from([" ".join(demo.reasoning) for demo in DEMOS]))
def test_a_chains_answer_is_what_follows_answer_is_or_none(spacy_nlp: Any, reply: str) -> None:
    said = ircot.answer_in(reply, spacy_nlp)
    if said is not None:
        assert said and said == said.strip() and is_one_line(said)
        assert ircot.says_answer(ircot.chain_text(reply))


@SPACY_FUZZ
@given(SHORT_REPLIES, st.booleans())
def test_global_evidence_is_the_replys_text_before_the_end_mark_or_nothing(
    spacy_nlp: Any, reply: str, hit_cap: bool
) -> None:
    summary, notes = resp_summarizer.global_evidence(reply, spacy_nlp, hit_cap=hit_cap)
    assert isinstance(summary, str) and summary == summary.strip()
    assert resp_summarizer.END_MARK not in summary and all(isinstance(note, str) for note in notes)
    if not reply.partition(resp_summarizer.END_MARK)[0].strip():
        assert summary == ""


# ---- prompts.echo: the guard every reply passes through


@FUZZ
@given(st.sampled_from(GUARDS), REPLIES, QUESTIONS)
def test_an_echo_is_a_run_of_the_prompts_own_text_that_the_reply_holds(
    guard: EchoGuard, reply: str, task: str
) -> None:
    echoed = guard.find(reply, [SystemMessage(guard.own_text[0]), HumanMessage(f"Question: {task}")])
    if echoed is not None:
        said = normalise(reply)
        assert echoed and said not in guard.allowed and f" {echoed} " in f" {said} "
        assert any(f" {echoed} " in f" {normalise(text)} " for text in (*guard.own_text, NUDGE))


@FUZZ
@given(st.data(), st.sampled_from([guard for guard in GUARDS if guard.clauses()]), st.text(), st.text())
def test_a_reply_copying_a_clause_of_the_prompt_is_an_echo(
    data: st.DataObject, guard: EchoGuard, before: str, after: str
) -> None:
    clause = data.draw(st.sampled_from(guard.clauses()))
    assert guard.find(f"{before}\n{clause}\n{after}", []) is not None


# ---- structured output: a reply not of its shape is read as the free-text parser reads it, noted


@FUZZ
@given(REPLIES, QUESTIONS, st.integers(-1, 6))
@example('["a", "b"]', "q?", 3)
@example('"Yes"', "q?", 3)
@example('{"sources": [], "days": [], "from": null, "to": null}', "q?", 3)
def test_a_reply_not_of_its_shape_gets_the_tolerant_parsers_reading_and_a_note(
    reply: str, question: str, limit: int
) -> None:
    shapes = (decompose.REPLY, metadata_prompt.REPLY, reader.JUDGE_REPLY, resp_reasoner.PLAN_REPLY)
    for shape in (*shapes, questions.REPLY, edge_judge.REPLY):
        value = shape.read(reply)
        assert value is None or fits(value, shape.schema)
    subs, fallback = decompose.parse(reply, question, limit, structured=True)
    assert 1 <= len(subs) <= max(1, limit)
    extracted, notes = metadata_prompt.parse(reply, structured=True)
    parsed = questions.parse(reply, reply, limit, structured=True)
    if decompose.REPLY.read(reply) is None:
        plain = decompose.parse(reply, question, limit)
        assert subs == plain[0] and fallback == "; ".join(filter(None, (UNREAD, plain[1])))
    if metadata_prompt.REPLY.read(reply) is None:
        plain_filter, plain_notes = metadata_prompt.parse(reply)
        assert (extracted, notes) == (plain_filter, [UNREAD, *plain_notes])
    if questions.REPLY.read(reply) is None:
        plain_questions = questions.parse(reply, reply, limit)
        assert parsed.questions == plain_questions.questions
        assert parsed.counts == plain_questions.counts + Counter(structured_unread=1)
    if reader.JUDGE_REPLY.read(reply) is None:
        assert reader.verdict(reply, structured=True) == reader.verdict(reply)
        assert edge_judge.verdict(reply, structured=True) == edge_judge.verdict(reply)
    if resp_reasoner.PLAN_REPLY.read(reply) is None:
        assert resp_reasoner.parse_plan(reply, structured=True) == resp_reasoner.parse_plan(reply)
