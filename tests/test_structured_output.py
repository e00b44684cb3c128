"""Structured output (issue 34 item 1): parsed roles ask for their reply's JSON shape where the provider takes
one, and their parsers read it first.

What is real: the embedded GGUF through llama-cpp-python's schema grammar (streamed and whole), llama.cpp's
own OpenAI-compatible server (`llama_cpp.server`), and LangChain's ChatOpenAI over the OpenAI SDK against
the stub server of tests/openai_stub.py, which stands in for a provider that refuses `response_format` or
takes it (what is tested there is the request and the fallback around the LLM, never an answer). The
parsers are fed replies written here: a structured one must be read as its shape, a malformed one must
reach the tolerant parser with its fallback recorded.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from langchain_openai import ChatOpenAI
from langgraph.runtime import Runtime
from openai_stub import OpenAIStub, serve
from test_openai_compatible import ALIAS, MODEL, llama_server  # noqa: F401  (the server fixture)

from graphs.prompt_versions import shaped_roles
from graphs.registry import METHODS
from graphs.resp.context import ReSPContext
from graphs.resp.steps import PlanNext
from hopgraph.evaluate import method_versions
from hopgraph.local_model import LocalLlamaChat
from hopgraph.providers import build_chat_model
from hopgraph.settings import RoleSettings, Settings
from nodes.decompose import Decompose
from nodes.judge import JudgeSufficiency
from nodes.llm import LLMGateway, ResponseCache, RoleModel, response_format
from nodes.questions import LLMQuestionWriter
from prompts import decompose, edge_judge, metadata, questions, reader, resp_reasoner
from prompts.structured import UNREAD, YES_NO, fits

VERDICT_PROMPT = [
    SystemMessage("You answer questions about geography."),
    HumanMessage("Is Paris the capital of France? Reply with Yes or No only."),
]
SPLIT_PROMPT = [
    SystemMessage("Output only a JSON array of strings, one question per string."),
    HumanMessage("Split into two questions: Were Ada Lovelace and Alan Turing both British?\nJSON array:"),
]


# ---- the parsers: a structured reply is read as its shape; a malformed one falls back, recorded


def test_decomposition_reads_the_array_and_notes_a_reply_that_is_not_one() -> None:
    reply = '["Who wrote \\"Dune\\"?", "When was it published?"]'
    assert decompose.parse(reply, "q", 3, structured=True) == (
        ['Who wrote "Dune"?', "When was it published?"],
        None,
    )
    cut = '["Who wrote Dune?", "When was it publ'  # cut off at the token limit
    subs, fallback = decompose.parse(cut, "q", 3, structured=True)
    assert subs == ["Who wrote Dune?"] and fallback is not None and fallback.startswith(UNREAD)
    assert decompose.parse(cut, "q", 3) == (
        ["Who wrote Dune?"],
        "broken JSON array: its 1 quoted item(s) kept",
    )


def test_judge_verdicts_read_the_json_string_and_record_a_malformed_one() -> None:
    assert reader.verdict('"Yes"', structured=True) is True
    assert reader.verdict('"No"', structured=True) is False
    with serve(OpenAIStub(reply=lambda prompt: '"Ye')) as stub:  # a reply cut short
        gateway = LLMGateway({}, _remote_model(stub.base_url), structured=True)
        update = JudgeSufficiency(gateway, "judge", lambda state: VERDICT_PROMPT, max_tokens=3)({})
    assert update["stop"] == "" and update["fallbacks"][0] == f"judge: {UNREAD}"
    assert "taken as No" in update["fallbacks"][1]
    assert stub.requests[0].response_format == response_format("openai", reader.JUDGE_REPLY)


def test_plan_reads_the_json_string_unescaped() -> None:
    assert resp_reasoner.parse_plan('"Who wrote \\"Dune\\"?"', structured=True) == 'Who wrote "Dune"?'
    assert resp_reasoner.parse_plan('"Who wrote \\"Dune\\"?"') == 'Who wrote \\"Dune\\"?'  # free text
    assert resp_reasoner.PLAN_REPLY.read('"Who wrote') is None  # cut short: the tolerant reading's


@pytest.mark.parametrize(
    ("reply", "plan", "fallbacks"),
    [
        ('"Who wrote \\"Dune\\"?"', 'Who wrote "Dune"?', []),
        ('"Who wrote Dune?', "Who wrote Dune?", [f"plan: {UNREAD}"]),  # cut short: read as free text
    ],
)
def test_the_planner_node_records_a_plan_that_is_not_its_shape(
    reply: str, plan: str, fallbacks: list
) -> None:
    with serve(OpenAIStub(reply=lambda prompt: reply)) as stub:
        gateway = LLMGateway({}, _remote_model(stub.base_url), structured=True)
        update = PlanNext(gateway)(
            {"question": "When was Dune's author born?"}, Runtime(context=ReSPContext())
        )
    assert (update["sub_question"], update["fallbacks"]) == (plan, fallbacks)
    assert stub.requests[0].response_format == response_format("openai", resp_reasoner.PLAN_REPLY)


def test_the_decomposer_node_records_a_reply_that_is_not_its_shape() -> None:
    with serve(OpenAIStub(reply=lambda prompt: 'Sub-questions: ["Who wrote Dune?"]')) as stub:
        gateway = LLMGateway({}, _remote_model(stub.base_url), structured=True)
        update = Decompose(gateway)({"question": "When was Dune's author born?"}, Runtime(context=None))
    assert update["sub_questions"] == ["Who wrote Dune?"]
    assert update["fallbacks"] == [f"decompose: {UNREAD}"]


def test_metadata_filter_reads_the_object_and_notes_a_reply_that_is_not_it() -> None:
    reply = '{"sources": ["The Verge"], "days": [], "from": "2023-10-01", "to": null}'
    extracted, notes = metadata.parse(reply, structured=True)
    assert extracted == metadata.ExtractedFilter(("The Verge",), "2023-10-01", None, ()) and notes == []
    extracted, notes = metadata.parse('{"sources": ["The Verge"], "days": []}', structured=True)
    assert extracted is not None and extracted.sources == ("The Verge",) and notes == [UNREAD]
    assert metadata.parse('{"sources": ["The Ver', structured=True) == (None, [UNREAD, "broken JSON object"])


def test_question_writer_reads_the_array_and_counts_a_reply_that_is_not_one() -> None:
    chunk = "Frank Herbert's novel Dune was published in 1965 by Chilton Books."
    reply = '["Who wrote the novel Dune?", "When was Dune published?"]'
    parsed = questions.parse(reply, chunk, 2, structured=True)
    assert parsed.questions == ["Who wrote the novel Dune?", "When was Dune published?"]
    assert "structured_unread" not in parsed.counts
    assert questions.parse(reply, chunk, 2).questions != parsed.questions  # free text reads it otherwise
    lines = "Who wrote the novel Dune?\nWhen was Dune published?"
    parsed = questions.parse(lines, chunk, 2, structured=True)
    assert parsed.questions == ["Who wrote the novel Dune?", "When was Dune published?"]
    assert parsed.counts["structured_unread"] == 1
    # three asked, two given (a server that took the array but not its count): read as the array it is
    assert questions.parse(reply, chunk, 3, structured=True).questions == parsed.questions


def test_the_question_writer_asks_for_exactly_the_count_of_questions() -> None:
    """Held to "at least one string" the 1.5B model closed most arrays after one or two questions; each
    call now asks for the count it wants, and the build's identity names that rule."""
    asked = questions.reply_shape(3)
    assert asked.schema["minItems"] == asked.schema["maxItems"] == 3
    assert fits(["a?", "b?", "c?"], asked.schema) and not fits(["a?", "b?"], asked.schema)
    three = '["Who wrote Dune?", "When was Dune published?", "Who published Dune?"]'
    with serve(OpenAIStub(reply=lambda prompt: three)) as stub:
        writer = LLMQuestionWriter(LLMGateway({}, _remote_model(stub.base_url), structured=True), 1)
        written, counts = writer.write("Dune", "Frank Herbert's novel Dune was published in 1965.", 3)
    assert stub.requests[0].response_format == response_format("openai", asked)
    assert written == json.loads(three) and counts == {"kept": 3}
    assert writer.identity.endswith(f"|questions-{questions.ASKED.version}")


