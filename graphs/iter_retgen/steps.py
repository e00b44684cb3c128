"""Iterative retrieval-generation (Iter-RetGen, Shao et al. 2023): each iteration retrieves with the question
joined to the previous iteration's generation, then generates from that iteration's passages.

Why the generation is the next query: an answer, even a wrong one, names the entities the question leads
to (the bridge entity of a two-hop question), which the question alone does not, so the next retrieval
can find the passage that the first one missed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langgraph.runtime import Runtime

from graphs.iter_retgen.context import IterRetGenContext
from graphs.iter_retgen.state import IterRetGenState
from nodes.context import context_of
from nodes.generate import Generate
from nodes.llm import LLMGateway
from nodes.state import next_round
from prompts import answer

STOP_ITERATIONS = "iterations"
STOP_CONVERGED = "converged"


def joined_query(question: str, generation: str) -> str:
    """The retrieval query after a generation: the question and the generation, joined (the original's
    concatenation). A generation that names nothing (empty, a blanked echo, or a refusal kept on purpose
    with `unanswerable`) would only add noise words, so the question is searched alone."""
    return question if answer.is_refusal(generation) else f"{question} {generation}"


def iteration_query(state: Mapping[str, Any]) -> str:
    """The current iteration's query: the question, joined with the previous iteration's generation."""
    generations = state.get("generations", [])
    return joined_query(state["question"], generations[-1] if generations else "")


class GenerateIteration:
    """One iteration's generation: an answer from that iteration's passages alone (`gathered`), which are
    then filed in `evidence` at their hop.

    Every generation is a final answer (the shared reader and its refusal handling), so the last one is the
    answer and each earlier one is an answer-shaped query. The iterations end after `iterations`, or
    sooner when the next query would equal this iteration's: retrieval and greedy decoding would then
    repeat this iteration exactly, so every later one would give the same passages and the same answer.
    A generation that gives no answer is recorded in `fallbacks` (the next query is the question alone).
    """

    def __init__(self, llm: LLMGateway) -> None:
        self.read = Generate(llm, passages="gathered")

    def __call__(self, state: IterRetGenState, runtime: Runtime[IterRetGenContext]) -> dict:
        ctx = context_of(runtime.context, IterRetGenContext)
        gathered = state.get("gathered", [])
        done = next_round(state)
        generated = self.read(state, runtime)
        text = generated["answer"]
        update: dict[str, Any] = {
            **generated,
            "evidence": gathered,
            "generations": [text],
            "rounds": done,
            "stats": {"iterations": float(done), "retrieval_rounds": float(done)},
        }
        if done >= ctx.iterations:
            return {**update, "stop": STOP_ITERATIONS}
        if answer.is_refusal(text):
            update["fallbacks"] = [
                f"generate: iteration {done} gave no answer ({generated['answer_outcome']}): "
                "the next iteration searches with the question alone"
            ]
        converged = joined_query(state["question"], text) == iteration_query(state)
        return {**update, "stop": STOP_CONVERGED if converged else ""}
