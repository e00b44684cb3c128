"""Configuration: hopgraph.toml, HOPGRAPH_* over it, per-role overrides, and bad values."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage

from hopgraph import Settings
from hopgraph.evaluate import model_identity, settings_summary
from hopgraph.providers import ConfigError, build_chat_model
from hopgraph.settings import RoleSettings, SettingsError
from nodes.window import MESSAGE_TOKENS, PROMPT_TOKENS, estimated_tokens
from stores.index import BuildResult, IndexParams, Manifest


@pytest.fixture
def toml(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "hopgraph.toml"
    path.write_text(
        'llm = "openai:gpt-4o-mini"\n'
        'base_url = "http://127.0.0.1:8000/v1"\n'
        "chunk_size = 128\n"
        "[roles.generator]\n"
        'llm = "local"\n'
        "[roles.rewriter]\n"
        'base_url = "http://127.0.0.1:9000/v1"\n'
    )
    monkeypatch.setenv("HOPGRAPH_CONFIG", str(path))
    for name in ("HOPGRAPH_LLM", "HOPGRAPH_BASE_URL", "HOPGRAPH_CHUNK_SIZE"):
        monkeypatch.delenv(name, raising=False)
    return path


def test_toml_is_read_and_roles_fall_back_field_by_field(toml: Path) -> None:
    settings = Settings()
    assert settings.llm == "openai:gpt-4o-mini" and settings.chunk_size == 128
    assert settings.role("generator").llm == "local"
    assert settings.role("generator").base_url is None  # a role naming its own model does not inherit the URL
    assert settings.role("rewriter").llm == "openai:gpt-4o-mini"
    assert settings.role("rewriter").base_url == "http://127.0.0.1:9000/v1"
    assert settings.role("judge").base_url == "http://127.0.0.1:8000/v1"


def test_environment_overrides_the_file(toml: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOPGRAPH_LLM", "local")
    monkeypatch.setenv("HOPGRAPH_ROLES__JUDGE__LLM", "openai:gpt-4o")
    settings = Settings()
    assert settings.llm == "local"
    assert settings.role("judge").llm == "openai:gpt-4o"
    assert settings.role("generator").llm == "local"


def test_unknown_keys_are_rejected_by_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "hopgraph.toml"
    path.write_text('lmm = "local"\n')
    monkeypatch.setenv("HOPGRAPH_CONFIG", str(path))
    with pytest.raises(SettingsError) as raised:
        Settings()
    assert str(raised.value) == (
        f"{path}: lmm is not a setting (did you mean llm?): remove it or correct its name"
    )
    # a misspelt secret: named by its key, its value never shown
    path.write_text('api_kye = "sk-planted-secret"\n')
    with pytest.raises(SettingsError) as raised:
        Settings()
    assert str(raised.value) == (
        f"{path}: api_kye is not a setting (did you mean api_key?): remove it or correct its name"
    )


def test_a_provider_spec_without_a_provider_is_a_clear_error(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, llm="gpt-4o-mini")
    with pytest.raises(ConfigError, match="provider:model"):
        build_chat_model(settings.role("generator"), settings)


def test_a_role_can_run_its_own_local_gguf(tmp_path: Path) -> None:
    gguf = tmp_path / "other.gguf"
    gguf.write_bytes(b"GGUF")  # never loaded: the chat model opens its file on the first call
    settings = Settings(data_dir=tmp_path, roles={"summarizer": {"llm": f"local:{gguf}"}})
    built = build_chat_model(settings.role("summarizer"), settings)
    assert built.model_id == "local:other.gguf" and built.exclusive
    assert built.model.model_path == str(gguf)


def test_a_missing_local_gguf_is_a_clear_error_naming_the_path(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, roles={"summarizer": {"llm": "local:/nowhere/model.gguf"}})
    with pytest.raises(ConfigError, match=r"no GGUF file at /nowhere/model\.gguf"):
        build_chat_model(settings.role("summarizer"), settings)


def test_an_openai_compatible_role_gets_base_url_and_a_placeholder_key(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, llm="openai:qwen", base_url="http://127.0.0.1:1/v1", max_retries=5)
    built = build_chat_model(settings.role("generator"), settings)
    assert built.model_id == "openai:qwen@http://127.0.0.1:1/v1" and not built.exclusive
    assert str(built.model.openai_api_base) == "http://127.0.0.1:1/v1"
    assert built.model.max_retries == 5


def test_each_model_carries_its_window_and_how_it_counts_a_prompt(tmp_path: Path, gguf_path: Path) -> None:
    """What CxtInt sizes its prompt by (nodes.window): a local GGUF's window is local_n_ctx and it counts
    a text in its own vocabulary (Qwen2.5 writes each digit as a token), a provider's model's window is
    provider_n_ctx and its prompts are estimated."""
    settings = Settings(
        data_dir=tmp_path, local_model_path=gguf_path, local_n_ctx=4096, provider_n_ctx=128_000
    )
    local = build_chat_model(RoleSettings(llm="local"), settings)
    asked = [HumanMessage("1974")]
    assert local.context_window == 4096
    assert local.count_prompt(asked) == PROMPT_TOKENS + MESSAGE_TOKENS + 4
    remote = build_chat_model(RoleSettings(llm="openai:qwen", base_url="http://127.0.0.1:1/v1"), settings)
    assert remote.context_window == 128_000 and remote.count_prompt(asked) == estimated_tokens(asked)


SECRET = "sk-top-level-secret"
TOP_SERVER = "http://127.0.0.1:8000/v1"


def servers(tmp_path: Path) -> Settings:
    """A top-level server with its key, and roles on other servers, another endpoint and the same server."""
    return Settings(
        data_dir=tmp_path,
        llm="openai:qwen",
        base_url=TOP_SERVER,
        api_key=SECRET,
        roles={
            "rewriter": RoleSettings(base_url="http://127.0.0.1:9000/v1"),
            "judge": RoleSettings(base_url="http://127.0.0.1:9001/v1", api_key="sk-judge"),
            "generator": RoleSettings(llm="openai:gpt-4o-mini"),  # OpenAI's own endpoint
            "reasoner": RoleSettings(llm="openai:qwen-32b", base_url=TOP_SERVER),
        },
    )


def summary_of(settings: Settings) -> dict[str, Any]:
    """The settings summary an evaluation's run line records, over a stand-in index."""
    manifest = Manifest(
        name="eval-toy-0",
        build_id="b",
        corpus_hash="c",
        corpus_path="/corpus",
        embedding_model="all-MiniLM-L6-v2",
        dimension=384,
        params=IndexParams(),
        documents=1,
        chunks=1,
        created_at="2026-11-22T00:00:00+00:00",
        seconds=0.0,
    )
    return settings_summary(settings, BuildResult(manifest, "unchanged", 0.0))


