"""Metadata filter extraction without an index or a model: the extractor prompt's parser, the check of a
reply against the index's sources and dates, the deterministic source matcher, the Chroma `where` they
make, and the extractor node's choice between LLM and matcher with a scripted chat model (wiring and
fallbacks, never what an LLM would answer) over a stand-in index that only reports its metadata."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from langchain_core.messages import BaseMessage

from nodes.context import MetadataFilterContext
from nodes.metadata import (
    ExtractMetadata,
    SourceNames,
    check,
    date_mentions,
    parse_day,
    where_clause,
)
from nodes.state import MetadataFilter
from prompts import metadata as prompt
from stores.metadata import MetadataExtra, MetadataInfo, MetadataParams, timestamp
from tests.scripted import scripted_gateway

# Real MultiHop-RAG source names, chosen for their shapes: a leading "The", one word, sections after " - "
# and " | ", a name that is also a common word ("The Age").
SOURCES = [
    "FOX News - Health",
    "FOX News - Lifestyle",
    "Sporting News",
    "TechCrunch",
    "The Age",
    "The Guardian",
    "The Independent - Sports",
    "The Independent - Travel",
    "The Roar | Sports Writers Blog",
    "The Verge",
]
INFO = MetadataInfo(
    params=MetadataParams(),
    fields=["published_at", "published_at_ts", "source"],
    sources=SOURCES,
    dated=100,
    first_date="2023-09-26",
    last_date="2023-12-31",
)
NAMES = SourceNames(tuple(SOURCES))


def day(text: str) -> int:
    return int(timestamp(f"{text}T00:00:00+00:00") or 0)


# --- the matcher on the MultiHop-RAG query shapes (our own questions in their style) ---


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("Did TechCrunch report that the startup raised a second round?", ["TechCrunch"]),
        (
            "Does 'The Guardian' suggest the club was lucky, in contrast to the Sporting News article?",
            ["Sporting News", "The Guardian"],
        ),
        ("Which team did the Verge say won, after the report published on October 2, 2023?", ["The Verge"]),
        ("According to FOX News, what does the study say about sleep?", SOURCES[:2]),
        ("Did The Independent - Sports article say the striker was injured?", ["The Independent - Sports"]),
        ("Which side won, according to The Roar?", ["The Roar | Sports Writers Blog"]),
        ("What happens to memory in the age of smartphones?", []),  # "the age" is not The Age here
        ("Did The Age report a rate rise?", ["The Age"]),
        ("What did Wired say about the new phone?", []),  # a source the index does not hold
    ],
)
def test_the_matcher_finds_the_sources_a_question_names(question: str, expected: list[str]) -> None:
    assert NAMES.find_in(question) == expected


def test_names_resolve_by_normalised_name_and_a_publication_names_its_sections() -> None:
    assert NAMES.resolve("the Verge") == ["The Verge"]
    assert NAMES.resolve("techcrunch") == ["TechCrunch"]
    assert NAMES.resolve("The Roar") == ["The Roar | Sports Writers Blog"]
    assert NAMES.resolve("Fox News") == ["FOX News - Health", "FOX News - Lifestyle"]
    assert NAMES.resolve("Wired") == []


# --- the parser: every malformed reply has its outcome ---


def test_a_well_formed_reply_parses_with_text_around_it_ignored() -> None:
    text = 'Sure. {"sources": ["The Verge", "TechCrunch"], "from": "2023-10-02", "to": null} Done.'
    assert prompt.parse(text) == (prompt.ExtractedFilter(("The Verge", "TechCrunch"), "2023-10-02", None), [])


@pytest.mark.parametrize(
    ("text", "note"),
    [
        ("The article is from TechCrunch.", "no JSON object"),
        ('{"sources": ["TechCrunch"], "from": "2023-10-02"', "broken JSON object"),
        ("{'source': {'$in': ['TechCrunch']}}", "broken JSON object"),  # the original's Python-dict style
        ("", "no JSON object"),  # what the gateway leaves of a reply that echoed the prompt twice
    ],
)
def test_a_reply_with_no_usable_object_gives_none(text: str, note: str) -> None:
    assert prompt.parse(text) == (None, [note])


def test_null_written_as_a_string_means_no_date() -> None:
    # what the local 1.5B model wrote for a question naming two sources and no date
    text = '{"sources": ["TechCrunch", "The Verge"], "from": "null", "to": "None"}'
    assert prompt.parse(text) == (prompt.ExtractedFilter(("TechCrunch", "The Verge")), [])


def test_wrong_field_types_are_dropped_field_by_field() -> None:
    extracted, notes = prompt.parse('{"sources": "The Verge", "from": 20231002, "to": "2023-11-01"}')
    assert extracted == prompt.ExtractedFilter(("The Verge",), None, "2023-11-01")
    assert notes == ["from was a int, not a date: no from date"]
    extracted, notes = prompt.parse('{"sources": {"$in": ["TechCrunch"]}, "from": null, "to": null}')
    assert extracted == prompt.ExtractedFilter()
    assert notes == ["sources was a dict, not a list: no sources"]
    extracted, notes = prompt.parse('{"sources": ["TechCrunch", 3, ""]}')
    assert extracted == prompt.ExtractedFilter(("TechCrunch",))
    assert notes == ["2 item(s) of sources that are not strings dropped"]
    extracted, notes = prompt.parse('{"sources": [], "days": ["October 2, 2023", 7, "null"], "from": null}')
    assert extracted == prompt.ExtractedFilter(days=("October 2, 2023",))
    assert notes == ["1 item(s) of days that are not strings dropped"]
    extracted, notes = prompt.parse('{"sources": [], "days": "2023-10-02", "from": null, "to": null}')
    assert extracted == prompt.ExtractedFilter(days=("2023-10-02",)) and notes == []


# --- the check against the index, and the Chroma filter ---


def test_check_keeps_known_sources_and_parsed_dates_and_says_what_it_dropped() -> None:
    question = "Did the Verge and Wired agree, after the article of October 2, 2023?"
    extracted = prompt.ExtractedFilter(("the Verge", "Wired", "The Verge"), "October 2, 2023", "soon")
    chosen, notes = check(extracted, INFO, question)
    assert chosen == MetadataFilter(days=[], sources=["The Verge"], date_from="2023-10-02", date_to=None)
    assert notes == ["source 'Wired' is not in the index: dropped", "to date 'soon' is not a date: dropped"]


def test_check_drops_a_known_source_the_question_never_mentions() -> None:
    question = "Which electric vehicles were discontinued in 2023, according to fox news?"
    extracted = prompt.ExtractedFilter(("TechCrunch", "FOX News - Health"), "2023-01-01", "2023-12-31")
    chosen, notes = check(extracted, INFO, question)
    assert chosen == MetadataFilter(
        days=[], sources=["FOX News - Health"], date_from="2023-01-01", date_to="2023-12-31"
    )
    assert notes == ["source 'TechCrunch' is not named in the question: dropped"]


def test_check_swaps_a_reversed_range_and_drops_dates_an_index_without_dates_cannot_match() -> None:
    chosen, notes = check(
        prompt.ExtractedFilter((), "2023-11-30", "2023-10-01"),
        INFO,
        "What was said on November 30, 2023 and October 1, 2023?",
    )
    assert (chosen["date_from"], chosen["date_to"]) == ("2023-10-01", "2023-11-30")
    assert notes == ["from was after to: swapped"]
    undated = MetadataInfo(params=MetadataParams(), sources=SOURCES)
    chosen, notes = check(prompt.ExtractedFilter(("TechCrunch",), "2023-10-01"), undated, "TechCrunch?")
    assert chosen == MetadataFilter(days=[], sources=["TechCrunch"], date_from=None, date_to=None)
    assert notes == ["from date '2023-10-01' dropped: the index has no dates"]


def test_written_and_iso_dates_parse() -> None:
    assert [
        parse_day(text) for text in ("2023-10-02", "October 2, 2023", "2 Oct 2023", "2023-10-02T08:00")
    ] == [parse_day("2023-10-02")] * 4
    assert parse_day("next week") is None


def test_the_where_clause_is_in_on_sources_and_whole_inclusive_days_on_the_numeric_date() -> None:
    assert where_clause(MetadataFilter(days=[], sources=[], date_from=None, date_to=None), INFO) is None
    assert where_clause(
        MetadataFilter(days=[], sources=["TechCrunch"], date_from=None, date_to=None), INFO
    ) == {"source": {"$in": ["TechCrunch"]}}
    between = MetadataFilter(
        days=[], sources=["The Verge", "TechCrunch"], date_from="2023-10-02", date_to="2023-10-31"
    )
    assert where_clause(between, INFO) == {
        "$and": [
            {"source": {"$in": ["The Verge", "TechCrunch"]}},
            {"published_at_ts": {"$gte": day("2023-10-02")}},
            {"published_at_ts": {"$lte": day("2023-11-01") - 1}},
        ]
    }


def test_named_days_are_parsed_sorted_once_each_and_dropped_where_they_cannot_match() -> None:
    extracted = prompt.ExtractedFilter(
        ("TechCrunch",), days=("October 30, 2023", "2023-10-07", "2023-10-30", "someday")
    )
    chosen, notes = check(extracted, INFO, "Did TechCrunch ... on October 7 and October 30, 2023?")
    assert chosen["days"] == ["2023-10-07", "2023-10-30"]
    assert notes == ["day 'someday' is not a date: dropped"]
    undated = MetadataInfo(params=MetadataParams(), sources=SOURCES)
    chosen, notes = check(prompt.ExtractedFilter(days=("2023-10-07",)), undated, "On October 7, 2023?")
    assert chosen["days"] == [] and notes == ["day '2023-10-07' dropped: the index has no dates"]


@pytest.mark.parametrize(
    ("question", "mentions"),
    [
        (
            "Did the TechCrunch article of October 7, 2023 and the one on Oct. 30th, 2023 agree?",
            [(2023, 10, 7, "day"), (2023, 10, 30, "day")],
        ),
        (
            "Which EVs did TechCrunch call lost in articles published after November 1, 2023?",
            [(2023, 11, 1, "from")],
        ),
        ("Did Sporting News publish odds before 1 December 2023?", [(2023, 12, 1, "to")]),
        (
            "What did The Verge report between 2023-10-02 and 2023-10-31, and on November 5, 2023?",
            [(2023, 10, 2, "from"), (2023, 10, 31, "to"), (2023, 11, 5, "day")],
        ),
        (
            "Was the rate raised prior to September 28, 2023, or later than October 2, 2023?",
            [(2023, 9, 28, "to"), (2023, 10, 2, "from")],
        ),
        ("Which console is due on November 16, per Engadget?", [(None, 11, 16, "day")]),
        (
            "What did Wired say in October 2023, and since 2022?",
            [(2023, 10, None, "day"), (2022, None, None, "from")],
        ),
        ("Who won the final in May?", []),  # a month alone: "May" is too often a word
        ("Who won the final?", []),
    ],
)
def test_the_question_says_which_dates_it_names_and_how_each_bounds_the_search(
    question: str, mentions: list[tuple[int | None, int | None, int | None, str]]
) -> None:
    found = date_mentions(question)
    assert [(m.year, m.month, m.day, m.role) for m in found] == mentions


def test_a_date_the_question_does_not_name_is_dropped_and_a_yearless_day_takes_the_index_year() -> None:
    # what the local 1.5B model replied to MultiHop-RAG dev queries: a date out of nowhere, and the year
    # of its prompt's examples for a day written without one
    unnamed = prompt.ExtractedFilter(("TechCrunch",), "2021-01-01", "2021-12-31")
    chosen, notes = check(unnamed, INFO, "Did TechCrunch report the trial before Fortune did?")
    assert (chosen["date_from"], chosen["date_to"]) == (None, None)
    assert notes == [
        "from date 2021-01-01 is not a date the question names: dropped",
        "to date 2021-12-31 is not a date the question names: dropped",
    ]
    yearless = prompt.ExtractedFilter(("TechCrunch",), days=("2021-11-16",))
    chosen, notes = check(yearless, INFO, "Which console does TechCrunch say is due on November 16?")
    assert chosen["days"] == ["2023-11-16"]
    assert notes == ["day 2021-11-16: the question gives no year, 2023 is the index's"]
    month = prompt.ExtractedFilter((), "2023-10-01", "2023-10-31")
    chosen, notes = check(month, INFO, "What did the papers say in October 2023?")
    assert (chosen["date_from"], chosen["date_to"], notes) == ("2023-10-01", "2023-10-31", [])


def test_a_day_the_question_makes_a_bound_is_moved_and_a_bound_on_a_plain_day_is_kept() -> None:
    # what the local 1.5B model replied to our own questions (see stated_roles)
    after = prompt.ExtractedFilter(("TechCrunch",), days=("2023-11-01",))
    chosen, notes = check(after, INFO, "Which EVs did TechCrunch drop, in articles after November 1, 2023?")
    assert (chosen["days"], chosen["date_from"], chosen["date_to"]) == ([], "2023-11-01", None)
    assert notes == ["day 2023-11-01 is the question's from date: moved"]
    before = prompt.ExtractedFilter(("Sporting News",), date_from="2023-12-01")
    chosen, notes = check(before, INFO, "Did Sporting News publish odds before December 1, 2023?")
    assert (chosen["date_from"], chosen["date_to"]) == (None, "2023-12-01")
    assert notes == ["from date 2023-12-01 is the question's to date: moved"]
    # "after the article of October 2": the reply's bound admits that day's article too, so it stays
    kept = prompt.ExtractedFilter(("The Verge",), date_from="2023-10-02")
    chosen, notes = check(kept, INFO, "Did The Verge agree, after the article of October 2, 2023?")
    assert (chosen["days"], chosen["date_from"], notes) == ([], "2023-10-02", [])


def whole_day(text: str) -> dict[str, Any]:
    start = day(text)
    return {"$and": [{"published_at_ts": {"$gte": start}}, {"published_at_ts": {"$lte": start + 86399}}]}


def test_named_days_filter_as_those_days_and_a_bounded_range_as_another_way_in() -> None:
    two_days = MetadataFilter(
        sources=["TechCrunch"], days=["2023-10-07", "2023-10-30"], date_from=None, date_to=None
    )
    assert where_clause(two_days, INFO) == {
        "$and": [
            {"source": {"$in": ["TechCrunch"]}},
            {"$or": [whole_day("2023-10-07"), whole_day("2023-10-30")]},
        ]
    }
    one_day = MetadataFilter(sources=[], days=["2023-10-07"], date_from=None, date_to=None)
    assert where_clause(one_day, INFO) == whole_day("2023-10-07")
    # a day and an open range: an article on the day or after the bound passes
    day_or_after = MetadataFilter(sources=[], days=["2023-10-07"], date_from="2023-11-01", date_to=None)
    assert where_clause(day_or_after, INFO) == {
        "$or": [whole_day("2023-10-07"), {"published_at_ts": {"$gte": day("2023-11-01")}}]
    }


def test_the_range_reading_spans_every_named_date_and_keeps_an_open_side_open() -> None:
    two_days = MetadataFilter(sources=[], days=["2023-10-07", "2023-10-30"], date_from=None, date_to=None)
    assert where_clause(two_days, INFO, "range") == {
        "$and": [
            {"published_at_ts": {"$gte": day("2023-10-07")}},
            {"published_at_ts": {"$lte": day("2023-10-31") - 1}},
        ]
    }
    after = MetadataFilter(sources=[], days=["2023-10-30"], date_from="2023-10-07", date_to=None)
    assert where_clause(after, INFO, "range") == {"published_at_ts": {"$gte": day("2023-10-07")}}
    before = MetadataFilter(sources=[], days=["2023-10-07"], date_from=None, date_to="2023-10-30")
    assert where_clause(before, INFO, "range") == {"published_at_ts": {"$lte": day("2023-10-31") - 1}}


# --- the extractor node: LLM or matcher, and which one is in the state ---


class MetadataOnlyIndexes:
    """An IndexProvider whose index only answers for its metadata extra (the node reads nothing else)."""

    def __init__(self, info: MetadataInfo) -> None:
        self.info = info

    def open(self, name: str) -> Any:
        info = self.info

        class Index:
            def extra(self, extra: type[MetadataExtra]) -> MetadataInfo:
                assert extra is MetadataExtra
                return info

        return Index()


class Run:
    def __init__(self, context: MetadataFilterContext) -> None:
        self.context = context


def extract(
    question: str, reply: Callable[[str], str] | str, info: MetadataInfo = INFO, **context: Any
) -> tuple[dict[str, Any], list[str]]:
    """The node's update for `question`, and the prompts the scripted model was sent."""
    llm, model = scripted_gateway(reply if callable(reply) else lambda _prompt: reply)
    node = ExtractMetadata(llm, MetadataOnlyIndexes(info))
    return node({"question": question}, Run(MetadataFilterContext(**context))), model.prompts


