"""QuOTE end to end with the real embedded LLM at its defaults: questions written for a small corpus at index
time (10 for every chunk), then one question answered through them at the query-time defaults (real Chroma,
MiniLM and SQLite checkpoints). The index is the session's BiQOG build of the same corpus
(`question_graph_index`), whose questions are QuOTE's: the writer's calls are paid once for both methods."""

from __future__ import annotations

import pytest

from hopgraph import Settings, build_graph
from stores.questions import QUESTIONS, QuestionParams
from tests.conftest import BuiltQuestionGraph
from tests.test_quote import DOCS


@pytest.mark.llm
def test_questions_written_by_the_local_llm_retrieve_the_chunk_that_answers(
    settings: Settings, question_graph_index: BuiltQuestionGraph
) -> None:
    info = question_graph_index.built.manifest.extras[QUESTIONS.name]
    per_chunk = QuestionParams().per_chunk  # each document is one chunk
    print(f"\nquestions: {info}")
    assert info.chunks == info.written == question_graph_index.writer_calls == len(DOCS)
    assert len(DOCS) <= info.questions <= len(DOCS) * per_chunk and info.parse["kept"] == info.questions

    graph = build_graph("quote", settings)
    config = {"configurable": {"thread_id": "quote-e2e"}}
    out = graph.invoke(
        {"question": "In which city was Marie Curie born?"},
        config,
        context={"index": question_graph_index.name},  # the query-time defaults: k 5, M 10
    )
    # every chunk found through its questions, the one that answers first
    assert [item["doc_id"] for item in out["evidence"]] == ["curie.md", "volcano.md", "bread.md"], out[
        "question_hits"
    ]
    assert out["question_hits"][0]["chunk_id"] == "curie.md#0"
    assert "warsaw" in out["answer"].lower(), out["answer"]
    assert graph.get_state(config).values["question_hits"] == out["question_hits"]
