"""ReSP's steps (paper 001 §4): the dual-function summarizer, the reasoner's judge and planner, and the
generator that answers from the memories.

Retrieval is the shared `Retrieve` node; these nodes know ReSP's context and state, not its graph. Roles,
each its own `[roles.NAME]` model (the paper's Table 4 varies them): `summarizer` (both summaries),
`reasoner` (judge and plan), `generator` (the final answer).
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import BaseMessage
from langgraph.runtime import Runtime

from graphs.resp.context import ReSPContext
from graphs.resp.state import ReSPState
from nodes.context import context_of
from nodes.generate import Generate, final_answer
from nodes.judge import JudgeSufficiency
from nodes.llm import LLMGateway
from nodes.state import LLMUsage, next_round
from prompts import answer, reader, resp_generator, resp_reasoner, resp_summarizer
from prompts.resp_reasoner import PathwayStep
from prompts.structured import UNREAD
from stores.evidence import Evidence

# The judge's verdict is its first word: a few tokens hold it, and the rest would only cost time.
JUDGE_TOKENS = 8

STOP_CAP = "cap"
STOP_REPEAT = "repeat"
STOP_NO_PLAN = "no_plan"


def words(texts: list[str]) -> int:
    return sum(len(text.split()) for text in texts)


def known(state: ReSPState) -> str:
    """The state's two memory queues as the reasoner and the generator read them."""
    return resp_reasoner.known_information(state.get("global_memory", []), state.get("local_memory", []))


def searched(state: ReSPState) -> list[str]:
    """Every sub-question searched so far: the question (round 1), then each planned one, in order."""
    return [state["question"], *(step["sub_question"] for step in state.get("local_memory", []))]


class Summarize:
    """The dual-function summarizer over the round's passages (`gathered`), role "summarizer".

    Two calls: the global evidence for the overarching question, appended to `global_memory`; and, from
    round 2 on, the local pathway for the current sub-question ("Yes" and its answer, or "No"), appended
    with the sub-question to `local_memory`. Round 1 makes no local call: its sub-question is the question
    itself (§4.2). The local call reads the round's passages, as §4.1 says, or the memory queues (this
    round's global evidence included), as Table 1's prompt shows, by `local_pathway_reads`.

    The round's passages are filed into `evidence` at hop = the round, and `rounds` advances. Defined
    outcomes, recorded in `fallbacks`: an unusable global summary (empty, blanked as a repeated echo of the
    prompt, nothing left after cleaning) adds nothing to the global memory; a repetitive or cut-off one is
    cleaned (`prompts.resp_summarizer.global_evidence`); a local reply with no clear Yes / No, or a Yes with
    no answer or a refusal, is filed as not answered (the sub-question stays in the pathway, so the planner
    knows it was searched).

    Stats: `iterations` (rounds so far) and `retrieved_words` (words of every passage the summarizer read,
    each round counted: the text the memories compress).
    """

    def __init__(self, llm: LLMGateway, nlp: Any) -> None:
        self.llm = llm
        self.nlp = nlp

    def __call__(self, state: ReSPState, runtime: Runtime[ReSPContext]) -> dict:
        ctx = context_of(runtime.context, ReSPContext)
        question, passages = state["question"], state.get("gathered", [])
        round_ = next_round(state)
        reply = self.llm.complete(
            "summarizer",
            resp_summarizer.global_messages(passages, question),
            max_tokens=ctx.step_tokens,
            stop=[resp_summarizer.END_MARK],
            guard=resp_summarizer.GLOBAL_GUARD,
        )
        hit_cap = reply.usage["completion_tokens"] >= ctx.step_tokens
        summary, notes = resp_summarizer.global_evidence(reply.text, self.nlp, hit_cap=hit_cap)
        if not summary:
            why = "the reply repeated the prompt's own text twice" if reply.usage["echoes"] > 1 else "empty"
            notes.append(f"{why}: nothing added to the global evidence memory")
        fallbacks = [f"summarize: global evidence of round {round_}: {note}" for note in notes]
        global_memory = [summary] if summary else []
        update: dict[str, Any] = {
            "global_memory": global_memory,
            "evidence": passages,
            "rounds": round_,
            "usage": [reply.usage],
        }
        sub_question = state.get("sub_question", "")
        if round_ > 1 and sub_question:
            step, usage, note = self._local_pathway(state, ctx, passages, sub_question, global_memory)
            update["local_memory"] = [step]
            update["usage"].append(usage)
            fallbacks += [f"summarize: local pathway of round {round_}: {note}"] if note else []
        retrieved = state.get("stats", {}).get("retrieved_words", 0.0) + words([p["text"] for p in passages])
        update["stats"] = {
            "iterations": float(round_),
            "retrieval_rounds": float(round_),
            "retrieved_words": float(retrieved),
        }
        return {**update, "fallbacks": fallbacks}

    def _local_pathway(
        self,
        state: ReSPState,
        ctx: ReSPContext,
        passages: list[Evidence],
        sub_question: str,
        new_evidence: list[str],
    ) -> tuple[PathwayStep, LLMUsage, str]:
        """(the pathway entry, the call's usage, a fallback note or "")."""
        memories = None
        if ctx.local_pathway_reads == "memories":
            memories = resp_reasoner.known_information(
                [*state.get("global_memory", []), *new_evidence], state.get("local_memory", [])
            )
        reply = self.llm.complete(
            "summarizer",
            resp_summarizer.local_messages(passages, sub_question, memories),
            max_tokens=ctx.step_tokens,
            guard=resp_summarizer.LOCAL_GUARD,
        )
        said, rest = reader.verdict_and_rest(reply.text)
        text = answer.clean(rest) if said else ""
        note = ""
        if said is None:
            note = f"no Yes/No in {reply.text.strip()[:60]!r}: filed as not answered"
        elif said and answer.is_refusal(text):
            note = f"Yes with no answer in {reply.text.strip()[:60]!r}: filed as not answered"
            text = ""
        step = PathwayStep(sub_question=sub_question, answer=text, answered=bool(text))
        return step, reply.usage, note


