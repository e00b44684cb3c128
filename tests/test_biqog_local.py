"""BiQOG end to end with the real embedded LLM at its defaults: questions written (10 for every chunk) and
question-chunk edges judged (each question against its own chunk and up to 4 others) for a small corpus at
index time, then one question answered by walking the graph at the query-time defaults (real Chroma, MiniLM,
the reranker and SQLite checkpoints). The corpus is three one-chunk documents (`question_graph_index`,
shared with QuOTE's test), so each question is judged against all three chunks: about 80 judgements at
0.4-0.7 s each. A fourth document would add 10 questions and a judgement to every question."""

from __future__ import annotations

import pytest

from hopgraph import Settings, build_graph
from stores.question_graph import QUESTION_GRAPH
from tests.conftest import BuiltQuestionGraph
from tests.test_quote import DOCS


@pytest.mark.llm
def test_edges_judged_by_the_local_llm_lead_from_seed_questions_to_the_chunk_that_answers(
    settings: Settings, question_graph_index: BuiltQuestionGraph
) -> None:
    info = question_graph_index.built.manifest.extras[QUESTION_GRAPH.name]
    spent = question_graph_index.judge_spent
    print(f"\nquestion graph: {info}\njudge calls: {spent}")
    # the default 4 candidates, of which this corpus has 2 besides a question's own chunk
    assert info.pairs == len(DOCS) * info.questions == info.judged
    assert spent["calls"] >= info.pairs and sum(info.verdicts.values()) == info.pairs
    assert info.edges >= 1
    # chunk first, question last, calls chunk by chunk: most of every prompt after a chunk's first is reused
    assert spent["cached_tokens"] > 0.5 * spent["prompt_tokens"]

    graph = build_graph("biqog", settings)
    config = {"configurable": {"thread_id": "biqog-e2e"}}
    out = graph.invoke(
        {"question": "In which city was Marie Curie born?"},
        config,
        context={
            "index": question_graph_index.name
        },  # the query-time defaults: 5 seeds, 2 hops of width 5, k 5
    )
    print(f"seeds: {out['question_hits']}\ntraversal: {out['traversal']}\nanswer: {out['answer']}")
    # the seeds are all the answering chunk's questions, the one chunk kept; the second hop starts from its
    # other questions and finds no chunk the first did not
    assert [item["doc_id"] for item in out["evidence"]] == ["curie.md"], out["traversal"]
    assert [hop["hop"] for hop in out["traversal"]] == [1, 2] and out["traversal"][1]["chunks"] == []
    assert "warsaw" in out["answer"].lower(), out["answer"]
    assert graph.get_state(config).values["traversal"] == out["traversal"]
