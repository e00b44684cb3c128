"""llama.cpp contexts per prompt family over the one loaded embedded model (issue 18, prompt economy).

Real model, short prompts: what is checked is where each call's KV prefix lives, read from llama.cpp's
own count of prompt tokens it evaluated (LLMUsage.cached_tokens = sent minus evaluated).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage, SystemMessage

from hopgraph.local_model import MODEL_ID, LocalLlamaChat
from nodes.llm import LLMGateway, RoleModel
from prompts import decompose as decomposition
from tests.two_hop import BRIDGE

pytestmark = pytest.mark.llm

COUNT = decomposition.SubQuestionCount(3, exactly=True)  # query decomposition's default prompt

READER = "Read the numbered passages and answer about them, using only what they say. " * 3
PASSAGE = "Passages:\n[1] Paris is the capital of France. It lies on the Seine.\n\n"
# Roles whose prompts share nothing but the chat template's first tokens, as a decomposer's and a judge's
# do, each long enough that a reused prefix is unmistakable; and a reader that opens as the judge does.
PROMPTS = {
    "decomposer": [
        SystemMessage("Split a question into the simpler questions it depends on. " * 3),
        HumanMessage("Who directed the film that won Best Picture in 1998?"),
    ],
    "judge": [
        SystemMessage("Decide whether the passage helps answer the question; reply Yes or No. " * 3),
        HumanMessage("Passage: Paris is the capital of France. Question: capital of France?"),
    ],
    "generator": [
        SystemMessage("Answer the question in a few words from what you know. " * 3),
        HumanMessage("What is the capital of Italy?"),
    ],
    "sufficiency": [
        SystemMessage(READER),
        HumanMessage(f"{PASSAGE}Question: capital of France?\nEnough to answer? Yes or No."),
    ],
    "reader": [
        SystemMessage(READER),
        HumanMessage(f"{PASSAGE}Question: capital of France?\nAnswer in a few words."),
    ],
}


def gateway(gguf_path: Path, contexts: int) -> LLMGateway:
    model = LocalLlamaChat(model_path=str(gguf_path), n_ctx=1024, contexts=contexts)
    return LLMGateway({}, RoleModel(model, MODEL_ID, "local GGUF", exclusive=True))


def run(llm: LLMGateway, roles: list[str]) -> list[tuple[str, int, int]]:
    """(reply, prompt tokens, tokens reused) of each call, in order."""
    calls = []
    for role in roles:
        reply = llm.complete(role, PROMPTS[role], max_tokens=3)
        calls.append((reply.text, reply.usage["prompt_tokens"], reply.usage["cached_tokens"]))
    return calls


def test_each_family_keeps_its_prefix_in_its_own_context_and_answers_are_unchanged(gguf_path: Path) -> None:
    order = ["decomposer", "judge", "decomposer", "judge"]
    shared = run(gateway(gguf_path, contexts=1), order)
    per_role = run(gateway(gguf_path, contexts=2), order)

    # One context: each role's call evicted the other's prompt, so the repeats are evaluated afresh.
    assert all(reused < 10 for _, _, reused in shared)
    # A context per role: the repeat of a role finds its whole prompt still evaluated.
    assert [reused == sent for _, sent, reused in per_role[2:]] == [True, True]
    # Same prompts, greedy decoding: the same replies whichever context evaluated them.
    assert [text for text, _, _ in per_role] == [text for text, _, _ in shared]


def test_with_more_families_than_contexts_the_least_recent_gives_its_context_up(gguf_path: Path) -> None:
    calls = run(gateway(gguf_path, contexts=2), ["decomposer", "judge", "generator", "judge", "decomposer"])
    _, _, judge_again = calls[3]
    _, _, decomposer_again = calls[4]
    assert judge_again == calls[3][1]  # the judge was used more recently than the decomposer: kept
    assert decomposer_again < 10  # the generator took the decomposer's context


def test_roles_opening_with_the_same_system_text_share_a_context(gguf_path: Path) -> None:
    """ChainRAG's judge and sub-question reader: the reader's call re-evaluates only its last line."""
    llm = gateway(gguf_path, contexts=4)
    run(llm, ["decomposer"])
    _, judged, _ = run(llm, ["sufficiency"])[0]
    _, sent, reused = run(llm, ["reader"])[0]
    assert reused > sent - 20 and reused < judged  # the system text and the passages, not the question's tail


def test_fewer_than_one_context_is_refused_with_the_setting_named(gguf_path: Path) -> None:
    model = LocalLlamaChat(model_path=str(gguf_path), n_ctx=1024, contexts=0)
    with pytest.raises(ValueError, match="local_contexts = 0"):
        model.invoke(PROMPTS["judge"])


def test_a_forgotten_prompt_is_evaluated_whole_and_answered_as_in_a_fresh_process(gguf_path: Path) -> None:
    """forget_prompts: the call after it evaluates its whole prompt, so its reply is the one a fresh model
    gives, whatever the contexts held (a reused prefix can change a greedy reply on some builds)."""
    decompose = [
        SystemMessage(decomposition.system_text(COUNT)),
        HumanMessage(f"Question: {BRIDGE}\n{decomposition.cue(COUNT)}"),
    ]
    fresh = LocalLlamaChat(model_path=str(gguf_path), n_ctx=1024, contexts=1)
    alone = fresh.invoke(decompose)

    model = LocalLlamaChat(model_path=str(gguf_path), n_ctx=1024, contexts=1)
    model.invoke(decomposition.messages(BRIDGE))  # another system text, the same template's first tokens
    model.invoke(decompose)
    model.forget_prompts()
    again = model.invoke(decompose)

    assert again.content == alone.content
    assert again.usage_metadata["input_token_details"]["cache_read"] == 0  # nothing of it was kept