class JudgeMemories(JudgeSufficiency):
    """The reasoner's judge over both memory queues (Table 1 "Judge"), role "reasoner": the shared
    sufficiency judge, whose Yes ends the loop (`stop` = "sufficient"). After the last allowed round it is
    not asked: whatever it said, the generator answers next (the paper goes to the final answer after its
    third round), so `stop` = "cap" without a call. A reply with no clear Yes / No counts as No, recorded:
    another round costs less than answering early, and the iteration cap still ends the loop."""

    def __init__(self, llm: LLMGateway) -> None:
        super().__init__(llm, "reasoner", judge_messages, max_tokens=JUDGE_TOKENS, guard=resp_reasoner.GUARD)

    def __call__(self, state: ReSPState, runtime: Runtime[ReSPContext]) -> dict:  # type: ignore[override]
        ctx = context_of(runtime.context, ReSPContext)
        if state.get("rounds", 0) >= max(1, ctx.max_iterations):
            return {"stop": STOP_CAP}
        return super().__call__(state)


def judge_messages(state: ReSPState) -> list[BaseMessage]:
    return resp_reasoner.judge_messages(known(state), state["question"])


class PlanNext:
    """The reasoner's planner (Table 1 "Plan"), role "reasoner": one new sub-question for the next round.

    The prompt asks for a question not yet searched; the node enforces it: a plan that repeats any earlier
    sub-question (the question itself included, compared as lower-cased words) is asked again once, the
    repeat named, and a second repeat ends the loop (`stop` = "repeat"): searching it again would find the
    same passages. An empty plan (nothing after cleaning, only Yes / No, or blanked as a repeated echo)
    ends the loop too (`stop` = "no_plan"), since greedy decoding would give it again. Either way the
    generator answers from the memories so far; each case is recorded in `fallbacks`.
    """

    def __init__(self, llm: LLMGateway) -> None:
        self.llm = llm

    def __call__(self, state: ReSPState, runtime: Runtime[ReSPContext]) -> dict:
        ctx = context_of(runtime.context, ReSPContext)
        messages = resp_reasoner.plan_messages(known(state), state["question"])
        reply = self.llm.complete(
            "reasoner",
            messages,
            max_tokens=ctx.step_tokens,
            guard=resp_reasoner.GUARD,
            shape=resp_reasoner.PLAN_REPLY,
        )
        usage, plan = [reply.usage], resp_reasoner.parse_plan(reply.text, reply.structured)
        fallbacks = [f"plan: {UNREAD}"] if reply.unread() else []
        if plan and resp_reasoner.is_repeat(plan, searched(state)):
            fallbacks.append(f"plan: {plan!r} was searched already: asked again, naming it")
            again = self.llm.complete(
                "reasoner",
                resp_reasoner.replan_messages(messages, reply.text, plan),
                max_tokens=ctx.step_tokens,
                guard=resp_reasoner.GUARD,
                shape=resp_reasoner.PLAN_REPLY,
            )
            usage.append(again.usage)
            plan = resp_reasoner.parse_plan(again.text, again.structured)
            fallbacks += [f"plan: asked again: {UNREAD}"] if again.unread() else []
            if plan and resp_reasoner.is_repeat(plan, searched(state)):
                ending = "the generator answers from the memories"
                fallbacks.append(f"plan: the new plan {plan!r} was searched already too: {ending}")
                return {"stop": STOP_REPEAT, "usage": usage, "fallbacks": fallbacks}
        if not plan:
            ending = "the generator answers from the memories"
            fallbacks.append(f"plan: no usable sub-question in the reply: {ending}")
            return {"stop": STOP_NO_PLAN, "usage": usage, "fallbacks": fallbacks}
        return {"sub_question": plan, "usage": usage, "fallbacks": fallbacks}


