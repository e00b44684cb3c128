"""Token streaming as a LangGraph user asks for it: `graph.stream(..., stream_mode="messages")` and
`astream_events` give every LLM call's tokens, tagged with the node that made the call, for every method.

Every method runs over real retrieval (an index of four articles with every index extra: Chroma, MiniLM,
BM25, spaCy's sentence graph) with a scripted chat model that streams its reply word by word: what is
tested is that each method's calls reach the stream through the LLM gateway, never what an LLM would say.
An OpenAI-compatible provider is a stub server (tests/openai_stub.py) behind the real ChatOpenAI client,
which streams over server-sent events: its usage still reaches the accounting, and a reply the response
cache gives back is still delivered to the stream.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import MODEL_DIR
from openai_stub import OpenAIStub, serve

from graphs.registry import METHODS, builder
from hopgraph import Settings, build_graph, index_corpus, services_for
from nodes.edge_judge import LLMEdgeJudge
from stores.extra_registry import EXTRAS
from tests.scripted import ScriptedChatModel, ScriptedServices, scripted_gateway, scripted_writer
from tests.test_biqog_edges import scripted_reply as scripted_verdict

ARTICLES = Path(__file__).parent / "fixtures" / "corpora" / "articles.jsonl"
QUESTION = "How long does an espresso shot take, and what pressure pushes the water?"
SUBS = '["How long does an espresso shot take?", "What pressure pushes the water through the coffee?"]'
ANSWER = "It takes about 25 seconds"


def reply(prompt: str) -> str:
    """A decomposer gets its JSON list, every other call a few words (a judge reads them as "not yet")."""
    return SUBS if "JSON array" in prompt else ANSWER


@pytest.fixture(scope="module")
def articles(settings: Settings) -> str:
    """Four articles indexed with every index extra, their question writer and edge judge scripted."""
    writer, _ = scripted_writer()
    judge = LLMEdgeJudge(scripted_gateway(scripted_verdict)[0], 1)
    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(services_for(settings)._built, "question_writer", writer)
        patch.setitem(services_for(settings)._built, "edge_judge", judge)
        index_corpus(ARTICLES, "stream-articles", settings, extras=list(EXTRAS))
    return "stream-articles"


def scripted_graph(method: str, services: Any) -> tuple[Any, ScriptedChatModel]:
    llm, model = scripted_gateway(reply)
    return builder(method)(ScriptedServices(services, llm)).compile(), model


def replies_by_node(chunks: Iterator[tuple[Any, dict[str, Any]]]) -> dict[str, list[str]]:
    """node -> the replies streamed from it (chunks of one call share their message id), and how many
    chunks came in all under the key "" (so a test can tell a streamed reply from a whole one)."""
    texts: dict[tuple[str, str], str] = defaultdict(str)
    count = 0
    for chunk, metadata in chunks:
        texts[(metadata["langgraph_node"], str(chunk.id))] += chunk.text
        count += 1
    by_node: dict[str, list[str]] = defaultdict(list)
    for (node, _), text in texts.items():
        by_node[node].append(text)
    by_node[""] = [str(count)]
    return by_node


def called(usage: list[dict[str, Any]]) -> dict[str, int]:
    """node -> the LLM calls the run's usage records say it made."""
    calls: dict[str, int] = defaultdict(int)
    for record in usage:
        calls[record["node"]] += record["calls"]
    return {node: count for node, count in calls.items() if count}


@pytest.mark.parametrize("method", sorted(METHODS))
def test_every_method_streams_each_llm_call_token_by_token_tagged_with_its_node(
    method: str, services: Any, articles: str
) -> None:
    graph, model = scripted_graph(method, services)
    chunks: list[tuple[Any, dict[str, Any]]] = []
    final: dict[str, Any] = {}
    for mode, event in graph.stream(
        {"question": QUESTION}, context={"index": articles}, stream_mode=["messages", "values"]
    ):
        if mode == "messages":
            chunks.append(event)
        else:
            final = event
    streamed = replies_by_node(iter(chunks))
    calls = called(final["usage"])
    assert calls, f"{method} made no LLM call"
    # every call of every node that called the LLM reached the stream, under that node, whole
    assert {node: len(texts) for node, texts in streamed.items() if node} == calls
    assert sorted(text for node, texts in streamed.items() if node for text in texts) == sorted(
        reply(prompt) for prompt in model.prompts
    )
    # word by word, not one message a call
    assert int(streamed[""][0]) > sum(calls.values())


