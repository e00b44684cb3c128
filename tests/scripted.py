"""A scripted chat model for wiring tests: replies from a list, records the prompts it was sent; and the
scripted question writer the index-extra tests build with.

Named for what it is: it tests how graphs and nodes use the LLM, never what an LLM would answer.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.language_models.chat_models import generate_from_stream
from langchain_core.messages import AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGenerationChunk, ChatResult
from pydantic import PrivateAttr

from nodes.llm import LLMGateway, RoleModel
from nodes.questions import LLMQuestionWriter


class ScriptedChatModel(BaseChatModel):
    """Answers each call with `reply(prompt_text)`; every prompt is kept in `.prompts`. Streamed (when a
    graph is streamed with `stream_mode="messages"`), the reply comes word by word, then its usage."""

    reply: Callable[[str], str]
    _prompts: list[str] = PrivateAttr(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "scripted"

    @property
    def prompts(self) -> list[str]:
        return self._prompts

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> ChatResult:
        return generate_from_stream(self._stream(messages, stop, run_manager, **kw))

    def _stream(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> Iterator[ChatGenerationChunk]:
        prompt = "\n".join(str(m.content) for m in messages)
        self._prompts.append(prompt)
        text = self.reply(prompt)
        for word in filter(None, re.split(r"(?<=\S)(?=\s)", text)):  # joined, exactly the reply
            chunk = ChatGenerationChunk(message=AIMessageChunk(word))
            if run_manager:
                run_manager.on_llm_new_token(word, chunk=chunk)
            yield chunk
        usage = {"input_tokens": len(prompt.split()), "output_tokens": len(text.split()), "total_tokens": 0}
        yield ChatGenerationChunk(message=AIMessageChunk("", usage_metadata=usage, chunk_position="last"))


def fail_from_call(model: ScriptedChatModel, call: int, reply: Callable[[str], str]) -> None:
    """Make `model` answer with `reply` before its `call`-th call and raise from then on, as a provider gone
    down would: the build stops, its journal holding the calls before it (calls already in flight when
    the build runs several at once fail too, so the count is the same at any concurrency)."""

    def answer(prompt: str) -> str:
        if len(model.prompts) >= call:
            raise RuntimeError("the provider went away")
        return reply(prompt)

    model.reply = answer


def scripted_gateway(reply: Callable[[str], str]) -> tuple[LLMGateway, ScriptedChatModel]:
    model = ScriptedChatModel(reply=reply)
    return LLMGateway({}, RoleModel(model, "scripted", "scripted chat model")), model


class ScriptedServices:
    """The real services (indexes, embedder, reranker, spaCy) with a scripted LLM in their place: tests of a
    graph's wiring over real retrieval. Keyword arguments replace any other service too."""

    def __init__(self, services: Any, llm: LLMGateway, **replaced: Any) -> None:
        self._services = services
        self._replaced = {"llm": llm, **replaced}

    def __getattr__(self, name: str) -> Any:
        return self._replaced[name] if name in self._replaced else getattr(self._services, name)


def stream_updates(
    graph: Any, question: str, context: Any
) -> tuple[list[tuple[str, dict[str, Any]]], dict[str, Any]]:
    """(each node's update in the order the nodes ran, the final state) of one streamed run of a compiled
    graph: what a test reads to check both the path a run took and what each step wrote."""
    updates: list[tuple[str, dict[str, Any]]] = []
    values: dict[str, Any] = {}
    for mode, chunk in graph.stream(
        {"question": question}, context=context, stream_mode=["updates", "values"]
    ):
        if mode == "updates":
            updates += [(node, update or {}) for node, update in chunk.items()]
        else:
            values = chunk
    return updates, values


def stream_run(graph: Any, question: str, context: Any) -> tuple[list[str], dict[str, Any]]:
    """(the nodes in the order they ran, the final state) of one streamed run of a compiled graph."""
    updates, values = stream_updates(graph, question, context)
    return [node for node, _ in updates], values


def checkpointed_path(history: list[Any]) -> list[str]:
    """The nodes a checkpointed run scheduled, first to last, from its `get_state_history` (newest first):
    the path a real-model test pins, so a change of path fails the test instead of skipping its checks."""
    return [step for snapshot in reversed(history) for step in snapshot.next]


def killed_run(module: str, function: str, *args: Any) -> None:
    """Run `module.function(*args)` (literal arguments) in a child Python process over this repository and
    check that it ended by SIGKILL, as `kill -9` would end it: how tests interrupt a build for real."""
    repo = Path(__file__).resolve().parents[1]
    code = f"from {module} import {function}; {function}({', '.join(map(repr, args))})"
    env = {**os.environ, "PYTHONPATH": str(repo)}
    done = subprocess.run([sys.executable, "-c", code], cwd=repo, env=env, capture_output=True, timeout=300)
    assert done.returncode == -signal.SIGKILL, done.stderr.decode()[-2000:]


def field_of(pattern: str, prompt: str) -> str:
    """The first group of `pattern` in a question writer's prompt (the prompt always holds it)."""
    found = re.search(pattern, prompt)
    assert found is not None, prompt
    return found.group(1)


def scripted_questions(prompt: str) -> str:
    """A numbered list of the asked count of questions naming the passage's title and a few of its words
    each, so the questions are about their chunk (what QuOTE's search needs to find it)."""
    title = field_of(r"Passage title: (.*)", prompt)
    text = prompt.split(f"Passage title: {title}\n", 1)[1].split("\n</passage>", 1)[0]
    count = int(field_of(r"Write (\d+) questions", prompt))
    words = text.split()
    return "\n".join(
        f"{n + 1}. What does {title} say about {' '.join(words[4 * n : 4 * n + 4])}?" for n in range(count)
    )


def scripted_writer() -> tuple[LLMQuestionWriter, ScriptedChatModel]:
    llm, model = scripted_gateway(scripted_questions)
    return LLMQuestionWriter(llm, concurrency=1), model


def run_over_store(
    build: Callable[[Any], Any], store: Any, services: Any, question: str, context: Any
) -> tuple[list[str], dict[str, Any], ScriptedChatModel]:
    """(nodes in the order they ran, the final state, the scripted reader) of a method built by `build` over
    the index store `store`, its reader scripted to answer "radium", everything else real."""
    from hopgraph.providers import BoundIndexes

    llm, model = scripted_gateway(lambda _prompt: "radium")
    indexes = BoundIndexes(store, services.embedder)
    graph = build(ScriptedServices(services, llm, indexes=indexes)).compile()
    steps, values = stream_run(graph, question, context)
    return steps, values, model
