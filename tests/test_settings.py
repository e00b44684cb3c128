"""Configuration: hopgraph.toml, HOPGRAPH_* over it, per-role overrides, and bad values."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from hopgraph import Settings
from hopgraph.providers import ConfigError, build_chat_model


@pytest.fixture
def toml(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "hopgraph.toml"
    path.write_text(
        'llm = "openai:gpt-4o-mini"\n'
        'base_url = "http://127.0.0.1:8000/v1"\n'
        "chunk_size = 128\n"
        "[roles.generator]\n"
        'llm = "local"\n'
        "[roles.planner]\n"
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
    assert settings.role("planner").llm == "openai:gpt-4o-mini"
    assert settings.role("planner").base_url == "http://127.0.0.1:9000/v1"
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
    with pytest.raises(ValidationError, match="lmm"):
        Settings()


def test_a_provider_spec_without_a_provider_is_a_clear_error(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, llm="gpt-4o-mini")
    with pytest.raises(ConfigError, match="provider:model"):
        build_chat_model(settings.role("generator"), settings)


def test_an_openai_compatible_role_gets_base_url_and_a_placeholder_key(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, llm="openai:qwen", base_url="http://127.0.0.1:1/v1", max_retries=5)
    built = build_chat_model(settings.role("generator"), settings)
    assert built.model_id == "openai:qwen@http://127.0.0.1:1/v1" and not built.exclusive
    assert str(built.model.openai_api_base) == "http://127.0.0.1:1/v1"
    assert built.model.max_retries == 5