def test_the_llm_filter_is_checked_and_used_and_its_prompt_lists_the_index_sources() -> None:
    question = "Between the Verge report of October 2, 2023 and the TechCrunch one of October 31, 2023, ...?"
    reply = '{"sources": ["the Verge", "TechCrunch"], "from": "2023-10-02", "to": "2023-10-31"}'
    update, prompts = extract(question, reply)
    assert update["metadata_extractor"] == "llm"
    assert update["metadata_filter"] == MetadataFilter(
        days=[], sources=["The Verge", "TechCrunch"], date_from="2023-10-02", date_to="2023-10-31"
    )
    assert update["matched_sources"] == ["TechCrunch", "The Verge"]
    assert update["metadata_where"]["$and"][0] == {"source": {"$in": ["The Verge", "TechCrunch"]}}
    assert update["fallbacks"] == [] and update["stats"] == {"metadata_filter": 1.0}
    [sent] = prompts
    assert all(f"- {source}" in sent for source in SOURCES) and question in sent


def test_a_question_naming_nothing_gives_no_filter() -> None:
    update, _ = extract("Who won the 2023 rugby world cup final?", prompt.EMPTY_REPLY)
    assert update["metadata_extractor"] == "llm" and update["metadata_where"] is None
    assert update["stats"] == {"metadata_filter": 0.0} and update["fallbacks"] == []


