"""The one place every LLM call passes through.

Why one place: per-node accounting (calls, prompt / cached / completion tokens, seconds), a response cache
so an evaluation can be resumed or re-run without paying twice, per-role model choice, serialised access
to a local model that is not thread-safe, and one translation of provider failures into a clear error.
Models are handed in already built (hopgraph/ builds them); nothing here loads a model.

Structured output: a call may name its reply's shape (prompts.structured.ReplyShape). With the gateway's
`structured` switch on (the `structured_output` setting), a model that can take one (`RoleModel.reply_format`)
is asked for it: llama.cpp as `response_format={"type": "json_object", "schema": ...}`, which it turns into a
grammar, an OpenAI-compatible server as `{"type": "json_schema", "json_schema": {...}}`. A server that refuses
it (a 400, 422 or 500 naming response_format or json_schema) is asked again without it, once, and that role on
that model goes on without it for the process: logged once, and counted in the call's usage
(`structured_refused`). The schema is part of the response cache's key, so replies asked with and without it
never stand in for each other.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.language_models.chat_models import generate_from_stream
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, HumanMessage
from langchain_core.outputs import ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable, RunnableConfig
from pydantic import SecretStr

from nodes.roles import ROLES
from nodes.state import LLMUsage
from nodes.window import estimated_tokens
from prompts.echo import NUDGE, EchoGuard
from prompts.structured import ReplyShape
from stores.errors import HopgraphError
from stores.files import connect_sqlite
from stores.locks import taking_turns
from stores.redaction import redact


class ProviderError(HopgraphError):
    """A model provider refused, failed or timed out after its retries."""


# What a provider's SDK raises on a reply it cannot read, whatever the HTTP status said: a body that is not
# JSON or was cut short (json.JSONDecodeError), an empty `choices` (IndexError), a null one (TypeError).
MALFORMED_REPLY = (json.JSONDecodeError, LookupError, TypeError)
# The OpenAI SDK's backoff between attempts after a 500, which a malformed reply gets too
_FIRST_BACKOFF, _LAST_BACKOFF = 0.5, 8.0
# How a model takes a reply's shape: llama-cpp-python's grammar from a schema, or OpenAI's response_format
ReplyFormat = Literal["llama.cpp", "openai"]
# HTTP statuses of a request refused as written (llama-cpp-python's server answers one failing its request
# validation with a 500); a structured-output refusal also names what it refused
_REFUSED_STATUSES = (400, 422, 500)
_REFUSED_WORDS = ("response_format", "json_schema", "structured output")
_log = logging.getLogger("hopgraph")


@dataclass(frozen=True)
class RoleModel:
    """A built chat model for one role, with what identifies it in the cache and in error messages.

    `exclusive` marks a model that must not be called from two threads at once (in-process llama.cpp).
    `provider_retries` is set for a model behind a provider's API: how often a malformed reply (a body that
    is not JSON or was cut short, no choices) is asked again, as its SDK asks again after a 500 (the
    `max_retries` setting); an empty completion from it is asked again once. None for the in-process model,
    whose reply is what it generated, taken as it is (an empty one is a reply its parser falls back from).
    `reply_format` says how the model is asked for a reply's shape (None: it is not asked).
    `context_window` is how many tokens its context holds, prompt and reply together (the settings'
    `local_n_ctx` or `provider_n_ctx`), and `count_prompt` how many a prompt takes: a prompt that grows
    with the evidence is cut to fit (nodes.window). Unstated, they are the embedded model's default window,
    which every default prompt fits, and the estimate made without a tokenizer.
    """

    model: BaseChatModel
    model_id: str
    describe: str
    exclusive: bool = False
    provider_retries: int | None = None
    reply_format: ReplyFormat | None = None
    context_window: int = 8192
    count_prompt: Callable[[Sequence[BaseMessage]], int] = estimated_tokens
    lock: threading.Lock = field(default_factory=threading.Lock, compare=False)


@dataclass(frozen=True)
class LLMReply:
    """A completion's text and cost, and the `shape` the model was asked for (None: not asked, or its server
    refused), so the parser reads the text as that shape first."""

    text: str
    usage: LLMUsage
    shape: ReplyShape | None = None

    @property
    def structured(self) -> bool:
        return self.shape is not None

    def unread(self) -> bool:
        """Asked for a shape, the reply is not of it: its parser reads it as free text, and notes that."""
        return self.shape is not None and self.shape.read(self.text) is None


class _ShapeRefused(Exception):
    """The provider refused the request for a reply's shape (raised from the provider's own error)."""


class UsageTotals(Counter[str]):
    """What a run's calls cost, summed (calls, prompt / reused / completion tokens, seconds): index-time LLM
    work is reported per run by the index command, and its workers add to it from several threads."""

    KEYS = ("calls", "prompt_tokens", "cached_tokens", "completion_tokens", "seconds")

    def __init__(self) -> None:
        super().__init__()
        self._lock = threading.Lock()

    def add(self, usage: LLMUsage) -> None:
        with self._lock:
            for key in self.KEYS:
                self[key] += usage[key]


class ResponseCache:
    """SQLite cache of completions keyed by model id + messages + generation parameters."""

    def __init__(self, path: Path) -> None:
        self._db = connect_sqlite(path, isolation_level=None)
        with taking_turns(path.parent):  # one process at a time sets a new cache up
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, text TEXT, usage TEXT)"
            )
        self._lock = threading.Lock()

    @staticmethod
    def key(model_id: str, messages: Sequence[BaseMessage], params: Mapping[str, object]) -> str:
        payload = json.dumps(
            {"model": model_id, "messages": [(m.type, m.content) for m in messages], "params": params},
            sort_keys=True,
        )
        return hashlib.sha256(payload.encode()).hexdigest()

    def get(self, key: str) -> tuple[str, dict] | None:
        with self._lock:
            row = self._db.execute("SELECT text, usage FROM responses WHERE key = ?", (key,)).fetchone()
        return (row[0], json.loads(row[1])) if row else None

    def put(self, key: str, text: str, usage: Mapping[str, int]) -> None:
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO responses VALUES (?, ?, ?)", (key, text, json.dumps(dict(usage)))
            )


class CachedReply(BaseChatModel):
    """A reply the response cache holds, given back as a model run of its own: whatever follows a graph's
    model calls (LangGraph's `stream_mode="messages"`, `astream_events`, a tracer) receives it as one
    chunk where a fresh reply would stream, instead of missing the node's reply. It costs no tokens."""

    text: str

    @property
    def _llm_type(self) -> str:
        return "hopgraph-response-cache"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: object,
    ) -> ChatResult:
        return generate_from_stream(self._stream(messages, stop, run_manager))

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: object,
    ) -> Iterator[ChatGenerationChunk]:
        chunk = ChatGenerationChunk(message=AIMessageChunk(self.text, chunk_position="last"))
        if run_manager:
            run_manager.on_llm_new_token(self.text, chunk=chunk)
        yield chunk


