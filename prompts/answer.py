"""Answer generator: reads passages, answers the question in as few words as the answer needs.

A short-span answer is what EM / F1 on the benchmarks score; a long sentence around a right answer scores
poorly, so the instruction asks for the answer only. It names no kinds of answer and shows no placeholder:
given "a name, date, number, yes/no, or short phrase" the 1.5B embedded model replied "a name" to 7 of 50
MuSiQue questions; told "if the question asks whether something is so, reply yes or no" it answered "yes"
to questions asking who or what; and "no full sentence, no explanation" it replied with that very phrase
to 3 of 12 HotpotQA questions outside the evaluated ones, where this wording and the closing "Answer:"
cue drew no echo and no sentence. It offers no "cannot answer" phrase either: measured on HotpotQA, the model took that
way out for questions its passages did answer, and a guess costs less than a certain miss. A method that
decides unanswerability on purpose (MultiHop-RAG's null queries) asks with `unanswerable=True`, which adds
the phrase. (Sub-question readers always have it: an unanswered sub-question is a signal ChainRAG acts on.)
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from prompts.echo import EchoGuard, normalise
from prompts.passages import DATA_RULE, format_passages
from stores.evidence import Evidence

SYSTEM = (
    "You answer questions from the passages you are given. Combine facts across passages when the "
    f"question needs more than one step. {DATA_RULE}"
)

INSTRUCTION = "Reply with just the answer, as briefly as possible."
# The reply's start: a completion cue that has the model begin with the answer itself.
CUE = "Answer:"

UNANSWERABLE = "Insufficient information."
UNANSWERABLE_INSTRUCTION = f"If the passages do not answer the question, reply: {UNANSWERABLE}"

# Asked after a refusal when the method has evidence: its best span is worth more than a certain miss.
REFUSAL_NUDGE = "Give your best answer from the passages even if you are unsure, as briefly as possible."

# Asked after a reply longer than SHORT_WORDS, the question repeated: the words of the reply the
# benchmarks score. It asks for a part of the reply, not a new answer, and names no kind of answer (a named
# kind is what the 1.5B model copies). Without the question repeated ("Which words of your reply answer the
# question?") the model answered "Venice, Rome" for "Rome" and "reopened" for a date on our own examples;
# with it, the span each time.
SHORTEN = "Copy from your reply only the words that answer this question."
SHORT_WORDS = 4

# Asked when a question offers two options ("Which film came out first, X or Y?"), the reply names neither,
# and no passage tells which option it belongs to: the 1.5B model answered 5 of NaiveRAG's 22 such
# questions (the first 50 of HotpotQA and 2Wiki dev; all 5 on 2Wiki) with the entity the comparison went
# through ("Luis Saslavsky", the director, for which of two films had the director who died first), never
# right. The options are the question's own words. Asked with the question repeated ("The answer is one of
# these: ... Reply with the one the question asks for."), the model repeated its answer on our own example;
# without it, it named an option.
CHOOSE = "The question asks which of two: {options}. Reply with one of them only."

# Asked when a yes-no question's answer is neither word: the 1.5B model answered "Was there a change in the
# portrayal of Google's impact ...?" with "Positive", and a refusal check's sentence was cut to "No
# inconsistency" (NaiveRAG w/ QD on MultiHop-RAG, 2026-12-01); EM credits only the bare word, which
# `yes_no` reads from the reply's start.
YES_OR_NO = "The question asks whether it is so. Reply with Yes or No only."

GUARD = EchoGuard(
    own_text=(SYSTEM, INSTRUCTION, UNANSWERABLE_INSTRUCTION, REFUSAL_NUDGE, SHORTEN, CHOOSE, YES_OR_NO, CUE),
    allowed=frozenset({"yes", "no", normalise(UNANSWERABLE)}),
)

# Replies that decline to answer, normalised (prompts.echo.normalise): the whole reply, or its start.
_REFUSAL_REPLIES = frozenset({"unknown", "n a", "none", "not known", "no idea"})
_REFUSAL_STARTS = (
    "insufficient information",
    "not enough information",
    "no answer",
    "no information",
    "cannot answer",
    "cannot be answered",
    "cannot be determined",
    "can not be determined",
    "unable to answer",
    "unable to determine",
    "not mentioned",
    "not provided",
    "not specified",
    "not stated",
    "not found",
    "unanswerable",
    "none of the passages",
    "the passages do not",
    "the passage does not",
    "there is no information",
)
# Every leading label ("Answer: Answer: 1889" too), and the punctuation and spaces that end the line, in
# any order ("1889 . ."): a single strip of each would leave the inner one in place. The trailing run is
# matched only from its start, so a long run of full stops inside a line is not rescanned from each one.
_LEADING_LABEL = re.compile(r"^((final\s+)?answer\s*:\s*)+", re.IGNORECASE)
_TRAILING_PUNCTUATION = re.compile(r"(?<![\s.,;:!])[\s.,;:!]+\Z")


def messages(
    question: str, evidence: Sequence[Evidence], *, unanswerable: bool = False, best_last: bool = False
) -> list[BaseMessage]:
    """The reader's prompt: passages (best first, or with `best_last` beside the question), the question,
    the instruction, the cue."""
    instruction = f"{INSTRUCTION} {UNANSWERABLE_INSTRUCTION}" if unanswerable else INSTRUCTION
    return [
        SystemMessage(SYSTEM),
        HumanMessage(
            f"Passages:\n{format_passages(evidence, best_last=best_last)}\n\nQuestion: {question}\n{instruction}\n{CUE}"
        ),
    ]


def shorten_request(question: str) -> str:
    """The follow-up turn that asks for the span inside the reader's own reply (`SHORTEN`)."""
    return f"Question: {question}\n{SHORTEN}\n{CUE}"


