"""QuOTE end to end with the real embedded LLM at its defaults: questions written for a small corpus at index
time (10 for every chunk), then the bridge question answered through them at the query-time defaults (real
Chroma, MiniLM and SQLite checkpoints). The index is the session's BiQOG build of the bridge question's three
paragraphs (`question_graph_index`), whose questions are QuOTE's: the writer's calls are paid once for both
methods."""

from __future__ import annotations

import pytest

from hopgraph import Settings, build_graph
from stores.questions import QUESTIONS, QuestionParams
from tests.conftest import BuiltQuestionGraph
from tests.two_hop import BRIDGE, BRIDGE_ANSWER, BRIDGE_FIRST, BRIDGE_SECOND, BRIDGE_TRIO


@pytest.mark.llm
def test_questions_written_by_the_local_llm_retrieve_the_chunk_that_answers(
    settings: Settings, question_graph_index: BuiltQuestionGraph
) -> None:
    info = question_graph_index.built.manifest.extras[QUESTIONS.name]
    print(f"\nquestions: {info}")
    chunks = len(BRIDGE_TRIO)  # each paragraph is one chunk
    assert info.chunks == info.written == question_graph_index.writer_calls == chunks
    assert chunks <= info.questions <= chunks * QuestionParams().per_chunk
    assert info.parse["kept"] == info.questions

    graph = build_graph("quote", settings)
    config = {"configurable": {"thread_id": "quote-e2e"}}
    out = graph.invoke(
        {"question": BRIDGE}, config, context={"index": question_graph_index.name}
    )  # the query-time defaults: k 5, M 10
    print(f"hits: {out['question_hits']}\nanswer: {out['answer']}")
    # the paragraph naming the hall's designer first, matched through a question the writer wrote for it
    assert out["question_hits"][0]["chunk_id"] == f"{BRIDGE_FIRST}#0"
    # then the museum (its questions next), then the designer's own paragraph, whose questions the bridge
    # question matches least: with k 5 all three are read, in one retrieval (QuOTE does not walk)
    assert [item["doc_id"] for item in out["evidence"]] == [BRIDGE_FIRST, "varnholt-museum", BRIDGE_SECOND]
    assert {item["hop"] for item in out["evidence"]} == {1}
    assert BRIDGE_ANSWER.lower() in out["answer"].lower(), out["answer"]
    assert graph.get_state(config).values["question_hits"] == out["question_hits"]