def _current_node(default: str) -> str:
    """Name of the LangGraph node calling us, so accounting is per node without nodes passing it."""
    try:
        from langgraph.config import get_config

        return str(get_config().get("metadata", {}).get("langgraph_node", default))
    except RuntimeError:
        return default


_COUNT_KEYS = ("prompt_tokens", "cached_tokens", "completion_tokens")


def _token_counts(message: AIMessage) -> dict[str, int]:
    usage = message.usage_metadata or {}
    details = usage.get("input_token_details") or {}
    return {
        "prompt_tokens": int(usage.get("input_tokens", 0)),
        "cached_tokens": int(details.get("cache_read", 0) or 0),
        "completion_tokens": int(usage.get("output_tokens", 0)),
    }


class LLMGateway:
    """Routes a call for a role (nodes.roles: generator, judge ...) to that role's model and counts it."""

    def __init__(
        self,
        roles: Mapping[str, RoleModel],
        default: RoleModel,
        cache: ResponseCache | None = None,
        *,
        structured: bool = False,
    ) -> None:
        self._roles = dict(roles)
        self._default = default
        self._cache = cache
        self._structured = structured
        self._refused: set[tuple[str, str]] = set()  # (role, model id) whose server refused a shape
        self._refused_lock = threading.Lock()

    def model_for(self, role: str) -> RoleModel:
        """The role's own model, else the default; a role not in nodes.roles.ROLES is a programming error
        (no `[roles.NAME]` could ever reach it), so it stops the call."""
        if role not in ROLES:
            raise ValueError(f"LLM call for unknown role {role!r}: add it to nodes.roles.ROLES")
        return self._roles.get(role, self._default)

    def structures(self, role: str) -> bool:
        """Whether a call for `role` that names its reply's shape asks the model for it: the switch is on,
        the model can take a shape, and its server has not refused one for this role."""
        chosen = self.model_for(role)
        with self._refused_lock:
            refused = (role, chosen.model_id) in self._refused
        return self._structured and chosen.reply_format is not None and not refused

    def complete(
        self,
        role: str,
        messages: Sequence[BaseMessage],
        *,
        max_tokens: int,
        stop: Sequence[str] | None = None,
        guard: EchoGuard | None = None,
        shape: ReplyShape | None = None,
    ) -> LLMReply:
        """Run one chat completion for `role`; greedy decoding so that results are reproducible.

        With a `shape` the model is asked for a reply of that shape where `structures(role)` says so; a
        refusal is asked again without it (`_generate`), and the reply says whether it was structured.

        With a `guard`, a reply that repeats the prompt's own text (prompts.echo) is asked again once, the
        reply and a neutral nudge appended so the model's KV prefix is reused; a second echo comes back as
        an empty text, which every parser already treats with its defined fallback. Both calls are in the
        usage record, and `echoes` counts the echoing replies. A provider's faults are retried and then
        raised as one ProviderError (`_generate`), so an empty or broken reply is never taken for an answer.
        """
        chosen = self.model_for(role)
        node = _current_node(role)
        params: dict[str, object] = {"max_tokens": max_tokens, "stop": list(stop or [])}
        asked = shape if shape is not None and self.structures(role) else None
        started = time.perf_counter()
        text, counts, hits, asked = self._generate(role, node, chosen, messages, params, asked)
        echoes = 0
        if guard is not None and guard.find(text, messages) is not None:
            echoes = 1
            again = [*messages, AIMessage(text), HumanMessage(NUDGE)]
            text, retry_counts, retry_hits, asked = self._generate(role, node, chosen, again, params, asked)
            calls = counts.get("calls", 1) + retry_counts.get("calls", 1)
            refused = counts.get("structured_refused", 0) + retry_counts.get("structured_refused", 0)
            counts = {key: counts.get(key, 0) + retry_counts.get(key, 0) for key in _COUNT_KEYS}
            counts |= {"calls": calls, "structured_refused": refused}
            hits += retry_hits
            if guard.find(text, again) is not None:
                echoes, text = 2, ""
        usage = self._usage(node, role, counts, time.perf_counter() - started, hits, echoes)
        return LLMReply(text, usage, asked)

    def _generate(
        self,
        role: str,
        node: str,
        chosen: RoleModel,
        messages: Sequence[BaseMessage],
        params: Mapping[str, object],
        shape: ReplyShape | None = None,
    ) -> tuple[str, dict[str, int], int, ReplyShape | None]:
        """One completion (or its cached copy): (text, token counts, 1 if the response cache answered, the
        shape it was asked for: `shape`, or None when the provider refused it).

        A refused shape (`_ShapeRefused`) is recorded for the role and model, and the call is made again
        without it; its counts say so (`structured_refused`).

        The call carries its role and node as tags and metadata, so a tracer (LangSmith, switched on by
        LANGSMITH_TRACING=true) shows which role of which node each LLM call was. A provider's empty
        completion (no text, no completion tokens: it produced nothing) is asked again once, then raised as
        a ProviderError, and never cached; its counts then hold both calls.
        """
        config: RunnableConfig = {
            "tags": [f"role:{role}", f"node:{node}"],
            "metadata": {"role": role, "node": node},
        }
        keyed = {**params, "reply_shape": dict(shape.schema)} if shape is not None else params
        key = ResponseCache.key(chosen.model_id, messages, keyed) if self._cache else ""
        cached = self._cache.get(key) if self._cache else None
        if cached is not None and not (chosen.provider_retries is not None and _empty(cached[0], cached[1])):
            CachedReply(text=cached[0]).invoke(list(messages), config)
            return cached[0], cached[1], 1, shape
        stop = params["stop"]
        shaped = shape is not None and chosen.reply_format is not None
        bind: dict[str, Any] = {"max_tokens": params["max_tokens"], "stop": list(stop) if stop else None}
        if shaped:
            bind["response_format"] = response_format(chosen.reply_format, shape)
        bound = chosen.model.bind(**bind)
        try:
            text, counts = self._reply(role, chosen, bound, messages, config, shaped)
            if chosen.provider_retries is not None and _empty(text, counts):
                text, again = self._reply(role, chosen, bound, messages, config, shaped)
                counts = {key: counts[key] + again[key] for key in _COUNT_KEYS} | {"calls": 2}
                if _empty(text, again):
                    raise _provider_error(role, chosen, "an empty completion, twice (asked again once)")
        except _ShapeRefused as refusal:
            self._refuse(role, chosen, refusal)
            text, counts, hits, _ = self._generate(role, node, chosen, messages, params)
            return text, {**counts, "structured_refused": 1}, hits, None
        if self._cache is not None:
            self._cache.put(key, text, counts)
        return text, counts, 0, shape

    def _refuse(self, role: str, chosen: RoleModel, refusal: _ShapeRefused) -> None:
        """Remember that `chosen`'s server refused a reply shape for `role`, and say so once."""
        with self._refused_lock:
            first = (role, chosen.model_id) not in self._refused
            self._refused.add((role, chosen.model_id))
        if first:
            _log.warning(
                "The model for role '%s' (%s) refused structured output (%s): that role goes on without it.",
                role,
                chosen.describe,
                _described(refusal.__cause__ or refusal),
            )

    @staticmethod
    def _reply(
        role: str,
        chosen: RoleModel,
        bound: Runnable[Any, BaseMessage],
        messages: Sequence[BaseMessage],
        config: RunnableConfig,
        shaped: bool = False,
    ) -> tuple[str, dict[str, int]]:
        """One model call: (text, token counts). A provider's malformed reply is asked again with the
        SDK's backoff, `provider_retries` times; what still fails is one ProviderError naming role, model
        and URL. A `shaped` call whose shape the provider refused raises _ShapeRefused instead."""
        for attempt in range(1 + (chosen.provider_retries or 0)):
            if attempt:
                time.sleep(min(_LAST_BACKOFF, _FIRST_BACKOFF * 2 ** (attempt - 1)))
            try:
                if chosen.exclusive:
                    with chosen.lock:
                        message = bound.invoke(list(messages), config)
                else:
                    message = bound.invoke(list(messages), config)
            except HopgraphError:
                raise
            except MALFORMED_REPLY as exc:
                if chosen.provider_retries is None:  # the in-process model: its error, not a reply to retry
                    raise _provider_error(role, chosen, _described(exc)) from exc
                fault = exc
                continue
            except Exception as exc:  # provider SDKs raise many types; the user needs one clear message
                if shaped and _refuses_shape(exc):
                    raise _ShapeRefused(str(exc)) from exc
                raise _provider_error(role, chosen, _described(exc)) from exc
            text = message.content if isinstance(message.content, str) else str(message.content)
            return text, _token_counts(message)
        raise _provider_error(
            role, chosen, f"a malformed reply, {attempt + 1} times ({_described(fault)})"
        ) from fault

    @staticmethod
    def _usage(
        node: str, role: str, counts: Mapping[str, int], seconds: float, hits: int, echoes: int
    ) -> LLMUsage:
        return LLMUsage(
            node=node,
            role=role,
            calls=int(counts.get("calls", 1)),
            prompt_tokens=int(counts.get("prompt_tokens", 0)),
            cached_tokens=int(counts.get("cached_tokens", 0)),
            completion_tokens=int(counts.get("completion_tokens", 0)),
            seconds=round(seconds, 4),
            cache_hits=hits,
            echoes=echoes,
            structured_refused=int(counts.get("structured_refused", 0)),
        )