def choice_request(options: Sequence[str]) -> str:
    """The follow-up turn that asks a choice question's reader for one of its options (`CHOOSE`)."""
    return f"{CHOOSE.format(options=' or '.join(options))}\n{CUE}"


def yes_no_request() -> str:
    """The follow-up turn that asks a yes-no question's reader for the word its answer lacks (`YES_OR_NO`)."""
    return f"{YES_OR_NO}\n{CUE}"


# "Which film came out first, X or Y?": a question word, one comma, then two options of at most
# _OPTION_WORDS words. One comma only, since a second ("..., and NBA odds, or ...?"; "Heads I Win, Tails
# You Lose or ...") leaves no telling where an option starts; a question opening with a verb ("Is X or Y
# older?", "Does the article ..., or ...?") can be answered yes or no, so it is left alone.
_CHOICE = re.compile(
    r"^(?:which|who|whom|whose|what|where|when)\b[^,]*,\s*([^,]+?)\s+or\s+([^,]+?)\s*\?\s*$", re.I
)
_OPTION_WORDS = 8


def choices(question: str) -> tuple[str, str] | None:
    """The two options a question offers to choose between, as it words them; None when it offers none."""
    match = _CHOICE.match(question.strip())
    if match is None or any(len(option.split()) > _OPTION_WORDS for option in match.groups()):
        return None
    return match.group(1), match.group(2)


def _holds(text: str, words: str) -> bool:
    """Whether `words`, normalised, stand in `text` as whole words (not "Woolf" in "Woolfson")."""
    wanted = normalise(words)
    return bool(wanted) and f" {wanted} " in f" {normalise(text)} "


def named_options(reply: str, options: Sequence[str]) -> list[str]:
    """The options `reply` names: an option's words inside the reply ("Adeline Virginia Woolf" names
    "Virginia Woolf") or the reply's inside an option's ("Woolf"), compared normalised, word by word."""
    return [option for option in options if _holds(reply, option) or _holds(option, reply)]


def option_of(reply: str, options: Sequence[str], passages: Sequence[Evidence]) -> str | None:
    """The one option whose own passages (their title names it) name `reply`: "Luis Saslavsky" is the
    film's whose page says it was directed by him. None when no option's passages name it, or both's."""
    through = [
        option
        for option in options
        if any(named_options(item["title"], [option]) and _holds(item["text"], reply) for item in passages)
    ]
    return through[0] if len(through) == 1 else None


def clean(text: str) -> str:
    """The reply's first non-empty line without a leading "Answer:" label or trailing punctuation.

    Small models often run on after the answer, so the answer is the first line. Nothing else is edited:
    the benchmarks' own normalisation (SQuAD rules) does the rest when scoring.
    """
    line = next((ln.strip() for ln in text.strip().splitlines() if ln.strip()), "")
    return _TRAILING_PUNCTUATION.sub("", _LEADING_LABEL.sub("", line))


