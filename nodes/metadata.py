"""Metadata filters: which sources and dates a question restricts itself to, as a Chroma `where`.

Multi-Meta-RAG (seed 004 §2.2) asks an LLM; its output is checked here against what the index holds (the
`metadata` index extra, stores.metadata): a source the index does not hold would make the filter match
nothing, so names are matched to the known ones by normalised name ("the Verge" -> "The Verge") and the
rest dropped; dates are parsed or dropped. A deterministic matcher of the known source names in the
question runs as well and stands in when the LLM's reply is unusable (or when a run asks for it alone,
which makes extraction LLM-free). Any method that retrieves chunks can put `ExtractMetadata` before its
`Retrieve` and hand it the state's `metadata_where` (NaiveRAG's `metadata_filter` switch does).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any, Literal

from langgraph.runtime import Runtime, get_runtime

from nodes.context import DateFilter, MetadataFilterContext, context_of
from nodes.llm import LLMGateway
from nodes.protocols import IndexProvider
from nodes.state import MetadataFilter
from prompts import metadata as prompt
from prompts.echo import normalise
from stores.metadata import MetadataExtra, MetadataInfo

MAX_TOKENS = 96  # a filter of a few sources and two dates
# "The Roar | Sports Writers Blog", "FOX News - Health", "Eos: Earth And Space Science News"
_SECTION = re.compile(r"\s+(?:\||-|–)\s+|:\s+")
_DATE_FORMATS = ("%B %d, %Y", "%b %d, %Y", "%d %B %Y", "%d %b %Y", "%B %d %Y", "%Y/%m/%d")


def name_key(name: str) -> str:
    """A source name as compared: lower-cased words, punctuation and a leading "the" dropped."""
    key = normalise(name)
    return key[4:] if key.startswith("the ") else key


def _forms(source: str) -> list[str]:
    """What a question may call `source`: its full name, and the publication before a section
    ("FOX News" of "FOX News - Health"), which names every section of that publication."""
    head = _SECTION.split(source, maxsplit=1)[0]
    return [source] if head == source else [source, head]


@dataclass(frozen=True)
class SourceNames:
    """The index's source names, and the two ways of finding them: in an LLM's list, and in a question."""

    sources: tuple[str, ...]

    def resolve(self, name: str) -> list[str]:
        """The known sources `name` means: the one whose full name it is, else every source whose
        publication it names; none when it is not a known name."""
        key = name_key(name)
        exact = [source for source in self.sources if name_key(source) == key]
        if exact:
            return exact
        return [source for source in self.sources if name_key(_forms(source)[-1]) == key]

    def find_in(self, question: str) -> list[str]:
        """The known sources the question names, in the index's order.

        A name counts where it appears as a whole phrase, its first word capitalised (with or without a
        leading "the"), so "The Age" is found in "according to The Age" but not in "the age of". Longer
        names are looked for first and a shorter one never inside a longer one's match, so "The
        Independent - Sports" does not also name every other section of The Independent.

        Linear in the question: the characters matches already took are marked in one array, so a match is
        checked against them in its own length (a list of taken spans, checked whole at every match, took
        31 s on an 80 KB question naming sources thousands of times).
        """
        forms = {form for source in self.sources for form in _forms(source)}
        taken = bytearray(len(question))  # 1 where a longer name's match already stands
        found: set[str] = set()
        for form in sorted(forms, key=lambda form: (-len(form), form)):
            bare = re.sub(r"^the\s+", "", form, flags=re.IGNORECASE)
            pattern = re.compile(r"(?<!\w)(?:the\s+)?(?P<name>" + re.escape(bare) + r")(?!\w)", re.IGNORECASE)
            for match in pattern.finditer(question):
                start, end = match.span()
                if not match.group("name")[0].isupper() or taken.find(1, start, end) != -1:
                    continue
                taken[start:end] = b"\x01" * (end - start)
                found.update(self.resolve(form))
        return [source for source in self.sources if source in found]


def parse_day(text: str) -> date | None:
    """An ISO date (or date-time) or a written date ("October 2, 2023", "2 Oct 2023"); None otherwise."""
    text = text.strip()
    try:
        return datetime.fromisoformat(text).date()
    except ValueError:
        pass
    for pattern in _DATE_FORMATS:
        try:
            return datetime.strptime(text, pattern).date()
        except ValueError:
            continue
    return None


def _day_start(day: date) -> int:
    return int(datetime(day.year, day.month, day.day, tzinfo=UTC).timestamp())


_DAY_SECONDS = 86400


def _days_between(first: date | None, last: date | None, info: MetadataInfo) -> dict[str, Any] | None:
    """The clause on the numeric date field for whole inclusive days from `first` to `last` (None: open)."""
    bounds: list[dict[str, Any]] = []
    if first:
        bounds.append({info.timestamp_field: {"$gte": _day_start(first)}})
    if last:
        # the day's last second, counted from its start: the day after 9999-12-31 is no date
        bounds.append({info.timestamp_field: {"$lte": _day_start(last) + _DAY_SECONDS - 1}})
    if not bounds:
        return None
    return bounds[0] if len(bounds) == 1 else {"$and": bounds}


def _date_clause(chosen: MetadataFilter, info: MetadataInfo, dates: DateFilter) -> dict[str, Any] | None:
    """Which publication dates pass. `days`: an article on any named day or inside the range the question
    bounds (either, so a range the model also wrote a named day into still admits that day); `range`:
    one inclusive range over every named date, its side left open where the question only said after (or
    only before)."""
    days = [date.fromisoformat(day) for day in chosen["days"]]
    first = date.fromisoformat(chosen["date_from"]) if chosen["date_from"] else None
    last = date.fromisoformat(chosen["date_to"]) if chosen["date_to"] else None
    if dates == "range":
        low = min([*days, first]) if first else (None if last else min(days, default=None))
        high = max([*days, last]) if last else (None if first else max(days, default=None))
        return _days_between(low, high, info)
    parts = [_days_between(day, day, info) for day in days]
    if first or last:
        parts.append(_days_between(first, last, info))
    clauses = [part for part in parts if part]
    if not clauses:
        return None
    return clauses[0] if len(clauses) == 1 else {"$or": clauses}


def where_clause(
    chosen: MetadataFilter, info: MetadataInfo, dates: DateFilter = "days"
) -> dict[str, Any] | None:
    """The Chroma `where` of a checked filter: `$in` on the source field and, on the numeric date field,
    the dates as `dates` reads them (whole inclusive days); None for an empty filter."""
    clauses: list[dict[str, Any]] = []
    if chosen["sources"]:
        clauses.append({info.params.source_field: {"$in": list(chosen["sources"])}})
    on_dates = _date_clause(chosen, info, dates)
    if on_dates:
        clauses.extend(on_dates["$and"] if set(on_dates) == {"$and"} else [on_dates])
    if not clauses:
        return None
    return clauses[0] if len(clauses) == 1 else {"$and": clauses}


def mentions(question: str, source: str) -> bool:
    """Whether the question names `source` at all: one of its forms, compared as `name_key`s, in any case.

    Looser than `SourceNames.find_in` (no capital needed), since it only vets a name the LLM gave."""
    said = f" {normalise(question)} "
    return any(f" {name_key(form)} " in said for form in _forms(source))


DateRole = Literal["day", "from", "to"]
_DATE_LABEL: dict[DateRole, str] = {"day": "day", "from": "from date", "to": "to date"}
_MONTH = (
    r"(?P<month>Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?"
    r"|Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)"
)
_ORDINAL = r"(?:st|nd|rd|th)?"
# The ways a question writes a date, most specific first: a day of a month (its year optional), an ISO
# day, a month of a year, a year after a preposition ("in 2023", "before 2024").
_DATE_FORMS = (
    re.compile(
        rf"\b{_MONTH}\.?\s+(?P<day>\d{{1,2}}){_ORDINAL}\b(?:,?\s+(?P<year>\d{{4}})\b)?", re.IGNORECASE
    ),
    re.compile(
        rf"\b(?P<day>\d{{1,2}}){_ORDINAL}\s+(?:of\s+)?{_MONTH}\b\.?(?:,?\s+(?P<year>\d{{4}})\b)?",
        re.IGNORECASE,
    ),
    re.compile(r"\b(?P<year>\d{4})-(?P<month>\d{2})-(?P<day>\d{2})\b"),
    re.compile(rf"\b{_MONTH}\s+(?:of\s+)?(?P<year>\d{{4}})\b", re.IGNORECASE),
    re.compile(r"\b(?:in|of|since|after|before|until|during)\s+(?P<year>\d{4})\b", re.IGNORECASE),
)
_OPENS = {"after", "since", "from"}  # the word before a date that makes it a lower bound
_CLOSES = {"before", "until", "till", "by", "to"}  # ... an upper bound


@dataclass(frozen=True)
class DateMention:
    """A date as the question writes it: what it pins down (None: the question does not say, e.g. a
    month with no day, a day with no year) and how the question uses it (`date_mentions`)."""

    year: int | None
    month: int | None
    day: int | None
    role: DateRole

    def matches(self, day: date) -> bool:
        """Whether `day` is this mention or inside it (a day of the month or year it names)."""
        return all(
            said is None or said == value
            for said, value in ((self.year, day.year), (self.month, day.month), (self.day, day.day))
        )


def _month_number(name: str) -> int:
    return datetime.strptime(name[:3].title(), "%b").month


def date_mentions(question: str) -> list[DateMention]:
    """Every date the question writes, in order, with its role read from the word before it: a lower bound
    after "after", "since", "from" or "between"; an upper bound after "before", "until", "by", "to" or the
    "and" that closes a "between"; otherwise a day an article was published ("on", "of", "dated" ...).

    The 1.5B extractor mixes the two up (asked about our own questions, it listed "after November 1,
    2023" as a day and put "before December 1, 2023" in from), and a day read as the only day keeps out
    every later article, so where the question's words make a date a bound, that is its role (`check`);
    a bound the reply gave for a date the question calls a plain day is kept, since it admits that day.
    """
    found: list[tuple[int, int, DateMention]] = []
    for form in _DATE_FORMS:
        for match in form.finditer(question):
            start, end = match.span()
            if any(start < taken_end and taken_start < end for taken_start, taken_end, _ in found):
                continue
            parts = match.groupdict()
            month = parts.get("month")
            number = None if month is None else int(month) if month.isdigit() else _month_number(month)
            year, day = parts.get("year"), parts.get("day")
            mention = DateMention(
                year=int(year) if year else None, month=number, day=int(day) if day else None, role="day"
            )
            # the role is read before the date itself (a year's form includes its preposition)
            found.append((min(match.start(name) for name, value in parts.items() if value), end, mention))
    mentions: list[DateMention] = []
    between = False
    for start, _, mention in sorted(found, key=lambda item: item[0]):
        words = re.findall(r"[a-z]+", question[:start].lower())[-2:]
        word = words[-1] if words else ""
        role: DateRole = "day"
        if word in _OPENS or word == "between" or words == ["later", "than"]:
            role, between = "from", word == "between"
        elif (
            word in _CLOSES or words in (["prior", "to"], ["earlier", "than"]) or (word == "and" and between)
        ):
            role, between = "to", False
        mentions.append(DateMention(mention.year, mention.month, mention.day, role))
    return mentions


def _in_index_years(day: date, info: MetadataInfo) -> date:
    """`day` moved to the year in which it falls inside the index's dates, for a question that gave no
    year; unchanged when no year puts it there."""
    if not (info.first_date and info.last_date):
        return day
    first, last = date.fromisoformat(info.first_date), date.fromisoformat(info.last_date)
    for year in range(first.year, last.year + 1):
        try:
            moved = day.replace(year=year)
        except ValueError:  # February 29
            continue
        if first <= moved <= last:
            return moved
    return day


def check(
    extracted: prompt.ExtractedFilter, info: MetadataInfo, question: str
) -> tuple[MetadataFilter, list[str]]:
    """The extracted filter with only what the index can match and the question states: known sources (by
    normalised name) that the question mentions, parsed days and dates (none when the index has no
    dates), the days sorted and once each, from <= to. Notes say what was dropped or changed.

    A known source the question never mentions is dropped: asked about a question naming no source, the
    1.5B model listed two of the index's (our own question, not a benchmark's), and such a filter hides the
    answer's articles. Likewise a date the question does not write (`date_mentions`): on MultiHop-RAG's
    dev queries the model gave "2021-01-01" to questions naming no date at all and the year of its
    prompt's examples to "November 16", and with nothing else searched (no refill, as published) such a
    filter left 7 of 50 queries without a single passage. A day the question gives without a year takes
    the year in which it falls inside the index's dates.
    """
    names = SourceNames(tuple(info.sources))
    notes: list[str] = []
    sources: list[str] = []
    for name in extracted.sources:
        known = names.resolve(name)
        if not known:
            notes.append(f"source {name!r} is not in the index: dropped")
        elif not any(mentions(question, source) for source in known):
            notes.append(f"source {name!r} is not named in the question: dropped")
            known = []
        sources.extend(source for source in known if source not in sources)
    written = date_mentions(question)
    named: dict[DateRole, list[date]] = {"day": [], "from": [], "to": []}
    given = [*((text, "day") for text in extracted.days)]
    given += [
        (text, role) for text, role in ((extracted.date_from, "from"), (extracted.date_to, "to")) if text
    ]
    for text, role in given:
        label = _DATE_LABEL[role]
        day = parse_day(text)
        if day is None:
            notes.append(f"{label} {text!r} is not a date: dropped")
            continue
        if not info.dated:
            notes.append(f"{label} {text!r} dropped: the index has no dates")
            continue
        mention = next((mention for mention in written if mention.matches(day)), None)
        if mention is None:
            notes.append(f"{label} {day.isoformat()} is not a date the question names: dropped")
            continue
        if mention.year is None and (moved := _in_index_years(day, info)) != day:
            notes.append(
                f"{label} {day.isoformat()}: the question gives no year, {moved.year} is the index's"
            )
            day = moved
        said = mention.role
        if said == "day":  # a bound the reply gave for a plain day still admits that day's articles
            said = role
        if said != role:
            notes.append(f"{label} {day.isoformat()} is the question's {_DATE_LABEL[said]}: moved")
        named[said].append(day)
    first = min(named["from"], default=None)
    last = max(named["to"], default=None)
    if first and last and first > last:
        notes.append("from was after to: swapped")
        first, last = last, first
    chosen = MetadataFilter(
        sources=sources,
        days=sorted({day.isoformat() for day in named["day"]}),
        date_from=first.isoformat() if first else None,
        date_to=last.isoformat() if last else None,
    )
    return chosen, notes


def _no_filter() -> MetadataFilter:
    return MetadataFilter(sources=[], days=[], date_from=None, date_to=None)


def _noted(notes: Iterable[str]) -> list[str]:
    return [f"extract_metadata: {note}" for note in notes]


class ExtractMetadata:
    """The metadata extractor, role "extractor": writes the checked filter (`metadata_filter`), its Chroma
    `where` (`metadata_where`, None for no filter), which extractor produced it (`metadata_extractor`:
    llm, matcher, llm+matcher, or none when the index has no metadata) and the matcher's sources
    (`matched_sources`).

    Outcomes, each recorded in `fallbacks`: an index without source or date metadata -> no filter, no
    LLM call (the method is then NaiveRAG); an unusable reply (no or broken JSON, an echo the gateway
    blanked) -> the matcher's sources; unknown sources and unparsable dates -> dropped (see `check`); a
    reply left with no source of the index while the matcher found some -> the matcher's sources with
    the reply's dates (`llm+matcher`): the matcher only finds names the question spells out, so a source
    it finds is one the question restricts itself to.
    An index built without the metadata extra is an error that says how to add it.
    """

    def __init__(
        self,
        llm: LLMGateway,
        indexes: IndexProvider,
        context: type[MetadataFilterContext] = MetadataFilterContext,
    ) -> None:
        self.llm = llm
        self.indexes = indexes
        self.context = context

    def __call__(self, state: dict[str, Any], runtime: Runtime[MetadataFilterContext]) -> dict:
        ctx = context_of(runtime.context, self.context)
        info = self.indexes.open(ctx.index).extra(MetadataExtra)
        question = state["question"]
        if not info.filterable:
            return {
                "metadata_filter": _no_filter(),
                "metadata_where": None,
                "metadata_extractor": "none",
                "matched_sources": [],
                "fallbacks": _noted(
                    [f"index {ctx.index!r} has no source or date metadata: no filter (NaiveRAG retrieval)"]
                ),
                "stats": {"metadata_filter": 0.0},
            }
        matched = SourceNames(tuple(info.sources)).find_in(question)
        by_matcher = MetadataFilter(sources=matched, days=[], date_from=None, date_to=None)
        update: dict[str, Any] = {"matched_sources": matched, "usage": [], "fallbacks": []}
        chosen, extractor = by_matcher, "matcher"
        if ctx.extractor == "llm":
            messages = prompt.messages(question, info.sources)
            reply = self.llm.complete(
                "extractor", messages, max_tokens=MAX_TOKENS, guard=prompt.GUARD, shape=prompt.REPLY
            )
            update["usage"] = [reply.usage]
            extracted, notes = prompt.parse(reply.text, reply.structured)
            if reply.usage["echoes"] > 1:
                extracted, notes = None, ["the reply repeated the prompt's own rules or examples"]
            if extracted is None:
                notes.append("the source matcher's filter used instead")
            else:
                chosen, checked = check(extracted, info, question)
                notes.extend(checked)
                extractor = "llm"
                if not chosen["sources"] and matched:
                    notes.append("the reply named no source of the index: the source matcher's used")
                    chosen = MetadataFilter(**{**chosen, "sources": matched})
                    extractor = "llm+matcher"
            update["fallbacks"] = _noted(notes)
        where = where_clause(chosen, info, ctx.dates)
        return {
            **update,
            "metadata_filter": chosen,
            "metadata_where": where,
            "metadata_extractor": extractor,
            "stats": {"metadata_filter": float(where is not None)},
        }


def filter_switch(
    context: type[MetadataFilterContext], extract: str = "extract_metadata", otherwise: str = "retrieve"
) -> Callable[[Any], str]:
    """A router from START for graphs with the `metadata_filter` switch: to the extractor when the run's
    context (or, passed none, `context`'s default) turns filtering on, else straight to retrieval."""

    def route(_state: Any) -> str:
        ctx = context_of(get_runtime(context).context, context)
        return extract if ctx.metadata_filter else otherwise

    return route
