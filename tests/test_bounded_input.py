"""Bounded input (issue 40 item 7): what a caller or a corpus can send is refused past a size, in one line
naming it, and what is taken costs time and memory in proportion to its size.

Work is counted, not timed: the source matcher's Python line events for a question and for one twice as
long (linear work doubles, the quadratic check of every match against every earlier one quadruples), and
the characters the tokenizer is handed at once.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import nodes.metadata
from graphs import naive
from hopgraph import Settings, build_graph
from nodes.metadata import SourceNames
from nodes.state import MAX_QUESTION_CHARS, QuestionTooLongError
from stores.chunking import TOKENIZE_WINDOW, chunk_document, windowed_spans
from stores.documents import MAX_DOCUMENT_CHARS, MAX_LINE_CHARS, Document, load_corpus
from stores.errors import CorpusError
from stores.protocols import Embedder
from tests.scripted import ScriptedChatModel, ScriptedServices, scripted_gateway
from tests.test_bad_values import hopgraph, reader  # noqa: F401  (reader is a fixture)
from tests.test_metadata_filter import NAMES

MENTIONS = "According to The Verge and TechCrunch, and to FOX News, did the Guardian agree? "


def line_events(call: Callable[[], Any]) -> int:
    """How many lines of nodes/metadata.py (its generator expressions included) `call` executes."""
    count = 0

    def tracer(frame: Any, event: str, arg: Any) -> Any:
        nonlocal count
        if frame.f_code.co_filename != nodes.metadata.__file__:
            return None
        count += event == "line"
        return tracer

    sys.settrace(tracer)
    try:
        call()
    finally:
        sys.settrace(None)
    return count


def test_the_source_matcher_is_linear_in_the_mentions() -> None:
    """A question naming sources thousands of times (80 KB took 31 s) costs twice the work at twice the
    mentions, and finds what a short one does."""
    short, long = MENTIONS * 100, MENTIONS * 200
    assert line_events(lambda: NAMES.find_in(long)) < 2.2 * line_events(lambda: NAMES.find_in(short))
    big = MENTIONS * (80_000 // len(MENTIONS))
    assert (
        NAMES.find_in(big)
        == NAMES.find_in(MENTIONS)
        == [
            "FOX News - Health",
            "FOX News - Lifestyle",
            "TechCrunch",
            "The Guardian",
            "The Verge",
        ]
    )
    assert SourceNames(("The Independent - Sports", "The Independent - Travel")).find_in(
        "The Independent - Sports, and The Independent. " * 500
    ) == ["The Independent - Sports", "The Independent - Travel"]


def test_a_question_over_the_limit_is_refused_before_any_step(
    settings: Settings, sample_index: str, services: Any
) -> None:
    """Through the Python API (and so Studio's server, which invokes the same graphs): one line, no step."""
    graph = build_graph("naive", settings, checkpointer=False)
    with pytest.raises(QuestionTooLongError, match=f"more than the {MAX_QUESTION_CHARS:,}") as refused:
        graph.invoke({"question": "why? " * 1000}, context={"index": sample_index})
    assert "\n" not in str(refused.value)
    with pytest.raises(QuestionTooLongError, match="must be text"):
        graph.invoke({"question": 42}, context={"index": sample_index})
    llm, model = scripted_gateway(lambda _prompt: "Cybertruck")
    scripted = naive.build(ScriptedServices(services, llm)).compile()
    at_the_limit = ("Which pickup? " * MAX_QUESTION_CHARS)[:MAX_QUESTION_CHARS]
    assert (
        scripted.invoke({"question": at_the_limit}, context={"index": sample_index})["answer"] == "Cybertruck"
    )
    assert len(model.prompts) == 1


def test_the_command_line_refuses_a_long_question_in_one_line(
    reader: ScriptedChatModel,  # noqa: F811
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, _, err = hopgraph(["ask", "x" * (MAX_QUESTION_CHARS + 1), "--index", "sample"], capsys)
    assert code == 2 and len(err.splitlines()) == 1 and "characters, more than the" in err
    assert reader.prompts == []


def test_a_document_or_a_line_over_the_limit_is_named_with_what_to_do(tmp_path: Path) -> None:
    folder = tmp_path / "corpus"
    folder.mkdir()
    (folder / "dump.txt").write_text(
        ("word " * 20 + "\n") * (MAX_DOCUMENT_CHARS // 101 + 1), encoding="utf-8"
    )
    with pytest.raises(CorpusError, match=r"dump.txt: the text has .* split it into several documents"):
        load_corpus(folder)
    lines = tmp_path / "lines.jsonl"
    record = {"id": "a", "title": "A", "text": "short line\n" + "x" * (MAX_LINE_CHARS + 1)}
    lines.write_text(json.dumps(record) + "\n", encoding="utf-8")
    with pytest.raises(CorpusError, match=r"line 1: line 2 of the text has .* break it") as refused:
        load_corpus(lines)
    assert "\n" not in str(refused.value)


@pytest.mark.parametrize("suffix", [".jsonl", ".json"])
def test_deeply_nested_json_is_one_line_not_a_recursion_error(tmp_path: Path, suffix: str) -> None:
    corpus = tmp_path / f"deep{suffix}"
    corpus.write_text("[" * 100_000 + "]" * 100_000 + "\n", encoding="utf-8")
    with pytest.raises(CorpusError, match="JSON nested too deeply") as refused:
        load_corpus(corpus)
    assert "\n" not in str(refused.value)


def test_a_document_is_tokenised_in_windows_with_the_spans_of_the_whole(minilm: Embedder) -> None:
    """The tokenizer is never handed more than a window of a document; the spans are those of the whole
    text, so the chunks are the same."""
    text = " ".join(f"Sentence {i} of a long report, on page {i // 40}." for i in range(12_000))
    handed: list[int] = []

    def recording(part: str) -> list[tuple[int, int]]:
        handed.append(len(part))
        return minilm.token_spans(part)

    doc = Document(id="long", title="Long", text=text)
    windowed = chunk_document(doc, recording, 256, 32)
    assert len(text) > 3 * TOKENIZE_WINDOW and max(handed) <= TOKENIZE_WINDOW and len(handed) >= 4
    whole = minilm.token_spans(text)
    assert windowed_spans(text, minilm.token_spans) == whole
    assert windowed_spans(text, minilm.token_spans, window=5_000) == whole
    assert windowed[-1].char_end == whole[-1][1] and windowed[0].text == text[: windowed[0].char_end]