def is_refusal(text: str) -> bool:
    """True for an empty reply or one that declines to answer ("Insufficient information.", "Unknown"...)."""
    said = normalise(text)
    return (
        not said
        or said in _REFUSAL_REPLIES
        or any(f"{said} ".startswith(f"{phrase} ") for phrase in _REFUSAL_STARTS)
    )


# The first word of a question that is answered yes or no ("Is ...", "Did ...", "Were ...").
_AUXILIARIES = frozenset(
    [
        "is",
        "are",
        "was",
        "were",
        "am",
        "do",
        "does",
        "did",
        "can",
        "could",
        "has",
        "have",
        "had",
        "will",
        "would",
        "shall",
        "should",
        "may",
        "might",
        "must",
    ]
)
# The first words of a leading phrase before a question's main clause: prepositions of time, place and
# reference ("Between", "After", "According to", "Considering").
_LEADING_WORDS = frozenset(
    [
        "after",
        "before",
        "between",
        "following",
        "considering",
        "given",
        "according",
        "regarding",
        "during",
        "since",
        "in",
        "on",
        "despite",
        "based",
        "from",
        "with",
    ]
)
# Words that make a clause ask something other than yes or no.
_QUESTION_WORDS = frozenset(["which", "who", "whom", "whose", "what", "where", "when", "why", "how"])
# ASCII case folding for the word: under Unicode rules "ſ" (long s) matches "s", and "Yeſ" is not "yes".
_YES_NO_START = re.compile(r"^\W*(?a:(yes|no))\b", re.IGNORECASE)
# "... was Shirley Temple", "... is located in Paris": the verb after which a restating sentence answers.
_COPULA = re.compile(r"\s(?:is|are|was|were)\s", re.IGNORECASE)
_STOP_WORDS = frozenset(
    [
        "the",
        "a",
        "an",
        "of",
        "in",
        "on",
        "at",
        "to",
        "for",
        "by",
        "and",
        "or",
        "who",
        "what",
        "which",
        "whom",
        "whose",
        "did",
        "does",
        "is",
        "was",
    ]
)


def is_yes_no_question(question: str) -> bool:
    """Whether the question asks yes or no: its main clause opens with an auxiliary verb, at the start
    ("Were X and Y ...?") or after a leading phrase that asks nothing itself ("Between the report of X and
    the report of Y, was there ...?"), and it offers no choice ("Is X or Y older?" asks for X or Y).

    A leading phrase opens with one of `_LEADING_WORDS` and holds no question word, so "In what region
    ..., is the city located?" and "In which game, covered by Polygon, can you ...?" ask what they name.
    Over every question of the four dev slices here (HotpotQA 298, 2Wiki 98, MuSiQue 50, MultiHop-RAG
    1,757), the leading phrase finds 195 more (all MultiHop-RAG's "Between ..., was there ...?" and "After
    ..., did ...?", every one with a Yes or No gold answer) and no question whose gold is anything else.
    """
    words = normalise(question).split()
    if not words or "or" in words:
        return False
    if words[0] in _AUXILIARIES:
        return True
    if words[0] not in _LEADING_WORDS:
        return False
    leading: list[str] = []
    for clause in question.split(","):
        clause_words = normalise(clause).split()
        if leading and clause_words and clause_words[0] in _AUXILIARIES:
            return not _QUESTION_WORDS.intersection(leading)
        leading += clause_words
    return False


def yes_no(question: str, reply: str) -> str | None:
    """ "yes" / "no" for a yes-no question whose reply starts with that word ("Yes, both are ..."); None
    otherwise (the benchmarks score the bare word)."""
    match = _YES_NO_START.match(reply)
    return match.group(1).lower() if match and is_yes_no_question(question) else None


def after_restatement(question: str, reply: str) -> str | None:
    """The part of a reply that restates the question and then answers it, after its last "is / was / are
    / were" ("The woman who portrayed Corliss Archer in Kiss and Tell was Shirley Temple" -> "Shirley
    Temple"); None when no such verb follows a restatement (at least half the words before it, other than
    stop words, are the question's) or nothing short follows it."""
    asked = set(normalise(question).split())
    for match in reversed(list(_COPULA.finditer(reply))):
        before = [word for word in normalise(reply[: match.start()]).split() if word not in _STOP_WORDS]
        rest = clean(reply[match.end() :])
        if before and sum(word in asked for word in before) * 2 >= len(before):
            return rest if rest and len(rest.split()) <= SHORT_WORDS else None
    return None
