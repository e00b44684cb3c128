"""Every passage carries its document's source and date (issue 38): MultiHop-RAG's questions name them
("Does the TechCrunch article of October 7, 2023 ..."), and a reader that cannot see which passage is
TechCrunch's cannot answer. The line is embedded, BM25-indexed, reranked and read, as MultiHop-RAG's own
pipeline and Multi-Meta-RAG's code show passages; a corpus without metadata indexes as it always did.

The reader is a scripted chat model where a test reads its prompt (named as such); the last test asks the
real embedded model a question only the source line can settle.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from graphs import naive
from hopgraph import Settings, build_graph
from hopgraph.api import index_corpus, services_for
from hopgraph.cli import app
from nodes.integrate import rerank
from stores.documents import Document, Span
from stores.evidence import about_line
from stores.index import IndexParams, IndexStore
from tests.scripted import ScriptedChatModel, ScriptedServices, scripted_gateway, stream_run

SHOWN = ["source", "published_at"]
LINE = re.compile(r"^source: [^\n·]+ · published_at: [A-Z][a-z]+ \d{1,2}, \d{4} \(\d{4}-\d{2}-\d{2}\)$")


def test_a_date_is_written_as_questions_write_it_and_as_iso() -> None:
    meta = {"source": "TechCrunch", "published_at": "2023-10-07T14:00:00+00:00", "author": "Someone"}
    assert about_line(meta, SHOWN) == "source: TechCrunch · published_at: October 7, 2023 (2023-10-07)"
    assert about_line({"published_at": "2023-10-07"}, SHOWN) == "published_at: October 7, 2023 (2023-10-07)"
    assert about_line({"published_at": "last week", "source": ""}, SHOWN) == "published_at: last week"
    assert about_line({"category": "tech"}, SHOWN) == ""


def test_the_reader_sees_every_passage_with_its_source_and_date(services: Any, sample_index: str) -> None:
    """NaiveRAG over the bundled news sample (real index, real retrieval; the reader is a scripted chat
    model): each passage in the reader's prompt is its title, then its source and date line, then its text;
    the same line is in the state's evidence, and the index embedded it (its manifest names the fields)."""
    llm, model = scripted_gateway(lambda _prompt: "Cybertruck")
    graph = naive.build(ScriptedServices(services, llm)).compile()
    _, out = stream_run(graph, "Which truck did TechCrunch write about?", {"index": sample_index, "top_k": 4})
    [prompt] = model.prompts
    assert len(out["evidence"]) == 4
    for number, item in enumerate(out["evidence"], start=1):
        assert LINE.match(item["about"]), item["about"]
        fenced = f"[{number}] <passage>\n{item['title']}\n{item['about']}\n{item['text'].strip()[:40]}"
        assert fenced in prompt
    assert services.indexes.open(sample_index).manifest.params.embed_metadata == SHOWN


def test_a_sentence_shows_its_documents_line(services: Any, sample_index: str) -> None:
    """ChainRAG reads sentences, not chunks: a sentence's line is its document's, taken from the document's
    first chunk."""
    index = services.indexes.open(sample_index)
    chunk = index.all_chunks()[5]
    sentence = Span(chunk.id + "/s0", chunk.doc_id, chunk.title, chunk.text[:20], 0, 0, 20)
    assert index.about(sentence) == about_line(chunk.metadata, SHOWN) != ""
    assert index.evidence(sentence, 0.5, 2)["about"] == index.about(chunk)


def test_the_reranker_scores_each_passage_with_its_source_and_date(services: Any, sample_index: str) -> None:
    """What a reranker is handed for a passage is the line, then the text, as the reader reads them: a
    question naming a source or a day can rank the passage by it."""

    class Recording:
        def __init__(self) -> None:
            self.passages: list[str] = []

        def score(
            self, query: str, passages: list[str], vectors: Any = None, lexical: Any = None
        ) -> list[float]:
            self.passages = passages
            return [0.0] * len(passages)

    index = services.indexes.open(sample_index)
    evidence = [index.evidence(chunk, 0.5, 1) for chunk in index.all_chunks()[:3]]
    reranker = Recording()
    rerank(reranker, "Which truck did TechCrunch write about?", evidence)
    assert reranker.passages == [f"{item['about']}\n{item['text']}" for item in evidence]
    assert all(LINE.match(passage.split("\n", 1)[0]) for passage in reranker.passages)