def response_format(kind: ReplyFormat, shape: ReplyShape) -> dict[str, Any]:
    """The request for `shape` as the model's API takes it: llama-cpp-python's `json_object` with a schema
    (its grammar), or OpenAI's `json_schema`."""
    if kind == "llama.cpp":
        return {"type": "json_object", "schema": dict(shape.schema)}
    return {"type": "json_schema", "json_schema": {"name": shape.name, "schema": dict(shape.schema)}}


def _refuses_shape(exc: Exception) -> bool:
    """Whether a provider's error is a refusal of the reply's shape: a request rejected as written (400, 422
    from a server validating its body, or the 500 llama-cpp-python's server sends for that) whose message
    names what it could not take; a server fault names no request parameter."""
    status = getattr(exc, "status_code", None)
    return status in _REFUSED_STATUSES and any(word in str(exc).lower() for word in _REFUSED_WORDS)


def _empty(text: str, counts: Mapping[str, int]) -> bool:
    """A completion with no text and no completion tokens: the provider produced nothing. (A model that
    stopped at once on a stop sequence spent its tokens and replied "": that is a reply.)"""
    return not text.strip() and not counts.get("completion_tokens")


def _described(exc: Exception) -> str:
    """An exception as the message shows it: its type and its text, with any key redacted."""
    return f"{type(exc).__name__}: {redact(str(exc)).rstrip('.')}"


