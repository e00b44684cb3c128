"""A stdlib HTTP server on 127.0.0.1 speaking OpenAI's chat-completions API with canned replies, whole or
streamed (server-sent events, word by word, usage last when the request asks for it), and faults on demand
(a 429 with Retry-After, a 500, a connection dropped mid-request; with status 200, a body that is not
JSON or is cut short, an empty `choices`, an empty completion), and, as a server without structured output
does, a 400 for any request that carries a `response_format` (`refuse_response_format`).

Named for what it is: it stands in for a remote provider where a test is about what happens around the
LLM (stores, concurrency, retries, tracing), never about what an LLM would answer. The client side is the
real one (LangChain's ChatOpenAI over the OpenAI SDK), so request shapes, retries and backoff are real.
"""

from __future__ import annotations

import json
import re
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any, Literal

from servers import serving

Fault = Literal["429", "500", "401", "drop", "not-json", "truncated", "no-choices", "empty", "refused"]
# Faults answered with status 200, as a misbehaving server does: a body that is not JSON, a completion cut
# short, one with an empty `choices` list, one whose content is empty (no completion tokens either)
_BROKEN_REPLIES = ("not-json", "truncated", "no-choices", "empty")


def prompt_of(body: dict[str, Any]) -> str:
    """A request's messages as one text, as tests match replies against it."""
    return "\n".join(str(message.get("content", "")) for message in body["messages"])


@dataclass
class Request:
    """One chat-completions request as it arrived: its prompt, when, and what it was answered with."""

    prompt: str
    arrived: float
    outcome: str  # "ok", the fault, or "refused" (a response_format refused)
    headers: dict[str, str]
    response_format: dict[str, Any] | None = None


@dataclass
class OpenAIStub:
    """`reply(prompt)` gives the completion; `fault(prompt, earlier)` a fault for a request, given how many
    requests with the same prompt came before it, or None to answer. `hold(prompt)` runs while its request is
    in flight, so a test can keep concurrent requests waiting for each other (`max_in_flight` counts how many
    were in flight at once). `streamed(prompt, words)` is
    called each time a streamed reply has sent `words` words, so a test can hold a reply mid-stream. With
    `refuse_response_format`, a request asking for a reply's shape gets a 400 naming `response_format`."""

    reply: Callable[[str], str]
    fault: Callable[[str, int], Fault | None] = lambda prompt, earlier: None
    hold: Callable[[str], None] = lambda prompt: None
    streamed: Callable[[str, int], None] = lambda prompt, words: None
    refuse_response_format: bool = False
    base_url: str = ""
    requests: list[Request] = field(default_factory=list)
    max_in_flight: int = 0
    _in_flight: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def handle(self, body: dict[str, Any], headers: dict[str, str]) -> tuple[Fault | None, str]:
        """Record the request and decide its answer: (fault or None, reply text)."""
        prompt, shape = prompt_of(body), body.get("response_format")
        with self._lock:
            earlier = sum(1 for request in self.requests if request.prompt == prompt)
            fault: Fault | None = "refused" if shape and self.refuse_response_format else None
            fault = fault or self.fault(prompt, earlier)
            self.requests.append(Request(prompt, time.monotonic(), fault or "ok", headers, shape))
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)
        try:
            self.hold(prompt)
        finally:
            with self._lock:
                self._in_flight -= 1
        return fault, "" if fault else self.reply(prompt)


def usage(text: str, prompt: str) -> dict[str, int]:
    """The token counts the stub reports for a reply: words, of the request's messages and of the reply."""
    prompt_tokens, completion_tokens = len(prompt.split()), len(text.split())
    return {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }


def _completion(model: str, text: str, prompt: str) -> bytes:
    return json.dumps(
        {
            "id": "chatcmpl-stub",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
            ],
            "usage": usage(text, prompt),
        }
    ).encode()


def _body(fault: Fault | None, model: str, text: str, prompt: str) -> bytes:
    """The body of a 200 reply: the completion of `text`, or as the fault breaks it."""
    if fault == "not-json":
        return b"<html><body>502 Bad Gateway</body></html>"
    if fault == "empty":
        return _completion(model, "", prompt)
    whole = _completion(model, text, prompt)
    if fault == "truncated":
        return whole[: len(whole) // 2]
    if fault == "no-choices":
        return json.dumps({**json.loads(whole), "choices": []}).encode()
    return whole


def _chunk(model: str, choices: list[dict[str, Any]], **extra: Any) -> bytes:
    """One server-sent event of a streamed chat completion."""
    body = {"id": "chatcmpl-stub", "object": "chat.completion.chunk", "created": int(time.time())}
    return b"data: " + json.dumps({**body, "model": model, "choices": choices, **extra}).encode() + b"\n\n"


@contextmanager
def serve(stub: OpenAIStub) -> Iterator[OpenAIStub]:
    """Run `stub` on a free port of 127.0.0.1 (its `base_url` ends in /v1) until the block ends."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as real servers do: a dropped connection is then real
        # a reply's headers and body leave as they are written, as real servers send them: with Nagle's
        # algorithm on, the body waited for the client's delayed ACK of the headers, about 40 ms a call
        disable_nagle_algorithm = True

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))))
            fault, text = stub.handle(body, {k.lower(): v for k, v in self.headers.items()})
            if fault == "drop":
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            if fault is None and body.get("stream"):
                self._stream(body, text)
                return
            if fault is None or fault in _BROKEN_REPLIES:
                self._send(200, _body(fault, body.get("model", "stub"), text, str(body["messages"])), {})
                return
            if fault == "refused":  # worded as OpenAI words a parameter it does not take
                message = "Unrecognized request argument supplied: response_format"
                error = {"error": {"message": message, "type": "invalid_request_error"}}
                self._send(400, json.dumps(error).encode(), {})
                return
            if fault == "401":  # a server that echoes the whole key it was sent, as some do
                key = self.headers.get("authorization", "").removeprefix("Bearer ")
                message = f"Incorrect API key provided: {key}"
                error = {"error": {"message": message, "type": "invalid_api_key"}}
                self._send(401, json.dumps(error).encode(), {})
                return
            status, retry = (429, {"retry-after": "1"}) if fault == "429" else (500, {})
            error = {"error": {"message": f"injected {status}", "type": "server_error"}}
            self._send(status, json.dumps(error).encode(), retry)

        def _stream(self, body: dict[str, Any], text: str) -> None:
            """The reply word by word as OpenAI streams it, then its finish, then (asked for with
            stream_options.include_usage) its usage, on a connection closed at the end."""
            model, prompt = body.get("model", "stub"), str(body["messages"])
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("connection", "close")
            self.end_headers()
            self.close_connection = True
            self.wfile.write(_chunk(model, [{"index": 0, "delta": {"role": "assistant", "content": ""}}]))
            words = [word for word in re.split(r"(?<=\S)(?=\s)", text) if word]
            for sent, word in enumerate(words, start=1):
                self.wfile.write(_chunk(model, [{"index": 0, "delta": {"content": word}}]))
                self.wfile.flush()
                stub.streamed(prompt_of(body), sent)
            self.wfile.write(_chunk(model, [{"index": 0, "delta": {}, "finish_reason": "stop"}]))
            if (body.get("stream_options") or {}).get("include_usage"):
                self.wfile.write(_chunk(model, [], usage=usage(text, prompt)))
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()

        def _send(self, status: int, payload: bytes, extra: dict[str, str]) -> None:
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(payload)))
            for name, value in extra.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: object) -> None:  # quiet test output
            pass

    with serving(Handler) as url:
        stub.base_url = f"{url}/v1"
        yield stub
