"""Iter-RetGen over real retrieval (the sample index: real BM25, Chroma, MiniLM, spaCy) with a scripted chat
model in place of the LLM: each iteration writes a chain of thought over that iteration's passages alone,
the next query is the question joined to the whole chain, the answer is by default the direct reader's over
the last iteration's passages (which no chain then reads) and with `reader="cot"` is read from the last
chain (cut to its span, the direct reader's when the chain gives none, refusals as `unanswerable` and
`refusal_check` say), the evidence keeps every passage at the first iteration that found it, the
iterations end at T or at a fixed point, and retrieval is dense by default. The scripted model tests how
the graph uses the LLM, never what an LLM would answer."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

from benchmarks import refusal_check as refusal_check_benchmark
from graphs import iter_retgen
from graphs.iter_retgen.context import IterRetGenContext
from nodes.retrieve import search_evidence
from prompts import answer, demonstrations, ircot, refusal_check
from stores.evidence import Evidence
from tests.scripted import ScriptedChatModel, ScriptedServices, scripted_gateway, stream_run
from tests.test_naive_local import QUESTION

NO_ANSWER = 'cot reader: no "answer is" in the chain of thought; answered by the direct reader'


class RecordingIndexes:
    """The real indexes, with every text query that reaches `search` recorded in order, and its mode."""

    def __init__(self, indexes: Any) -> None:
        self.indexes = indexes
        self.queries: list[str] = []
        self.modes: list[str] = []

    def open(self, name: str) -> Any:
        index = self.indexes.open(name)
        recorder = self

        class Recording:
            def __getattr__(self, attr: str) -> Any:
                return getattr(index, attr)

            def search(self, query: str, *args: Any, mode: str, **kwargs: Any) -> Any:
                recorder.queries.append(query)
                recorder.modes.append(mode)
                return index.search(query, *args, mode=mode, **kwargs)

        return Recording()


def scripted(
    chains: Iterable[str], direct: str = "Cybertruck", span: str = "Cybertruck"
) -> Callable[[str], str]:
    """Each chain-of-thought prompt gets the next of `chains`; the direct reader's prompt gets `direct` (its
    nudge after a refusal too); a request for the span inside a long answer gets `span`."""
    remaining = iter(chains)

    def reply(prompt: str) -> str:
        if prompt.endswith(f"{answer.SHORTEN}\n{answer.CUE}"):
            return span
        if prompt.startswith(ircot.SYSTEM):
            return next(remaining)
        return direct

    return reply


def run(
    services: Any, reply: Callable[[str], str], **context: Any
) -> tuple[list[str], dict[str, Any], ScriptedChatModel, RecordingIndexes]:
    """(nodes in the order they ran, the final state, the scripted model, the recorded searches). The
    context is passed as a plain dict, as Studio and the CLI pass it: the method's defaults fill the rest."""
    llm, model = scripted_gateway(reply)
    indexes = RecordingIndexes(services.indexes)
    graph = iter_retgen.build(ScriptedServices(services, llm, indexes=indexes)).compile()
    steps, values = stream_run(graph, QUESTION, {"index": "sample", **context})
    return steps, values, model, indexes


def chain_prompt(question: str, passages: list[Evidence]) -> str:
    """The chain-of-thought reader's prompt at the defaults (two worked examples, 350 words a passage)."""
    asked = ircot.messages(question, passages, [], demonstrations.select(2), paragraph_words=350)
    return "\n".join(str(m.content) for m in asked)


def direct_prompt(question: str, passages: list[Evidence], **kwargs: Any) -> str:
    return "\n".join(str(m.content) for m in answer.messages(question, passages, **kwargs))


CHAINS = [
    "TechCrunch wrote about Tesla's Cybertruck. So the answer is: Tesla.",
    "Elon Musk says the Cybertruck is safe for pedestrians. So the answer is: Elon Musk.",
    "TechCrunch called the future of the Cybertruck uncertain. So the answer is: Cybertruck.",
]


