"""The embedded model streams token by token (llama.cpp's `stream=True`) with its usage counted exactly:
a streamed reply is llama.cpp's own whole completion, word for word, with the prompt and completion
counts llama.cpp reports for it, however the completion ends; prefix reuse still counts; and a graph
streamed with `stream_mode="messages"` or `astream_events` gets the tokens tagged with their node.

Real model, real retrieval (the sample index), short replies.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage, SystemMessage

from hopgraph import Settings, build_graph
from hopgraph.local_model import BATCH, LocalLlamaChat, prompt_family

pytestmark = pytest.mark.llm

SYSTEM = "Answer briefly and plainly. " * 6
ASKED = "Name five large cities of France, separated by commas."


@pytest.fixture(scope="module")
def model(gguf_path: Path) -> LocalLlamaChat:
    return LocalLlamaChat(model_path=str(gguf_path), n_ctx=1024, contexts=1)


@pytest.mark.parametrize(
    ("ends_by", "max_tokens", "stop"),
    [("end of generation", 64, None), ("max_tokens", 5, None), ("stop sequence", 64, [" Lyon"])],
)
def test_a_streamed_reply_is_llama_cpps_own_completion_with_its_counts(
    model: LocalLlamaChat, ends_by: str, max_tokens: int, stop: list[str] | None
) -> None:
    messages = [SystemMessage(SYSTEM), HumanMessage(ASKED)]
    chunks = list(model.stream(messages, max_tokens=max_tokens, stop=stop))
    streamed = chunks[0]
    for chunk in chunks[1:]:
        streamed += chunk
    # llama.cpp's whole (unstreamed) completion of the same prompt in the same context: greedy decoding
    own = model._client(prompt_family(messages, "default")).create_chat_completion(
        messages=[{"role": "system", "content": SYSTEM}, {"role": "user", "content": ASKED}],
        max_tokens=max_tokens,
        temperature=0.0,
        stop=stop or [],
    )
    assert streamed.content == own["choices"][0]["message"]["content"], ends_by
    assert len([chunk for chunk in chunks if chunk.content]) > 1, ends_by  # token by token
    usage = streamed.usage_metadata
    assert (usage["input_tokens"], usage["output_tokens"]) == (
        own["usage"]["prompt_tokens"],
        own["usage"]["completion_tokens"],
    ), ends_by


def test_a_streamed_call_still_reuses_the_prefix_its_family_left(model: LocalLlamaChat) -> None:
    system = SystemMessage(SYSTEM * 6)  # longer than a batch: kept whole, as the message it is
    first = [system, HumanMessage(ASKED)]
    second = [system, HumanMessage("Name three rivers of France, separated by commas.")]
    list(model.stream(first, max_tokens=4))
    chunks = list(model.stream(second, max_tokens=4))
    usage = chunks[-1].usage_metadata
    reused = usage["input_token_details"]["cache_read"]
    # all but the changed message ("<|im_start|>user\n", "<|im_end|>\n" around it) and the assistant's header
    asked = model.count_tokens(str(second[1].content)) + 5 + 3
    assert reused >= BATCH and usage["input_tokens"] - reused == asked


def test_naive_streams_its_generators_tokens_tagged_with_the_node(
    settings: Settings, sample_index: str
) -> None:
    graph = build_graph("naive", settings, checkpointer=False)
    context = {"index": sample_index, "top_k": 3, "retrieval_mode": "bm25"}
    question = {"question": "Which electric pickup did Elon Musk say is safer for pedestrians?"}
    tokens: list[tuple[Any, dict[str, Any]]] = []
    final: dict[str, Any] = {}
    for mode, event in graph.stream(question, context=context, stream_mode=["messages", "values"]):
        if mode == "messages":
            tokens.append(event)
        else:
            final = event
    assert {metadata["langgraph_node"] for _, metadata in tokens} == {"generate"}
    first_call = [chunk for chunk, _ in tokens if chunk.id == tokens[0][0].id]
    assert len([chunk for chunk in first_call if chunk.content]) > 1
    reply = "".join(chunk.text for chunk in first_call)
    assert final["answer"].lower() in reply.lower()
    # the node's usage record is the sum of its streamed calls' own counts (one call, or two when the
    # reader is asked which words of its reply answer)
    counted = [chunk.usage_metadata for chunk, _ in tokens if chunk.usage_metadata]
    [usage] = final["usage"]
    assert len(counted) == usage["calls"]
    assert sum(c["input_tokens"] for c in counted) == usage["prompt_tokens"]
    assert sum(c["output_tokens"] for c in counted) == usage["completion_tokens"] > 0

    async def stream_events() -> list[dict[str, Any]]:
        return [event async for event in graph.astream_events(question, context=context, version="v2")]

    streamed = [event for event in asyncio.run(stream_events()) if event["event"] == "on_chat_model_stream"]
    assert len(streamed) > 1
    assert {event["metadata"]["langgraph_node"] for event in streamed} == {"generate"}