def test_a_source_not_in_the_index_is_dropped_and_recorded() -> None:
    update, _ = extract(
        "What did Wired say about the phone?", '{"sources": ["Wired"], "from": null, "to": null}'
    )
    assert update["metadata_where"] is None and update["metadata_extractor"] == "llm"
    assert update["fallbacks"] == ["extract_metadata: source 'Wired' is not in the index: dropped"]


def test_a_reply_naming_no_known_source_takes_the_matchers_sources_and_keeps_its_dates() -> None:
    question = "Did the Verge report the launch after the TechCrunch article of October 2, 2023?"
    update, _ = extract(question, '{"sources": ["Verge News"], "from": "2023-10-02", "to": null}')
    assert update["metadata_extractor"] == "llm+matcher"
    assert update["metadata_filter"] == MetadataFilter(
        days=[], sources=["TechCrunch", "The Verge"], date_from="2023-10-02", date_to=None
    )
    assert update["fallbacks"] == [
        "extract_metadata: source 'Verge News' is not in the index: dropped",
        "extract_metadata: the reply named no source of the index: the source matcher's used",
    ]


def test_a_malformed_reply_falls_back_to_the_matcher_and_says_so() -> None:
    update, _ = extract("Did TechCrunch and The Verge agree?", "TechCrunch, The Verge")
    assert update["metadata_extractor"] == "matcher"
    assert update["metadata_filter"]["sources"] == ["TechCrunch", "The Verge"]
    assert update["fallbacks"] == [
        "extract_metadata: no JSON object",
        "extract_metadata: the source matcher's filter used instead",
    ]