def test_each_iteration_searches_with_the_question_and_the_whole_previous_chain_and_reads_its_own_passages(
    services: Any, sample_index: str
) -> None:
    steps, final, model, indexes = run(services, scripted(CHAINS), top_k=3, reader="cot")

    assert steps == ["retrieve", "generate"] * 3
    # the whole chain, reasoning and its answer sentence, joined to the question: not only its answer
    queries = [QUESTION, f"{QUESTION} {CHAINS[0]}", f"{QUESTION} {CHAINS[1]}"]
    assert indexes.queries == queries
    # iteration i's chain read iteration i's top-3 alone, in rank order
    index = services.indexes.open(sample_index)
    found = [search_evidence(index, q, 3, hop, mode="dense") for hop, q in enumerate(queries, start=1)]
    assert model.prompts == [chain_prompt(QUESTION, passages) for passages in found]
    assert final["gathered"] == found[-1] and final["read"] == [item["id"] for item in found[-1]]

    # evidence: every passage once, at the first iteration that found it, iterations in order
    first_hop: dict[str, int] = {}
    for passages in found:
        for item in passages:
            first_hop.setdefault(item["id"], item["hop"])
    assert [(item["id"], item["hop"]) for item in final["evidence"]] == list(first_hop.items())
    # every chain is recorded; the answer is read from the last one alone
    assert final["generations"] == CHAINS and final["answer"] == "Cybertruck"
    assert final["answer_outcome"] == "answered" and not final.get("fallbacks")
    assert final["rounds"] == 3 and final["stop"] == "iterations" and final["stats"]["iterations"] == 3.0
    assert [(u["node"], u["role"]) for u in final["usage"]] == [("generate", "generator")] * 3


def test_a_chain_is_recorded_whole_on_one_line_without_the_prompt_layout_it_ran_into(
    services: Any, sample_index: str
) -> None:
    chains = ["A: Tesla builds it.\nIt is a pickup.\nQ: What else?", CHAINS[2]]
    _, final, _, indexes = run(services, scripted(chains), top_k=2, iterations=2, reader="cot")
    assert final["generations"] == ["Tesla builds it. It is a pickup.", CHAINS[2]]
    assert indexes.queries[1] == f"{QUESTION} Tesla builds it. It is a pickup."


def test_the_last_chains_answer_is_cut_to_the_span_the_benchmarks_score(
    services: Any, sample_index: str
) -> None:
    last = "TechCrunch doubts it. So the answer is: the electric Cybertruck pickup made by Tesla."
    _, final, model, _ = run(services, scripted([*CHAINS[:2], last]), top_k=2, reader="cot")
    assert final["answer"] == "Cybertruck" and final["answer_shortening"] == "model"
    assert final["answer_sentence"] == "the electric Cybertruck pickup made by Tesla"
    # asked in the chain's own conversation, its prefix reused
    assert model.prompts[-1].startswith(model.prompts[-2]) and answer.SHORTEN in model.prompts[-1]


def test_a_last_chain_without_an_answer_is_answered_by_the_direct_reader_and_recorded(
    services: Any, sample_index: str
) -> None:
    last = "TechCrunch wrote about a pickup truck. Its future was uncertain."
    _, final, model, indexes = run(services, scripted([*CHAINS[:2], last]), top_k=3, reader="cot")
    index = services.indexes.open(sample_index)
    passages = search_evidence(index, indexes.queries[-1], 3, 3, mode="dense")
    assert model.prompts[-1] == direct_prompt(QUESTION, passages)  # the last iteration's own passages
    assert final["generations"][-1] == last
    assert final["answer"] == "Cybertruck" and final["answer_outcome"] == "answered"
    assert final["fallbacks"] == [NO_ANSWER]
    assert [u["role"] for u in final["usage"]] == ["generator"] * 4


def test_by_default_the_direct_reader_answers_from_the_last_iterations_passages_which_no_chain_reads(
    services: Any, sample_index: str
) -> None:
    steps, final, model, indexes = run(services, scripted(CHAINS), top_k=3)  # the default reader
    assert steps == ["retrieve", "generate"] * 3
    # two chains, each the next query; the third iteration's passages go to the direct reader alone
    assert indexes.queries == [QUESTION, f"{QUESTION} {CHAINS[0]}", f"{QUESTION} {CHAINS[1]}"]
    index = services.indexes.open(sample_index)
    passages = search_evidence(index, indexes.queries[-1], 3, 3, mode="dense")
    assert model.prompts[-1] == direct_prompt(QUESTION, passages) and len(model.prompts) == 3
    assert final["generations"] == CHAINS[:2] and final["read"] == [item["id"] for item in passages]
    # the direct reader's answer, not the chains' (each names another): no fallback, it is the setting
    assert final["answer"] == "Cybertruck" and not final.get("fallbacks")
    assert final["stop"] == "iterations" and final["stats"]["iterations"] == 3.0


def test_a_direct_reader_after_a_fixed_point_reads_the_passages_its_last_chain_read(
    services: Any, sample_index: str
) -> None:
    steps, final, model, indexes = run(services, scripted([CHAINS[0], CHAINS[0]]))
    assert steps == ["retrieve", "generate"] * 2 and final["stop"] == "converged"
    index = services.indexes.open(sample_index)
    passages = search_evidence(index, indexes.queries[-1], 5, 2, mode="dense")
    assert model.prompts[-1] == direct_prompt(QUESTION, passages)
    assert final["answer"] == "Cybertruck" and final["generations"] == [CHAINS[0], CHAINS[0]]
    assert [u["role"] for u in final["usage"]] == ["generator"] * 3


