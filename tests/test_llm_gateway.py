"""The LLM gateway with a scripted chat model (wiring only: accounting, cache, roles, errors)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage

from nodes.llm import LLMGateway, ProviderError, ResponseCache, RoleModel
from tests.turns import Arrivals


def scripted(*replies: str, prompt_tokens: int = 100, cache_read: int = 0) -> GenericFakeChatModel:
    """A chat model that replies with `replies` in order and reports fixed usage."""
    return GenericFakeChatModel(
        messages=iter(
            AIMessage(
                text,
                usage_metadata={
                    "input_tokens": prompt_tokens,
                    "output_tokens": 3,
                    "total_tokens": prompt_tokens + 3,
                    "input_token_details": {"cache_read": cache_read},
                },
            )
            for text in replies
        )
    )


class Exploding(GenericFakeChatModel):
    def _generate(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        raise TimeoutError("read timed out")


def test_calls_are_accounted_per_role_with_tokens_and_time() -> None:
    gateway = LLMGateway({}, RoleModel(scripted("Paris", cache_read=60), "m1", "scripted"))
    reply = gateway.complete("generator", [HumanMessage("capital of France?")], max_tokens=8)
    assert reply.text == "Paris"
    usage = reply.usage
    assert (usage["role"], usage["node"], usage["calls"]) == ("generator", "generator", 1)
    assert (usage["prompt_tokens"], usage["cached_tokens"], usage["completion_tokens"]) == (100, 60, 3)
    assert usage["cache_hits"] == 0 and usage["seconds"] >= 0


def test_roles_route_to_their_own_model() -> None:
    reasoner = RoleModel(scripted("plan"), "reasoner-model", "scripted reasoner")
    gateway = LLMGateway({"reasoner": reasoner}, RoleModel(scripted("default"), "m", "scripted"))
    assert gateway.complete("reasoner", [HumanMessage("x")], max_tokens=4).text == "plan"
    assert gateway.complete("generator", [HumanMessage("x")], max_tokens=4).text == "default"


def test_a_call_for_a_role_not_listed_stops_before_any_model() -> None:
    gateway = LLMGateway({}, RoleModel(scripted("plan"), "m", "scripted"))
    with pytest.raises(ValueError, match=r"unknown role 'planner': add it to nodes\.roles\.ROLES"):
        gateway.complete("planner", [HumanMessage("x")], max_tokens=4)
    # the model's first reply is still unread: the refused call never reached it
    assert gateway.complete("reasoner", [HumanMessage("x")], max_tokens=4).text == "plan"


def test_response_cache_answers_repeats_without_calling_the_model(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "cache.sqlite")
    gateway = LLMGateway({}, RoleModel(scripted("first"), "m", "scripted"), cache)
    question = [HumanMessage("same question")]
    first = gateway.complete("generator", question, max_tokens=8)
    again = gateway.complete("generator", question, max_tokens=8)  # the script has no second reply
    assert (first.text, again.text) == ("first", "first")
    assert again.usage["cache_hits"] == 1 and again.usage["calls"] == 1
    assert again.usage["prompt_tokens"] == first.usage["prompt_tokens"]
    # a different budget is a different request
    with pytest.raises(ProviderError):
        gateway.complete("generator", question, max_tokens=9)
    # the cache survives a new process (a resumed evaluation)
    reopened = LLMGateway(
        {}, RoleModel(scripted(), "m", "scripted"), ResponseCache(tmp_path / "cache.sqlite")
    )
    assert reopened.complete("generator", question, max_tokens=8).text == "first"


def test_provider_failures_become_one_clear_error() -> None:
    gateway = LLMGateway({}, RoleModel(Exploding(messages=iter([])), "m", "openai:gpt-x at http://h:1"))
    with pytest.raises(ProviderError) as info:
        gateway.complete("judge", [HumanMessage("x")], max_tokens=4)
    message = str(info.value)
    assert "judge" in message and "openai:gpt-x at http://h:1" in message and "timed out" in message


def test_an_exclusive_model_is_never_called_concurrently() -> None:
    """Eight threads call one exclusive model at once. The first call finishes only after every thread has
    come to the model's lock (counted by a lock that counts who asks for it), so without the lock the
    calls would overlap; with it, one runs at a time."""
    callers = 8
    active, peak = 0, 0
    guard = threading.Lock()
    asked = Arrivals(callers)
    all_asked = asked.all_came

    class CountingLock:
        """The model's lock, counting the threads that asked for it."""

        def __init__(self) -> None:
            self._lock = threading.Lock()

        def __enter__(self) -> None:
            asked.came()
            self._lock.acquire()

        def __exit__(self, *exc: object) -> None:
            self._lock.release()

    class Counting(GenericFakeChatModel):
        def _generate(self, *args, **kwargs):  # type: ignore[no-untyped-def]
            nonlocal active, peak
            with guard:
                active += 1
                peak = max(peak, active)
            assert all_asked.wait(timeout=60), "not every caller came to the lock"
            with guard:
                active -= 1
            return super()._generate(*args, **kwargs)

    model = Counting(messages=iter(AIMessage(str(i)) for i in range(callers)))
    role = RoleModel(model, "m", "scripted", exclusive=True, lock=CountingLock())  # type: ignore[arg-type]
    gateway = LLMGateway({}, role)
    threads = [
        threading.Thread(
            target=gateway.complete, args=("generator", [HumanMessage(str(i))]), kwargs={"max_tokens": 2}
        )
        for i in range(callers)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert peak == 1 and all_asked.is_set()