class AnswerFromMemories:
    """The generator (Table 1 "Response Generation"), role "generator": the final answer from the two memory
    queues, with the shared refusal handling (`nodes.generate.final_answer`).

    When both memories are empty (every summary was unusable) there is nothing to read, so the shared reader
    answers from the retrieved passages instead, recorded in `fallbacks`. Stats: `memory_words` (words of
    memory the generator read) and `compression_ratio` (`retrieved_words` / `memory_words`; the paper
    reports 5.88 on HotpotQA), left out when the generator read no memory.
    """

    def __init__(self, llm: LLMGateway) -> None:
        self.llm = llm
        self.read_passages = Generate(llm)  # the shared reader, for memories with nothing in them

    def __call__(self, state: ReSPState, runtime: Runtime[ReSPContext]) -> dict:
        ctx = context_of(runtime.context, ReSPContext)
        question = state["question"]
        global_memory, local_memory = state.get("global_memory", []), state.get("local_memory", [])
        if not global_memory and not any(step["answered"] for step in local_memory):
            direct = self.read_passages(state, runtime)
            passages = len(state.get("evidence", []))
            note = f"no evidence in the memories: answered from the {passages} retrieved passages"
            return {**direct, "fallbacks": [f"generate: {note}"], "stats": {"memory_words": 0.0}}
        result = final_answer(
            self.llm,
            question,
            resp_generator.messages(known(state), question, unanswerable=ctx.unanswerable),
            max_tokens=ctx.max_answer_tokens,
            guard=resp_generator.GUARD,
            has_evidence=True,
            unanswerable=ctx.unanswerable,
            check_refusal=ctx.refusal_check,
            passages=state.get("evidence", []),
        )
        memory = words([*global_memory, *(f"{s['sub_question']} {s['answer']}" for s in local_memory)])
        stats = {"memory_words": float(memory)}
        retrieved = state.get("stats", {}).get("retrieved_words", 0.0)
        if memory:
            stats["compression_ratio"] = round(retrieved / memory, 4)
        return {**result, "stats": stats}
