"""Parallel sub-question branches (`Send`) merge into the parent state without conflicts, whatever order they
finish in: every passage once at the smallest hop that found it, the answers in sub-question order.

Scripted, no LLM and no index: each branch waits a scripted number of supersteps (re-sending itself), so
the branches really do finish in every possible order, then "retrieves" from a fixed table and answers.
"""

from __future__ import annotations

from itertools import permutations
from typing import Any

import pytest
from langgraph.graph import START, StateGraph
from langgraph.types import Command, Send

from graphs.decomposition.state import (
    BranchAnswer,
    BranchedSubQuestionsState,
    SubQuestionBranch,
    merge_by_position,
)
from nodes.state import merge_evidence
from stores.evidence import Evidence

SUB_QUESTIONS = ["Who directed Jaws?", "Where was Spielberg born?", "When was Jaws released?"]
FOUND = {  # what the fake retrieval finds for each sub-question, best first
    SUB_QUESTIONS[0]: ["jaws", "shared"],
    SUB_QUESTIONS[1]: ["spielberg", "shared"],
    SUB_QUESTIONS[2]: ["release", "shared", "jaws"],
}


def fake_retrieval(query: str, hop: int) -> list[Evidence]:
    return [
        Evidence(id=i, doc_id=i, title=i, text=f"text of {i}", score=1.0, char_start=0, char_end=9, hop=hop)
        for i in FOUND[query]
    ]


class ScriptedBranch(SubQuestionBranch):
    """The branch payload plus how many supersteps the branch waits before it answers."""

    wait: int


def fan_out_graph(finishing_order: tuple[int, ...]) -> Any:
    """plan -> one branch per sub-question; the branch at finishing_order[0] finishes first, and so on."""
    waits = {position: rank for rank, position in enumerate(finishing_order)}

    def plan(state: BranchedSubQuestionsState) -> dict[str, Any]:
        return {"sub_questions": SUB_QUESTIONS}

    def fan_out(state: BranchedSubQuestionsState) -> list[Send]:
        return [
            Send("branch", ScriptedBranch(sub_question=sub, position=position, wait=waits[position]))
            for position, sub in enumerate(state["sub_questions"], start=1)
        ]

    def branch(state: ScriptedBranch) -> dict[str, Any] | Command:
        if state["wait"]:
            return Command(goto=Send("branch", {**state, "wait": state["wait"] - 1}))
        sub, position = state["sub_question"], state["position"]
        answer = BranchAnswer(
            asked=sub, question=sub, answer=f"answer {position}", answered=True, position=position
        )
        return {"evidence": fake_retrieval(sub, hop=position), "solved": [answer]}

    graph = StateGraph(BranchedSubQuestionsState)
    graph.add_node("plan", plan)
    graph.add_node("branch", branch)
    graph.add_edge(START, "plan")
    graph.add_conditional_edges("plan", fan_out, ["branch"])
    return graph.compile()


@pytest.mark.parametrize("finishing_order", list(permutations([1, 2, 3])))
def test_branch_results_merge_the_same_whichever_branch_finishes_first(
    finishing_order: tuple[int, ...],
) -> None:
    question = {"question": "Who directed Jaws, where was he born, and when was it released?"}
    finished: list[int] = []
    final: dict[str, Any] = {}
    for mode, chunk in fan_out_graph(finishing_order).stream(question, stream_mode=["updates", "values"]):
        if mode == "values":
            final = chunk
            continue
        for update in chunk.values():
            finished += [answer["position"] for answer in (update or {}).get("solved", [])]
    assert tuple(finished) == finishing_order  # the script really did reorder completion

    hops = {item["id"]: item["hop"] for item in final["evidence"]}
    assert hops == {"jaws": 1, "shared": 1, "spielberg": 2, "release": 3}  # a duplicate at its smallest hop
    assert [item["id"] for item in final["evidence"]] == ["jaws", "shared", "spielberg", "release"]
    assert [(a["position"], a["question"], a["answer"]) for a in final["solved"]] == [
        (position, sub, f"answer {position}") for position, sub in enumerate(SUB_QUESTIONS, start=1)
    ]


def test_evidence_added_round_after_round_is_appended_and_the_first_copy_kept() -> None:
    """What sequential methods (NaiveRAG, ChainRAG, iterative retrieval) always got from the reducer."""
    first = fake_retrieval(SUB_QUESTIONS[0], hop=1)
    second = fake_retrieval(SUB_QUESTIONS[2], hop=2)
    merged = merge_evidence(merge_evidence([], first), second)
    assert [(item["id"], item["hop"]) for item in merged] == [("jaws", 1), ("shared", 1), ("release", 2)]
    assert merged[0] is first[0] and merged[1] is first[1]


def test_an_answer_reported_again_for_a_position_replaces_the_older_one() -> None:
    def answer(position: int, text: str) -> BranchAnswer:
        return BranchAnswer(asked="q", question="q", answer=text, answered=True, position=position)

    merged = merge_by_position([answer(2, "old"), answer(1, "one")], [answer(2, "new")])
    assert [(a["position"], a["answer"]) for a in merged] == [(1, "one"), (2, "new")]