def key_of(role: RoleSettings) -> str | None:
    """The key a role sends (a SecretStr, read out)."""
    return role.api_key.get_secret_value() if role.api_key else None


def test_a_role_with_its_own_server_gets_only_its_own_key(tmp_path: Path) -> None:
    settings = servers(tmp_path)
    assert settings.role("rewriter").api_key is None
    assert key_of(settings.role("judge")) == "sk-judge"
    assert settings.role("generator").api_key is None and settings.role("generator").base_url is None
    # the same server as the top level: its key is meant for it
    assert key_of(settings.role("reasoner")) == SECRET
    # no override at all: the top-level server, with its key
    assert settings.role("summarizer") == RoleSettings(llm="openai:qwen", base_url=TOP_SERVER, api_key=SECRET)
    # what goes over the wire to the rewriter's server is the keyless placeholder, not the secret
    rewriter = build_chat_model(settings.role("rewriter"), settings).model
    assert rewriter.openai_api_key.get_secret_value() == "not-needed"


def test_a_role_on_the_same_provider_endpoint_keeps_the_key(tmp_path: Path) -> None:
    settings = Settings(
        data_dir=tmp_path,
        llm="openai:gpt-4o",
        api_key=SECRET,
        roles={"judge": RoleSettings(llm="openai:gpt-4o-mini"), "rewriter": RoleSettings(llm="anthropic:x")},
    )
    assert key_of(settings.role("judge")) == SECRET
    assert settings.role("rewriter").api_key is None