def test_an_earlier_chains_answer_is_never_read_and_an_empty_chain_leaves_the_question_alone(
    services: Any, sample_index: str
) -> None:
    chains = ["Tesla builds the Cybertruck.", "", CHAINS[2]]  # no "answer is" in the first: only a query
    _, final, model, indexes = run(services, scripted(chains), top_k=2, reader="cot")
    assert indexes.queries == [QUESTION, f"{QUESTION} {chains[0]}", QUESTION]
    assert final["generations"] == chains and len(model.prompts) == 3  # no direct reader for iteration 1
    assert final["fallbacks"] == [
        "generate: iteration 2 wrote no chain of thought (an empty reply, or an echo of the prompt blanked): "
        "the next iteration searches with the question alone"
    ]
    assert final["answer"] == "Cybertruck" and final["stop"] == "iterations"


def test_a_chain_repeating_the_previous_one_ends_the_iterations_at_their_fixed_point(
    services: Any, sample_index: str
) -> None:
    steps, final, model, indexes = run(services, scripted([CHAINS[2], CHAINS[2]]), iterations=5, reader="cot")
    # iteration 3 would search with the same query as iteration 2, read the same passages, write the same
    assert steps == ["retrieve", "generate"] * 2 and len(model.prompts) == 2
    assert indexes.queries == [QUESTION, f"{QUESTION} {CHAINS[2]}"]
    assert final["stop"] == "converged" and final["rounds"] == 2 and final["stats"]["iterations"] == 2.0
    assert final["answer"] == "Cybertruck"


def test_a_first_empty_chain_is_already_the_fixed_point_and_the_direct_reader_answers(
    services: Any, sample_index: str
) -> None:
    steps, final, _, indexes = run(services, scripted([""]), reader="cot")
    assert steps == ["retrieve", "generate"] and indexes.queries == [QUESTION]
    assert final["stop"] == "converged" and final["answer"] == "Cybertruck"
    assert final["fallbacks"] == [NO_ANSWER]


def test_a_refusal_under_unanswerable_is_kept_or_checked_and_a_refusing_chain_still_searches(
    services: Any, sample_index: str
) -> None:
    refusing = "No passage names the pickup. So the answer is: Insufficient information."
    chains = [refusing, refusing.replace("the pickup", "a pickup TechCrunch doubted")]

    # refusals kept as written: the last chain's refusal is the answer, no other call
    _, kept, model, indexes = run(
        services, scripted(chains), iterations=2, unanswerable=True, refusal_check=False, reader="cot"
    )
    # a refusing chain is searched with too: its reasoning still names what it looked for
    assert indexes.queries == [QUESTION, f"{QUESTION} {refusing}"]
    assert (kept["answer"], kept["answer_outcome"]) == ("Insufficient information", "unanswerable")
    assert len(model.prompts) == 2 and not kept.get("fallbacks")

    # with the refusal check (the default): the direct reader, offered the phrase, refuses too; the check
    # finds a fact missing, so the refusal stands
    fact = {"fact": "the pickup TechCrunch doubted", "stated": False}
    missing = json.dumps({"facts": [fact], "answer": ""})
    replies = scripted(chains, direct=answer.UNANSWERABLE)
    _, checked, model, _ = run(
        services,
        lambda prompt: missing if prompt.endswith(refusal_check.CHECK) else replies(prompt),
        iterations=2,
        unanswerable=True,
        reader="cot",
    )
    assert answer.UNANSWERABLE_INSTRUCTION in model.prompts[2]  # the direct reader, offering the phrase
    assert (checked["answer"], checked["answer_outcome"]) == ("Insufficient information", "unanswerable")
    assert checked["refusal_check"]["verdict"] == "missing"
    assert checked["fallbacks"][0] == (
        "cot reader: the chain of thought refused ('Insufficient information.'); "
        "answered by the direct reader"
    )
    # the line by which the refusal check's before / after knows the chain's refusal was sent on
    assert refusal_check_benchmark.refused_before({"fallbacks": checked["fallbacks"]})


def test_retrieval_is_dense_by_default_and_hybrid_a_named_option(services: Any, sample_index: str) -> None:
    assert IterRetGenContext().retrieval_mode == "dense"
    _, _, _, indexes = run(services, scripted(CHAINS), top_k=2)
    assert indexes.modes == ["dense"] * 3
    _, _, _, indexes = run(services, scripted(CHAINS), top_k=2, retrieval_mode="hybrid")
    assert indexes.modes == ["hybrid"] * 3
