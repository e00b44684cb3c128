"""Iterative retrieval-generation (Iter-RetGen, Shao et al. 2023): each iteration retrieves with the question
joined to the previous iteration's generation, then writes a chain of thought over that iteration's
passages; the direct reader answers from the last iteration's passages (with `reader = "cot"` the answer
is read from the last chain, as the original does).

Why the whole generation is the next query: a chain of thought names the entities the question leads to
(the bridge entity of a two-hop question, "Flyboys stars James Franco"), even when its answer is wrong or
missing, so the next retrieval can find the passage the first one missed. A short answer names at most
the answer; the reasoning names the steps to it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from langgraph.runtime import Runtime

from graphs.iter_retgen.context import IterRetGenContext
from graphs.iter_retgen.state import IterRetGenState
from nodes.chain_of_thought import Chain, ChainOfThoughtReader
from nodes.context import context_of
from nodes.generate import read_passages
from nodes.llm import LLMGateway
from nodes.state import next_round
from stores.evidence import Evidence

STOP_ITERATIONS = "iterations"
STOP_CONVERGED = "converged"


def joined_query(question: str, generation: str) -> str:
    """The retrieval query after a generation: the question and the whole generation, joined (the
    original's concatenation). An empty generation (an empty reply, or one blanked as an echo) leaves the
    question alone."""
    return f"{question} {generation}" if generation.strip() else question


def iteration_query(state: Mapping[str, Any]) -> str:
    """The current iteration's query: the question, joined with the previous iteration's generation."""
    generations = state.get("generations", [])
    return joined_query(state["question"], generations[-1] if generations else "")


class GenerateIteration:
    """One iteration's generation: a chain of thought over that iteration's passages alone (`gathered`),
    which are then filed in `evidence` at their hop; the chain joins `generations`, and the ids it read
    are `read`.

    The iterations end after `iterations`, or sooner when the next query would equal this iteration's:
    retrieval and greedy decoding would then repeat this iteration exactly, so every later one would give
    the same passages and the same chain. The last chain gives the answer (`ChainOfThoughtReader.answer`:
    what follows "answer is", cut to its span; a chain with none is answered by the direct reader, its
    refusal handling included, recorded in `fallbacks`); with `reader = "direct"` the direct reader
    answers from the last iteration's passages, and the T-th iteration writes no chain. An earlier chain
    is only a query: its answer is not read, and an empty one, recorded in `fallbacks`, leaves the
    question alone as the next query.
    """

    def __init__(self, llm: LLMGateway, nlp: Any) -> None:
        self.reader = ChainOfThoughtReader(llm, nlp)

    def __call__(self, state: IterRetGenState, runtime: Runtime[IterRetGenContext]) -> dict:
        ctx = context_of(runtime.context, IterRetGenContext)
        question, gathered = state["question"], state.get("gathered", [])
        done = next_round(state)
        update: dict[str, Any] = {
            "evidence": gathered,
            "read": [item["id"] for item in gathered],
            "rounds": done,
            "stats": {"iterations": float(done), "retrieval_rounds": float(done)},
        }
        if done >= ctx.iterations and ctx.reader == "direct":
            # the last generation is the direct reader's answer: a chain here would be no one's query
            return {**update, **self.final(question, gathered, ctx, None), "stop": STOP_ITERATIONS}
        chain = self.reader.write(question, gathered, ctx)
        update["generations"] = [chain.text]
        converged = joined_query(question, chain.text) == iteration_query(state)
        if done >= ctx.iterations or converged:
            stop = STOP_ITERATIONS if done >= ctx.iterations else STOP_CONVERGED
            return {**update, **self.final(question, gathered, ctx, chain), "stop": stop}
        update["usage"] = [chain.reply.usage]
        if not chain.text:
            update["fallbacks"] = [
                f"generate: iteration {done} wrote no chain of thought (an empty reply, or an echo of the "
                "prompt blanked): the next iteration searches with the question alone"
            ]
        return {**update, "stop": ""}

    def final(
        self, question: str, gathered: Sequence[Evidence], ctx: IterRetGenContext, chain: Chain | None
    ) -> dict:
        """The last iteration's answer: with `reader = "cot"` read from its `chain`; else the direct reader's
        over its passages, the usage holding the chain's call when one was written (a fixed point's)."""
        if ctx.reader == "cot" and chain is not None:
            return self.reader.answer(question, gathered, ctx, chain)
        direct = read_passages(self.reader.llm, question, gathered, ctx)
        written = [chain.reply.usage] if chain is not None else []
        return {**direct, "usage": [*written, *direct["usage"]]}
