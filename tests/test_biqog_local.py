"""BiQOG end to end with the real embedded LLM at its defaults: questions written (10 for every chunk) and
question-chunk edges judged (each question against its own chunk and up to 4 others) at index time, then the
bridge question answered by walking the graph at the query-time defaults (real Chroma, MiniLM, the reranker
and SQLite checkpoints). The corpus is the bridge question's three paragraphs (`question_graph_index`,
shared with QuOTE's test), so each question is judged against all three chunks: about 70 judgements at
0.3-0.7 s each. A fourth paragraph would add 10 questions and a judgement to every question."""

from __future__ import annotations

import pytest

from hopgraph import Settings, build_graph
from stores.question_graph import QUESTION_GRAPH
from tests.conftest import BuiltQuestionGraph
from tests.two_hop import BRIDGE, BRIDGE_ANSWER, BRIDGE_FIRST, BRIDGE_SECOND, BRIDGE_TRIO, bridge_hops


@pytest.mark.llm
def test_the_walk_reaches_the_second_paragraph_through_questions_the_local_llm_linked(
    settings: Settings, question_graph_index: BuiltQuestionGraph
) -> None:
    info = question_graph_index.built.manifest.extras[QUESTION_GRAPH.name]
    spent = question_graph_index.judge_spent
    print(f"\nquestion graph: {info}\njudge calls: {spent}")
    # the default 4 candidates, of which this corpus has 2 besides a question's own chunk
    assert info.pairs == len(BRIDGE_TRIO) * info.questions == info.judged
    assert spent["calls"] >= info.pairs and sum(info.verdicts.values()) == info.pairs
    # chunk first, question last, calls chunk by chunk: most of every prompt after a chunk's first is reused
    assert spent["cached_tokens"] > 0.5 * spent["prompt_tokens"]

    graph = build_graph("biqog", settings)
    config = {"configurable": {"thread_id": "biqog-e2e"}}
    out = graph.invoke(
        {"question": BRIDGE}, config, context={"index": question_graph_index.name}
    )  # the query-time defaults: 5 seeds, 2 hops of width 5, k 5
    print(f"seeds: {out['question_hits']}\ntraversal: {out['traversal']}\nanswer: {out['answer']}")
    # every seed is a question of the paragraph naming the designer; her own paragraph, which answers, is
    # reached only at the second hop, through a question of a chunk the first hop kept
    assert {hit["chunk_id"] for hit in out["question_hits"]} == {f"{BRIDGE_FIRST}#0"}
    assert bridge_hops(out["evidence"]) == ({1}, {2})
    assert [hop["kept"] for hop in out["traversal"]] == [
        [f"{BRIDGE_FIRST}#0", "varnholt-museum#0"],
        [f"{BRIDGE_SECOND}#0"],
    ]
    assert BRIDGE_ANSWER.lower() in out["answer"].lower(), out["answer"]
    assert graph.get_state(config).values["traversal"] == out["traversal"]