def _provider_error(role: str, chosen: RoleModel, what: str) -> ProviderError:
    """The one line every provider fault ends in: the role, the model and its URL, what went wrong, and
    what to check. A server's own error text may echo the key it was sent whole: every secret the chat
    model holds (its key, whatever the provider's class names the field) is masked in it."""
    for secret in vars(chosen.model).values():
        if isinstance(secret, SecretStr) and secret.get_secret_value():
            what = what.replace(secret.get_secret_value(), "***")
    return ProviderError(
        f"The model for role '{role}' ({chosen.describe}) failed: {what}. Check that the server is running "
        "and reachable and that the model name and API key are right, or raise `timeout` / `max_retries` in "
        "hopgraph.toml."
    )


class IndexTimeCaller:
    """What an index extra's LLM side (question writer, edge judge) shares: one role's calls, the identity
    that keys the extra's build (model, prompt version, and the reply's `shape` when the model is asked for
    it: another of any does the work anew), how many calls may run at once (one against an in-process
    model, which the gateway serialises anyway), and the run's summed cost for the index command's report.
    Each call names the shape it asks for: `shape` itself, or one it stands for (the question writer's
    array of exactly the count asked, `shape` with the count left open)."""

    def __init__(
        self, llm: LLMGateway, role: str, prompt_version: str, concurrency: int, shape: ReplyShape
    ) -> None:
        chosen = llm.model_for(role)
        self.llm = llm
        self.role = role
        structured = f"|{shape.name}-{shape.version}" if llm.structures(role) else ""
        self.identity = f"{chosen.model_id}|{prompt_version}{structured}"
        self.concurrency = 1 if chosen.exclusive else max(1, concurrency)
        self.spent = UsageTotals()

    def _complete(
        self, messages: Sequence[BaseMessage], max_tokens: int, guard: EchoGuard, shape: ReplyShape
    ) -> LLMReply:
        reply = self.llm.complete(self.role, messages, max_tokens=max_tokens, guard=guard, shape=shape)
        self.spent.add(reply.usage)
        return reply
