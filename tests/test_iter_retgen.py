"""Iter-RetGen over real retrieval (the sample index: real BM25, Chroma, MiniLM) with a scripted chat model in
place of the LLM: each iteration's query carries the previous generation, each generation reads that
iteration's passages alone, the evidence keeps every passage at the first iteration that found it, and
the iterations end at T or at a fixed point. The scripted model tests how the graph uses the LLM, never
what an LLM would answer."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from graphs import iter_retgen, naive
from graphs.iter_retgen.context import IterRetGenContext
from nodes.retrieve import search_evidence
from prompts import answer
from stores.evidence import Evidence
from tests.scripted import ScriptedChatModel, ScriptedServices, scripted_gateway
from tests.test_naive_local import QUESTION


class RecordingIndexes:
    """The real indexes, with every text query that reaches `search` recorded in order."""

    def __init__(self, indexes: Any) -> None:
        self.indexes = indexes
        self.queries: list[str] = []

    def open(self, name: str) -> Any:
        index = self.indexes.open(name)
        recorder = self

        class Recording:
            def __getattr__(self, attr: str) -> Any:
                return getattr(index, attr)

            def search(self, query: str, *args: Any, **kwargs: Any) -> Any:
                recorder.queries.append(query)
                return index.search(query, *args, **kwargs)

        return Recording()


def in_turn(replies: Iterable[str]) -> Callable[[str], str]:
    """The generator's replies in order, one per call (a refusal's nudge is a call too)."""
    remaining = iter(replies)
    return lambda _prompt: next(remaining)


def run(
    services: Any, reply: Callable[[str], str], **context: Any
) -> tuple[list[str], dict[str, Any], ScriptedChatModel, RecordingIndexes]:
    """(nodes in the order they ran, the final state, the scripted model, the recorded queries)."""
    llm, model = scripted_gateway(reply)
    indexes = RecordingIndexes(services.indexes)
    graph = iter_retgen.build(ScriptedServices(services, llm, indexes=indexes)).compile()
    steps: list[str] = []
    values: dict[str, Any] = {}
    for mode, chunk in graph.stream(
        {"question": QUESTION},
        context=IterRetGenContext(**{"index": "sample", **context}),
        stream_mode=["updates", "values"],
    ):
        if mode == "updates":
            steps.extend(chunk)
        else:
            values = chunk
    return steps, values, model, indexes


def rendered(question: str, passages: list[Evidence], **kwargs: Any) -> str:
    return "\n".join(str(m.content) for m in answer.messages(question, passages, **kwargs))


def test_each_iteration_searches_with_the_previous_generation_and_reads_only_its_own_passages(
    services: Any, sample_index: str
) -> None:
    generations = ["Tesla Cybertruck", "Elon Musk", "Cybertruck"]
    steps, final, model, indexes = run(services, in_turn(generations), top_k=3)

    assert steps == ["retrieve", "generate"] * 3
    queries = [QUESTION, f"{QUESTION} Tesla Cybertruck", f"{QUESTION} Elon Musk"]
    assert indexes.queries == queries
    # iteration i's generation read iteration i's top-3 alone, in rank order, with the shared reader's prompt
    index = services.indexes.open(sample_index)
    found = [search_evidence(index, query, 3, hop) for hop, query in enumerate(queries, start=1)]
    assert model.prompts == [rendered(QUESTION, passages) for passages in found]
    assert final["gathered"] == found[-1]  # the last iteration's own passages, at its hop

    # evidence: every passage once, at the first iteration that found it, iterations in order
    first_hop: dict[str, int] = {}
    for passages in found:
        for item in passages:
            first_hop.setdefault(item["id"], item["hop"])
    assert [(item["id"], item["hop"]) for item in final["evidence"]] == list(first_hop.items())
    assert final["generations"] == generations and final["answer"] == "Cybertruck"
    assert final["rounds"] == 3 and final["stop"] == "iterations" and final["stats"]["iterations"] == 3.0
    assert final["answer_outcome"] == "answered" and not final.get("fallbacks")
    assert [usage["node"] for usage in final["usage"]] == ["generate"] * 3


def test_one_iteration_is_naive_rag(services: Any, sample_index: str) -> None:
    steps, final, model, _ = run(services, in_turn(["Cybertruck"]), iterations=1)
    naive_llm, naive_model = scripted_gateway(lambda _prompt: "Cybertruck")
    naive_final = (
        naive.build(ScriptedServices(services, naive_llm))
        .compile()
        .invoke({"question": QUESTION}, context={"index": sample_index})
    )
    assert steps == ["retrieve", "generate"] and final["stop"] == "iterations"
    assert model.prompts == naive_model.prompts
    assert [item["id"] for item in final["evidence"]] == [item["id"] for item in naive_final["evidence"]]


def test_a_generation_repeating_the_previous_one_ends_the_iterations_at_their_fixed_point(
    services: Any, sample_index: str
) -> None:
    steps, final, model, indexes = run(services, in_turn(["Cybertruck", "Cybertruck"]), iterations=5)
    # iteration 3 would search with the same query as iteration 2, read the same passages, say the same
    assert steps == ["retrieve", "generate"] * 2 and len(model.prompts) == 2
    assert indexes.queries == [QUESTION, f"{QUESTION} Cybertruck"]
    assert final["stop"] == "converged" and final["rounds"] == 2 and final["stats"]["iterations"] == 2.0
    assert final["answer"] == "Cybertruck"


def test_a_generation_with_no_answer_leaves_the_question_alone_as_the_next_query(
    services: Any, sample_index: str
) -> None:
    # iteration 2 refuses, and refuses again when nudged for its best answer: the answer is empty
    replies = ["Tesla Cybertruck", "Insufficient information.", "Unknown", "Cybertruck"]
    _, final, model, indexes = run(services, in_turn(replies))
    assert indexes.queries == [QUESTION, f"{QUESTION} Tesla Cybertruck", QUESTION]
    assert final["generations"] == ["Tesla Cybertruck", "", "Cybertruck"]
    assert answer.REFUSAL_NUDGE in model.prompts[2]  # the refusal was asked once more, as every reader does
    assert final["fallbacks"] == [
        "generate: iteration 2 gave no answer (refused): the next iteration searches with the question alone"
    ]
    assert final["answer"] == "Cybertruck" and final["stop"] == "iterations"


def test_a_first_iteration_with_no_answer_is_already_the_fixed_point(
    services: Any, sample_index: str
) -> None:
    # the next query would be the question alone again: the same passages, the same refusal
    steps, final, _, indexes = run(services, in_turn(["Insufficient information.", "Unknown"]))
    assert steps == ["retrieve", "generate"] and indexes.queries == [QUESTION]
    assert final["stop"] == "converged" and final["answer"] == "" and final["answer_outcome"] == "refused"
    assert len(final["fallbacks"]) == 1


def test_a_refusal_kept_on_purpose_is_not_searched_with(services: Any, sample_index: str) -> None:
    replies = ["Tesla Cybertruck", "Insufficient information.", "Insufficient information."]
    _, final, model, indexes = run(services, in_turn(replies), unanswerable=True, refusal_check=False)
    assert indexes.queries == [QUESTION, f"{QUESTION} Tesla Cybertruck", QUESTION]
    assert answer.UNANSWERABLE_INSTRUCTION in model.prompts[0]
    assert final["answer"] == "Insufficient information" and final["answer_outcome"] == "unanswerable"