def test_edge_verdict_reads_the_json_string_and_a_cut_one_is_malformed() -> None:
    assert edge_judge.verdict('"Yes"', structured=True) == edge_judge.YES
    assert edge_judge.verdict('"No"', structured=True) == edge_judge.NO
    assert edge_judge.verdict('"', structured=True) == edge_judge.MALFORMED


def test_shapes_check_types_not_just_json() -> None:
    assert fits(["a", "b"], decompose.REPLY.schema) and not fits([], decompose.REPLY.schema)
    assert not fits(["a", 1], decompose.REPLY.schema) and not fits([" "], decompose.REPLY.schema)
    assert not fits({"sources": [], "days": [], "from": None, "to": None, "x": 1}, metadata.REPLY.schema)
    assert not fits({"sources": [], "days": [], "from": True, "to": None}, metadata.REPLY.schema)
    assert YES_NO.read('"Yes"') == "Yes" and YES_NO.read('"Maybe"') is None and YES_NO.read("Yes") is None


# ---- the gateway against OpenAI-compatible servers: asked, refused, and keyed apart


def _remote_model(base_url: str) -> RoleModel:
    settings = Settings(timeout=10, max_retries=0)
    return build_chat_model(RoleSettings(llm=MODEL, base_url=base_url), settings)