@pytest.mark.parametrize("method", sorted(METHODS))
def test_every_method_gives_astream_events_its_tokens_tagged_with_their_node(
    method: str, services: Any, articles: str
) -> None:
    graph, model = scripted_graph(method, services)

    async def events() -> list[dict[str, Any]]:
        return [
            event
            async for event in graph.astream_events(
                {"question": QUESTION}, context={"index": articles}, version="v2"
            )
        ]

    seen = asyncio.run(events())
    tokens = [
        (event["data"]["chunk"], event["metadata"])
        for event in seen
        if event["event"] == "on_chat_model_stream"
    ]
    [output] = [
        event["data"]["output"]
        for event in seen
        if event["event"] == "on_chain_end" and not event["parent_ids"]
    ]
    streamed = replies_by_node(iter(tokens))
    assert {node: len(texts) for node, texts in streamed.items() if node} == called(output["usage"])
    assert sorted(text for node, texts in streamed.items() if node for text in texts) == sorted(
        reply(prompt) for prompt in model.prompts
    )


@pytest.fixture
def stub() -> Iterator[OpenAIStub]:
    with serve(OpenAIStub(reply=lambda prompt: "Tesla Cybertruck pickup")) as running:
        yield running


def remote(settings: Settings, stub: OpenAIStub, **overrides: Any) -> Settings:
    """The session's data directory (index 'sample') with the stub as the LLM."""
    return Settings(
        data_dir=settings.data_dir,
        model_dir=MODEL_DIR,
        llm="openai:stub",
        base_url=stub.base_url,
        **overrides,
    )


def stream_naive(
    settings: Settings, thread_id: str
) -> tuple[list[tuple[Any, dict[str, Any]]], dict[str, Any]]:
    """(the message chunks, the final state) of NaiveRAG streamed over the sample index."""
    chunks: list[tuple[Any, dict[str, Any]]] = []
    final: dict[str, Any] = {}
    for mode, event in build_graph("naive", settings).stream(
        {"question": "Which pickup truck is discussed?"},
        {"configurable": {"thread_id": thread_id}},
        context={"index": "sample", "top_k": 3},
        stream_mode=["messages", "values"],
    ):
        if mode == "messages":
            chunks.append(event)
        else:
            final = event
    return chunks, final


def test_an_openai_compatible_provider_streams_tokens_and_its_usage_is_counted(
    settings: Settings, sample_index: str, stub: OpenAIStub
) -> None:
    remote_settings = remote(settings, stub)
    chunks, streamed = stream_naive(remote_settings, "stream-openai")
    words = [
        chunk.text for chunk, metadata in chunks if metadata["langgraph_node"] == "generate" and chunk.text
    ]
    assert words == ["Tesla", " Cybertruck", " pickup"]
    # the same call unstreamed (invoke attaches no streaming callback): the server's counts, the same
    whole = build_graph("naive", remote_settings, checkpointer=False).invoke(
        {"question": "Which pickup truck is discussed?"}, context={"index": "sample", "top_k": 3}
    )
    tokens = ("prompt_tokens", "completion_tokens")
    [usage], [expected] = streamed["usage"], whole["usage"]
    assert {key: usage[key] for key in tokens} == {key: expected[key] for key in tokens}
    assert usage["prompt_tokens"] > 100 and usage["completion_tokens"] == 3
    assert len(stub.requests) == 2


def test_a_reply_from_the_response_cache_is_still_delivered_to_the_stream(
    settings: Settings, sample_index: str, stub: OpenAIStub
) -> None:
    cached = remote(settings, stub, llm_cache=True)
    first, _ = stream_naive(cached, "stream-cache-1")
    again, final = stream_naive(cached, "stream-cache-2")
    assert len(stub.requests) == 1  # the second run's call was answered by the cache
    [usage] = final["usage"]
    assert usage["cache_hits"] == 1
    replied = "".join(chunk.text for chunk, metadata in first if metadata["langgraph_node"] == "generate")
    [(chunk, metadata)] = again
    assert chunk.text == replied == "Tesla Cybertruck pickup"
    assert metadata["langgraph_node"] == "generate" and metadata["role"] == "generator"
