"""llama.cpp contexts per prompt family over the one loaded embedded model (issue 18, prompt economy), and
replies that depend on their prompt alone.

Real model, short prompts: what is checked is where each call's KV prefix lives, read from llama.cpp's
own count of prompt tokens it evaluated (LLMUsage.cached_tokens = sent minus evaluated). A prefix is kept
only where the prompt's own batches start (hopgraph.local_model.batch_starts: at each message, after the
last blank line, and every `BATCH` tokens between), so each system text here is longer than one batch.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from langchain_core.messages import HumanMessage, SystemMessage

from hopgraph.local_model import BATCH, MODEL_ID, LocalLlamaChat, prompt_family
from nodes.llm import LLMGateway, RoleModel
from prompts import decompose as decomposition
from tests.two_hop import BRIDGE

pytestmark = pytest.mark.llm

COUNT = decomposition.SubQuestionCount(3, exactly=True)  # query decomposition's default prompt

READER = "Read the numbered passages and answer about them, using only what they say. " * 10
PASSAGE = "Passages:\n[1] Paris is the capital of France. It lies on the Seine.\n\n"
# Roles whose prompts share nothing but the chat template's first tokens, as a decomposer's and a judge's
# do, each long enough that a reused prefix is unmistakable; and two that open with the same system text (a
# sufficiency judge and a reader, as ChainRAG's are; here under the roles "reasoner" and "summarizer").
PROMPTS = {
    "decomposer": [
        SystemMessage("Split a question into the simpler questions it depends on. " * 12),
        HumanMessage("Who directed the film that won Best Picture in 1998?"),
    ],
    "judge": [
        SystemMessage("Decide whether the passage helps answer the question; reply Yes or No. " * 10),
        HumanMessage("Passage: Paris is the capital of France. Question: capital of France?"),
    ],
    "generator": [
        SystemMessage("Answer the question in a few words from what you know. " * 12),
        HumanMessage("What is the capital of Italy?"),
    ],
    "reasoner": [
        SystemMessage(READER),
        HumanMessage(f"{PASSAGE}Question: capital of France?\nEnough to answer? Yes or No."),
    ],
    "summarizer": [
        SystemMessage(READER),
        HumanMessage(f"{PASSAGE}Question: capital of France?\nAnswer in a few words."),
    ],
}


def gateway(gguf_path: Path, contexts: int) -> LLMGateway:
    model = LocalLlamaChat(model_path=str(gguf_path), n_ctx=1024, contexts=contexts)
    return LLMGateway({}, RoleModel(model, MODEL_ID, "local GGUF", exclusive=True))


ASSISTANT_HEADER = 3  # "<|im_start|>", "assistant", "\n": the template's last message, its own batch


def repeat_kept(prompt_tokens: int) -> int:
    """What a repeat of a prompt finds kept: all but its last batch, the assistant header the reply is
    sampled after."""
    return prompt_tokens - ASSISTANT_HEADER


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
    # (A new context's first prompt counts one token short in llama.cpp's own count of tokens evaluated.)
    assert [reused for _, _, reused in shared][1:] == [0, 0, 0]
    # A context per role: the repeat of a role finds its prompt still evaluated, all but its last batch.
    assert [reused for _, _, reused in per_role[2:]] == [repeat_kept(sent) for _, sent, _ in per_role[2:]]
    assert all(reused >= BATCH for _, _, reused in per_role[2:])
    # Same prompts, greedy decoding: the same replies whichever context evaluated them.
    assert [text for text, _, _ in per_role] == [text for text, _, _ in shared]


def test_with_more_families_than_contexts_the_least_recent_gives_its_context_up(gguf_path: Path) -> None:
    calls = run(gateway(gguf_path, contexts=2), ["decomposer", "judge", "generator", "judge", "decomposer"])
    _, _, judge_again = calls[3]
    _, _, decomposer_again = calls[4]
    assert judge_again == repeat_kept(calls[3][1]) > 0  # used more recently than the decomposer: kept
    assert decomposer_again == 0  # the generator took the decomposer's context


def test_roles_opening_with_the_same_system_text_share_a_context(gguf_path: Path) -> None:
    """ChainRAG's judge and sub-question reader: the reader's call re-evaluates only its last line."""
    llm = gateway(gguf_path, contexts=4)
    run(llm, ["decomposer"])
    _, judged, _ = run(llm, ["reasoner"])[0]
    _, sent, reused = run(llm, ["summarizer"])[0]
    # The system text and the passages up to their blank line, kept whole: only the question's lines again.
    question = "Question: capital of France?\nAnswer in a few words."
    assert BATCH <= reused <= judged
    assert sent - reused == llm.model_for("summarizer").model.count_tokens(question) + 2 + ASSISTANT_HEADER


def test_fewer_than_one_context_is_refused_with_the_setting_named(gguf_path: Path) -> None:
    model = LocalLlamaChat(model_path=str(gguf_path), n_ctx=1024, contexts=0)
    with pytest.raises(ValueError, match="local_contexts = 0"):
        model.invoke(PROMPTS["judge"])


def test_a_reply_depends_on_its_prompt_alone_not_on_the_calls_before_it(gguf_path: Path) -> None:
    """A prompt sharing all but its last line with the call before it (what changed greedy replies when
    llama.cpp kept the whole shared prefix and evaluated only the few tokens after it): its reply and the
    logits after it are those of the same prompt in a fresh model, to the bit, and the shared system
    message was still kept whole. White-box: the logits are read from the family's llama.cpp context."""
    decompose = [
        SystemMessage(decomposition.system_text(COUNT)),
        HumanMessage(f"Question: {BRIDGE}\n{decomposition.cue(COUNT)}"),
    ]
    # The call before: the same prompt but for the question's last two words, so few tokens are left to
    # evaluate after the shared prefix, which ends off a multiple of 4 tokens (339: on the AVX-512 machine
    # prefixes of 330, 331 and 339 tokens changed the logits, 332, 336 and 340 did not).
    asked_before = " ".join(BRIDGE.split()[:-2])
    before = [decompose[0], HumanMessage(f"Question: {asked_before} instead?\n{decomposition.cue(COUNT)}")]

    def reply_and_logits(model: LocalLlamaChat) -> tuple[str, list[float], int]:
        reply = model.invoke(decompose)
        llama = model._client(prompt_family(decompose, "default"))
        logits = np.ctypeslib.as_array(llama._ctx.get_logits(), shape=(llama._n_vocab,)).tolist()
        return str(reply.content), logits, reply.usage_metadata["input_token_details"]["cache_read"]

    alone = reply_and_logits(LocalLlamaChat(model_path=str(gguf_path), n_ctx=1024, contexts=1))
    model = LocalLlamaChat(model_path=str(gguf_path), n_ctx=1024, contexts=1)
    model.invoke(before)
    after = reply_and_logits(model)

    assert after[0] == alone[0]
    assert after[1] == alone[1]
    # the shared system message, whole: "<|im_start|>system\n", its text, "<|im_end|>\n"
    system_tokens = model.count_tokens(decompose[0].content) + 5
    assert after[2] == system_tokens > BATCH