def test_no_key_reaches_the_settings_summary_of_a_run(tmp_path: Path) -> None:
    """The summary is written into every run line of results.jsonl, a file meant to be shared."""
    summary = summary_of(servers(tmp_path))
    written = json.dumps(summary)
    assert SECRET not in written and "sk-judge" not in written
    assert "api_key" not in summary and "api_key" not in summary["roles"]["judge"]
    assert summary["roles"]["judge"]["base_url"] == "http://127.0.0.1:9001/v1"
    assert SECRET not in json.dumps(model_identity(summary))


def test_the_model_identity_of_a_summary_names_each_role_model(tmp_path: Path) -> None:
    """What an evaluation's settings key is made of, besides each method's context."""
    assert model_identity(summary_of(servers(tmp_path))) == {
        "llm": f"openai:qwen@{TOP_SERVER}",
        "llm.generator": "openai:gpt-4o-mini",
        "llm.judge": "openai:qwen@http://127.0.0.1:9001/v1",
        "llm.rewriter": "openai:qwen@http://127.0.0.1:9000/v1",
        "llm.reasoner": f"openai:qwen-32b@{TOP_SERVER}",
        "local_model_path": None,
        "embedding_model": "all-MiniLM-L6-v2",
        "embedding_backend": "onnx",
        "reranker": "hybrid",
        "reranker_model": None,
    }
    # a role set to the model it would inherit is no other model, and the reranker a run line from
    # before 2026-11-22 calls "none" is today's "embedding"
    now = summary_of(
        Settings(data_dir=tmp_path, roles={"judge": RoleSettings(llm="local")}, reranker="embedding")
    )
    assert model_identity(now) == model_identity({**now, "roles": {}, "reranker": "none"})
    assert model_identity(now)["llm"] == "local" and "llm.judge" not in model_identity(now)


def test_each_choice_of_index_settings_gets_its_own_evaluation_index(tmp_path: Path) -> None:
    """Interleaved runs comparing chunk sizes or the metadata line must not rebuild one index at every
    switch: their index names differ, the defaults keep the name indexes had before, and a metadata field
    no document carries changes nothing."""
    from evals.datasets import load_benchmark
    from hopgraph.evaluate import index_name

    shared = Path(__file__).resolve().parents[2] / "shared" / "data"
    news = load_benchmark("multihop_rag", shared / "multihop_rag", 5)
    wiki = load_benchmark("hotpotqa", shared / "hotpotqa", 5)
    defaults = Settings(data_dir=tmp_path)
    name = index_name(news, defaults)
    assert name.startswith("eval-multihop_rag-") and len(name.split("-")) == 3  # as before
    without_line = index_name(news, Settings(data_dir=tmp_path, embed_metadata=[]))
    finer = index_name(news, Settings(data_dir=tmp_path, chunk_size=128))
    assert len({name, without_line, finer}) == 3
    assert without_line.startswith(f"{name}-") and finer.startswith(f"{name}-")
    assert index_name(news, Settings(data_dir=tmp_path, chunk_size=128)) == finer  # stable
    # HotpotQA's paragraphs carry no source or date: the metadata line's setting does not split its index
    assert index_name(wiki, Settings(data_dir=tmp_path, embed_metadata=[])) == index_name(wiki, defaults)
