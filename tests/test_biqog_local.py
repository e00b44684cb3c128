"""BiQOG end to end with the real embedded LLM: questions written and question-chunk edges judged for a
small corpus at index time, then one question answered by walking the graph at the method's query-time
defaults (real Chroma, MiniLM, the reranker and SQLite checkpoints). The index is smaller than its defaults
(10 questions for every chunk, each judged against 5 chunks): at about 0.7 s a judgement, the defaults'
graph of even this corpus would cost the suite minutes."""

from __future__ import annotations

from pathlib import Path

import pytest

from hopgraph import Settings, build_graph, index_corpus, services_for
from stores.question_graph import QUESTION_GRAPH, QuestionGraphParams
from stores.questions import QUESTIONS, QuestionParams
from tests.test_quote import DOCS, corpus_folder

PER_CHUNK = 3


@pytest.mark.llm
def test_edges_judged_by_the_local_llm_lead_from_seed_questions_to_the_chunk_that_answers(
    settings: Settings, tmp_path: Path
) -> None:
    corpus = corpus_folder(tmp_path, DOCS)
    # questions for the first two documents' chunks only (each document is one chunk), each judged against
    # its own chunk and the one nearest other
    params = {
        QUESTIONS.name: QuestionParams(per_chunk=PER_CHUNK, max_chunks=2),
        QUESTION_GRAPH.name: QuestionGraphParams(candidates=1),
    }
    built = index_corpus(corpus, "biqog-local", settings, method="biqog", extra_params=params)
    info = built.manifest.extras[QUESTION_GRAPH.name]
    spent = services_for(settings).edge_judge.spent
    print(f"\nquestion graph: {info}\njudge calls: {dict(spent)}")
    assert info.pairs == 2 * info.questions == info.judged
    assert spent["calls"] >= info.pairs and sum(info.verdicts.values()) == info.pairs
    assert info.edges >= 1
    # chunk first, question last, calls chunk by chunk: most of every prompt after a chunk's first is reused
    assert spent["cached_tokens"] > 0.5 * spent["prompt_tokens"]

    graph = build_graph("biqog", settings)
    config = {"configurable": {"thread_id": "biqog-e2e"}}
    out = graph.invoke(
        {"question": "In which city was Marie Curie born?"},
        config,
        context={"index": "biqog-local"},  # the query-time defaults: 5 seeds, 2 hops of width 5, k 5
    )
    print(f"seeds: {out['question_hits']}\ntraversal: {out['traversal']}\nanswer: {out['answer']}")
    # the two chunks with questions, both reached by the seeds, the one that answers ranked first; the
    # second hop starts from the kept chunks' other questions and finds nothing new
    assert [item["doc_id"] for item in out["evidence"]] == ["curie.md", "bread.md"], out["traversal"]
    assert [hop["hop"] for hop in out["traversal"]] == [1, 2] and out["traversal"][1]["chunks"] == []
    assert "warsaw" in out["answer"].lower(), out["answer"]
    assert graph.get_state(config).values["traversal"] == out["traversal"]