def test_a_corpus_without_metadata_builds_as_it_always_did(tmp_path: Path, services: Any) -> None:
    """The default names the fields; a corpus none of whose documents has them keeps its build id (so its
    index is not rebuilt) and its passages carry no line."""
    docs = [Document("a", "Marie Curie", "Marie Curie was born in Warsaw in 1867.")]
    store = IndexStore(tmp_path)
    plain = store.build("plain", docs, services.embedder, IndexParams())
    defaults = store.build("plain", docs, services.embedder, IndexParams(embed_metadata=SHOWN))
    assert defaults.status == "unchanged" and defaults.manifest.build_id == plain.manifest.build_id
    index = store.open("plain", services.embedder)
    assert "about" not in index.evidence(index.all_chunks()[0], 1.0, 1)
    assert index.unshown_metadata(SHOWN) == []


def test_asking_an_index_built_without_the_line_says_so(
    settings: Settings, scripted_cli: ScriptedChatModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An index built before the line existed (or with `embed_metadata` empty) over documents that carry
    source and date: `hopgraph ask` says its passages reach the reader without them, and how to rebuild."""
    index_corpus(
        Path("hopgraph/sample/corpus.jsonl"),
        "sample-no-line",
        settings.model_copy(update={"embed_metadata": []}),
    )
    services = services_for(settings)
    # from the store: through `services.indexes` this first look would already have given the notice
    assert services.indexes.store.open("sample-no-line", services.embedder).unshown_metadata(SHOWN) == SHOWN
    reader, _ = scripted_gateway(lambda _prompt: "Cybertruck")
    monkeypatch.setitem(services._built, "llm", reader)
    asked = CliRunner().invoke(app, ["ask", "Which truck?", "--index", "sample-no-line"])
    assert asked.exit_code == 0, asked.output
    assert "built without the metadata line (source, published_at)" in asked.output
    assert "hopgraph index PATH --name sample-no-line" in asked.output


def test_a_run_from_python_on_an_index_without_the_line_logs_it_once(
    settings: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    """The same notice for a graph run from Python (or Studio), on the "hopgraph" logger: once per index
    build, not at every retrieval."""
    index_corpus(
        Path("hopgraph/sample/corpus.jsonl"),
        "sample-no-line-api",
        settings.model_copy(update={"embed_metadata": []}),
    )
    reader, _ = scripted_gateway(lambda _prompt: "Cybertruck")
    graph = naive.build(ScriptedServices(services_for(settings), reader)).compile()
    with caplog.at_level(logging.WARNING, logger="hopgraph"):
        for _ in range(2):
            stream_run(graph, "Which truck?", {"index": "sample-no-line-api"})
    notices = [record.getMessage() for record in caplog.records if "metadata line" in record.getMessage()]
    assert notices == [
        "index 'sample-no-line-api' was built without the metadata line (source, published_at): its passages "
        "reach the reader without them. Rebuild: `hopgraph index PATH --name sample-no-line-api`."
    ]


@pytest.mark.llm
def test_the_local_model_picks_the_passage_by_its_source(tmp_path: Path, settings: Settings) -> None:
    """Two reports of the same funding round that disagree on the amount, told apart only by their source:
    asked what each source reported, the real embedded model answers that source's figure. Without the line
    (measured with `embed_metadata = []`) it answered The Verge's 45 million, the first passage, to both."""
    corpus = tmp_path / "news.jsonl"
    corpus.write_text(
        "\n".join(
            [
                '{"id": "tc", "title": "Acme raises a new round", "source": "TechCrunch", '
                '"published_at": "2023-10-02T09:00:00+00:00", "text": "Acme, the robotics start-up, said on '
                'Monday it raised 12 million dollars from investors to build warehouse robots."}',
                '{"id": "verge", "title": "Acme raises a new round", "source": "The Verge", '
                '"published_at": "2023-10-03T09:00:00+00:00", "text": "Acme, the robotics start-up, said on '
                'Monday it raised 45 million dollars from investors to build warehouse robots."}',
            ]
        )
        + "\n",
        encoding="utf-8",
    )
    index_corpus(corpus, "acme", settings)
    graph = build_graph("naive", settings, checkpointer=False)
    for source, right, wrong in [("TechCrunch", "12", "45"), ("The Verge", "45", "12")]:
        out = graph.invoke(
            {"question": f"According to {source}, how much did Acme raise?"},
            context={"index": "acme", "top_k": 2},
        )
        sources = {item["about"].split(" · ")[0] for item in out["evidence"]}
        assert sources == {"source: TechCrunch", "source: The Verge"}
        assert right in out["answer"] and wrong not in out["answer"], (source, out["answer"])