def test_a_reply_copying_the_prompts_example_twice_is_blanked_and_the_matcher_used() -> None:
    copied = (
        '{"sources": ["The Copper Valley Courier"], "days": ["2021-03-04", "2021-03-09"], "from": null, '
        '"to": null}'
    )
    update, prompts = extract("Did The Guardian report the transfer?", copied)
    assert len(prompts) == 2  # asked once more after the first echo
    assert update["usage"][0]["echoes"] == 2 and update["metadata_extractor"] == "matcher"
    assert update["metadata_filter"]["sources"] == ["The Guardian"]
    assert update["fallbacks"][0] == "extract_metadata: the reply repeated the prompt's own rules or examples"


def test_the_empty_filter_is_not_taken_for_an_echo_of_the_example_showing_it() -> None:
    messages: list[BaseMessage] = prompt.messages("Who won the final?", SOURCES)
    assert prompt.GUARD.find(prompt.EMPTY_REPLY, messages) is None
    assert prompt.GUARD.find('{"sources": ["Orbit Wire Weekly"]}', messages) is not None


def test_matcher_only_runs_make_no_llm_call() -> None:
    update, prompts = extract("Did Sporting News preview the game?", "unused", extractor="matcher")
    assert prompts == [] and update["usage"] == []
    assert update["metadata_extractor"] == "matcher" and update["metadata_filter"]["sources"] == [
        "Sporting News"
    ]


def test_an_index_without_metadata_gives_no_filter_without_asking_the_llm() -> None:
    update, prompts = extract(
        "Did TechCrunch report it?", "unused", info=MetadataInfo(params=MetadataParams())
    )
    assert prompts == [] and update["metadata_extractor"] == "none" and update["metadata_where"] is None
    assert update["fallbacks"] == [
        "extract_metadata: index 'default' has no source or date metadata: no filter (NaiveRAG retrieval)"
    ]
