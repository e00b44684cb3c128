"""QuOTE end to end with the real embedded LLM: questions written for a small corpus at index time, then one
question answered through them at the method's query-time defaults (real Chroma, MiniLM and SQLite
checkpoints). The index asks for fewer questions, for fewer chunks, than its defaults (10 for every chunk):
a writer call takes about 9 s a chunk here, and the suite's minutes are counted."""

from __future__ import annotations

from pathlib import Path

import pytest

from hopgraph import Settings, build_graph, index_corpus, services_for
from stores.questions import QUESTIONS, QuestionParams
from tests.test_quote import DOCS, corpus_folder

PER_CHUNK = 5


@pytest.mark.llm
def test_questions_written_by_the_local_llm_retrieve_the_chunk_that_answers(
    settings: Settings, tmp_path: Path
) -> None:
    corpus = corpus_folder(tmp_path, DOCS)
    # --max-chunks 2: questions for the first two documents' chunks only (each document is one chunk)
    params = QuestionParams(per_chunk=PER_CHUNK, max_chunks=2)
    writer = services_for(settings).question_writer  # shared by the session: other tests' calls are in it
    calls_before = writer.spent["calls"]
    built = index_corpus(
        corpus, "quote-local", settings, method="quote", extra_params={QUESTIONS.name: params}
    )
    info = built.manifest.extras[QUESTIONS.name]
    assert info.chunks == info.written == writer.spent["calls"] - calls_before == 2
    assert 2 <= info.questions <= 2 * PER_CHUNK and info.parse["kept"] == info.questions

    graph = build_graph("quote", settings)
    config = {"configurable": {"thread_id": "quote-e2e"}}
    out = graph.invoke(
        {"question": "In which city was Marie Curie born?"},
        config,
        context={"index": "quote-local"},  # the query-time defaults: k 5, M 10
    )
    # the two chunks with questions, found through them, the one that answers first
    assert [item["doc_id"] for item in out["evidence"]] == ["curie.md", "bread.md"], out["question_hits"]
    assert out["question_hits"][0]["chunk_id"] == "curie.md#0"
    assert "warsaw" in out["answer"].lower(), out["answer"]
    assert graph.get_state(config).values["question_hits"] == out["question_hits"]