def test_a_server_refusing_response_format_is_asked_without_it_once_and_then_never(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with serve(OpenAIStub(reply=lambda prompt: "Yes", refuse_response_format=True)) as stub:
        gateway = LLMGateway({}, _remote_model(stub.base_url), structured=True)
        with caplog.at_level(logging.WARNING, logger="hopgraph"):
            first = gateway.complete("judge", VERDICT_PROMPT, max_tokens=3, shape=reader.JUDGE_REPLY)
            second = gateway.complete("judge", VERDICT_PROMPT, max_tokens=3, shape=reader.JUDGE_REPLY)
            other = gateway.complete("decomposer", SPLIT_PROMPT, max_tokens=20, shape=decompose.REPLY)
    assert [r.outcome for r in stub.requests] == ["refused", "ok", "ok", "refused", "ok"]
    assert [r.response_format is not None for r in stub.requests] == [True, False, False, True, False]
    assert (first.text, first.structured, first.usage["structured_refused"]) == ("Yes", False, 1)
    assert (second.structured, second.usage["structured_refused"]) == (False, 0)
    assert reader.verdict(first.text, first.structured) is True  # the tolerant reading, as before
    assert not gateway.structures("judge") and not gateway.structures("decomposer")
    assert other.usage["structured_refused"] == 1
    refusals = [r.getMessage() for r in caplog.records if "refused structured output" in r.getMessage()]
    assert [line.split("'")[1] for line in refusals] == ["judge", "decomposer"]  # once per role, logged
    assert "400" in refusals[0] and "response_format" in refusals[0]


def test_a_server_taking_response_format_gets_the_schema_and_the_cache_keys_it_apart(tmp_path: Path) -> None:
    with serve(OpenAIStub(reply=lambda prompt: '"Yes"')) as stub:
        model = _remote_model(stub.base_url)
        cache = ResponseCache(tmp_path / "cache.sqlite")
        plain = LLMGateway({}, model, cache)
        shaped = LLMGateway({}, model, cache, structured=True)
        for gateway in (plain, shaped, shaped, plain):
            gateway.complete("judge", VERDICT_PROMPT, max_tokens=3, shape=reader.JUDGE_REPLY)
    # one request with the setting off, one with it on; the repeats were answered by the cache
    assert [r.response_format for r in stub.requests] == [None, response_format("openai", reader.JUDGE_REPLY)]
    assert stub.requests[1].response_format == {
        "type": "json_schema",
        "json_schema": {"name": "verdict", "schema": {"type": "string", "enum": ["Yes", "No"]}},
    }


def test_a_streamed_reply_from_a_server_taking_response_format_is_the_reply_once() -> None:
    """LangGraph's stream_mode="messages" streams the call: with response_format, ChatOpenAI streams through
    the SDK's structured-output helper, which must give the reply's words once, not again at its end."""
    split = '["Who wrote Dune?", "When was it published?"]'
    with serve(OpenAIStub(reply=lambda prompt: split)) as stub:
        model = _remote_model(stub.base_url).model
        bound = model.bind(max_tokens=30, response_format=response_format("openai", decompose.REPLY))
        chunks = [str(chunk.content) for chunk in bound.stream(SPLIT_PROMPT)]
    assert "".join(chunks) == split and len([c for c in chunks if c]) > 1
    assert stub.requests[0].response_format == response_format("openai", decompose.REPLY)


def test_the_evaluation_key_and_an_index_extras_identity_follow_the_setting() -> None:
    off, on = Settings(structured_output=False), Settings(structured_output=True)
    # every method's reader checks its refusals with a shaped reply (prompts.refusal_check), so the setting
    # changes every key; quote and biqog also through the shaped roles that write their index extras
    for method in METHODS:
        assert "refusal_check" in shaped_roles(method), method
        assert method_versions(method, off) != method_versions(method, on), method
    model = RoleModel(LocalLlamaChat(model_path="unused.gguf"), "m", "m", reply_format="llama.cpp")
    identities = {
        LLMQuestionWriter(LLMGateway({}, model, structured=structured), 1).identity
        for structured in (False, True)
    }
    assert len(identities) == 2


# ---- real models: the embedded GGUF through the gateway, and llama.cpp's OpenAI-compatible server


@pytest.fixture(scope="module")
def local_gateway(gguf_path: Path) -> Iterator[LLMGateway]:
    """The embedded model with a small context, structured output on."""
    model = LocalLlamaChat(model_path=str(gguf_path), n_ctx=1024, n_threads=2, contexts=1)
    yield LLMGateway(
        {}, RoleModel(model, "local", "local", exclusive=True, reply_format="llama.cpp"), structured=True
    )


@pytest.mark.llm
def test_the_embedded_model_keeps_to_a_verdict_and_a_decomposition_shape(local_gateway: LLMGateway) -> None:
    verdict = local_gateway.complete("judge", VERDICT_PROMPT, max_tokens=3, shape=reader.JUDGE_REPLY)
    assert verdict.structured and reader.JUDGE_REPLY.read(verdict.text) in ("Yes", "No"), verdict.text
    split = local_gateway.complete("decomposer", SPLIT_PROMPT, max_tokens=40, shape=decompose.REPLY)
    assert split.structured and decompose.REPLY.read(split.text) is not None, split.text
    subs, fallback = decompose.parse(split.text, "q", 3, split.structured)
    assert fallback is None and subs == [item.strip() for item in json.loads(split.text)][:3]


@pytest.mark.llm
def test_the_embedded_model_writes_exactly_the_questions_asked(local_gateway: LLMGateway) -> None:
    chunk = (
        "Frank Herbert's novel Dune was published in 1965 by Chilton Books. It won the Hugo Award in 1966."
    )
    writer = LLMQuestionWriter(local_gateway, 1)
    reply = local_gateway.complete(
        "question_writer",
        questions.messages("Dune", chunk, 3),
        max_tokens=questions.max_tokens(3),
        shape=questions.reply_shape(3),
    )
    assert reply.structured and len(questions.REPLY.read(reply.text) or []) == 3, reply.text
    written, counts = writer.write("Dune", chunk, 3)
    assert "structured_unread" not in counts and len(written) == counts["kept"] <= 3, (written, counts)


@pytest.mark.llm
def test_the_embedded_models_streamed_reply_keeps_to_the_shape(local_gateway: LLMGateway) -> None:
    """LangGraph's stream_mode="messages" streams the model's reply: the grammar holds token by token."""
    model = local_gateway.model_for("judge").model
    bound = model.bind(max_tokens=3, response_format=response_format("llama.cpp", YES_NO))
    chunks = [str(chunk.content) for chunk in bound.stream(VERDICT_PROMPT)]
    assert len([c for c in chunks if c]) >= 2 and YES_NO.read("".join(chunks)) in ("Yes", "No"), chunks


@pytest.mark.server
@pytest.mark.llm  # the embedded model, served by llama_cpp.server
@pytest.mark.timeout(600)
def test_llama_cpp_server_takes_a_schema_as_json_object_and_refuses_json_schema(
    llama_server: str,  # noqa: F811
) -> None:
    """llama-cpp-python's server (0.3.36) takes `response_format` only as `{"type": "json_object",
    "schema": ...}` (its grammar); OpenAI's `json_schema` type fails its request validation, answered as a
    500 naming response_format. So through the gateway the refusal path is the real one, and the schema is
    checked with the request the server does take."""
    gateway = LLMGateway({}, _remote_model(llama_server), structured=True)
    reply = gateway.complete("judge", VERDICT_PROMPT, max_tokens=3, shape=reader.JUDGE_REPLY)
    assert (reply.structured, reply.usage["structured_refused"]) == (False, 1)
    assert reader.verdict(reply.text) is not None, reply.text  # the plain reply, read as free text
    client = ChatOpenAI(model=ALIAS, base_url=llama_server, api_key="none", temperature=0, max_retries=0)
    messages: list[BaseMessage] = SPLIT_PROMPT
    shaped = client.bind(max_tokens=40, response_format=response_format("llama.cpp", decompose.REPLY))
    text = str(shaped.invoke(messages).content)
    assert decompose.REPLY.read(text) is not None, text
