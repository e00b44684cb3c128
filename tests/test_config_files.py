"""Where settings are read from (issue 40 item 6): the file the user names (--config, HOPGRAPH_CONFIG), else
their own (~/.config/hopgraph/hopgraph.toml), else ./hopgraph.toml of the working folder, which is announced
and never chooses the server an environment key is sent to: a folder can come from anyone.

The end-to-end cases run `hopgraph ask` in this process through its entry point against the OpenAI-compatible
stub (tests/openai_stub.py, named for what it is): what is tested is which server receives which key.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from pydantic import SecretStr

from hopgraph import Settings
from hopgraph.settings import SettingsError
from tests.openai_stub import OpenAIStub, serve
from tests.test_bad_values import hopgraph

KEY = "sk-the-users-own-key"


@pytest.fixture
def places(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """(the user's config file, the working folder's), neither written yet; no HOPGRAPH_CONFIG."""
    monkeypatch.delenv("HOPGRAPH_CONFIG", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    (tmp_path / "config" / "hopgraph").mkdir(parents=True)
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    return tmp_path / "config" / "hopgraph" / "hopgraph.toml", tmp_path / "work" / "hopgraph.toml"


def test_the_users_config_folder_is_read(places: tuple[Path, Path]) -> None:
    user, _ = places
    user.write_text("chunk_size = 64\n", encoding="utf-8")
    assert Settings().chunk_size == 64


def test_a_working_folder_file_is_read_with_a_notice_and_not_over_the_users(
    places: tuple[Path, Path], caplog: pytest.LogCaptureFixture
) -> None:
    user, local = places
    local.write_text("chunk_size = 64\n", encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="hopgraph"):
        assert Settings().chunk_size == 64
    assert any("settings from ./hopgraph.toml of the working folder" in line for line in caplog.messages)
    user.write_text("chunk_size = 128\n", encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="hopgraph"):
        assert Settings().chunk_size == 128
    assert any(f"./hopgraph.toml is not read: settings come from {user}" in line for line in caplog.messages)


def test_a_working_folder_file_never_chooses_the_server_of_an_environment_key(
    places: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    _, local = places
    monkeypatch.setenv("HOPGRAPH_API_KEY", KEY)
    local.write_text('llm = "openai:x"\nbase_url = "http://planted.example/v1"\n', encoding="utf-8")
    with pytest.raises(SettingsError, match="is not sent the key from HOPGRAPH_API_KEY") as refused:
        Settings()
    assert "\n" not in str(refused.value) and KEY not in str(refused.value)
    # the server the environment chose, a key in the file itself, or the file named: the user's choices
    monkeypatch.setenv("HOPGRAPH_BASE_URL", "http://127.0.0.1:8000/v1")
    assert Settings().base_url == "http://127.0.0.1:8000/v1"
    monkeypatch.delenv("HOPGRAPH_BASE_URL")
    monkeypatch.setenv("HOPGRAPH_CONFIG", str(local))
    assert Settings().base_url == "http://planted.example/v1"
    monkeypatch.delenv("HOPGRAPH_CONFIG")
    monkeypatch.delenv("HOPGRAPH_API_KEY")
    local.write_text(f'base_url = "http://planted.example/v1"\napi_key = "{KEY}-in-the-file"\n', "utf-8")
    assert Settings().api_key == SecretStr(f"{KEY}-in-the-file")
    monkeypatch.setenv("HOPGRAPH_API_KEY", KEY)  # over the file's own key: the environment's, refused
    with pytest.raises(SettingsError, match="is not sent the key from HOPGRAPH_API_KEY"):
        Settings()
    judge = '[roles.judge]\nllm = "openai:x"\nbase_url = "http://planted.example/v1"\n'
    local.write_text(judge, encoding="utf-8")
    monkeypatch.setenv("HOPGRAPH_ROLES__JUDGE__API_KEY", KEY)
    with pytest.raises(SettingsError, match=r"roles\.judge\.base_url .* HOPGRAPH_ROLES__JUDGE__API_KEY"):
        Settings()
    # the Chroma server: the whole corpus and HOPGRAPH_CHROMA_TOKEN would go to the file's choice
    monkeypatch.delenv("HOPGRAPH_ROLES__JUDGE__API_KEY")
    local.write_text('chroma_url = "http://planted.example:8000"\n', encoding="utf-8")
    monkeypatch.setenv("HOPGRAPH_CHROMA_TOKEN", KEY)
    with pytest.raises(SettingsError, match=r"chroma_url .* is not sent the key from HOPGRAPH_CHROMA_TOKEN"):
        Settings()
    monkeypatch.delenv("HOPGRAPH_CHROMA_TOKEN")
    own_token = f'chroma_url = "http://planted.example:8000"\nchroma_token = "{KEY}-in-the-file"\n'
    local.write_text(own_token, encoding="utf-8")
    assert Settings().chroma_token == SecretStr(f"{KEY}-in-the-file")  # its own token beside it: the file's


def test_ask_in_a_planted_folder_sends_the_key_nowhere_and_config_names_a_trusted_file(
    places: tuple[Path, Path],
    settings: Settings,
    sample_index: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The reproduction: a hopgraph.toml in a folder the user works in pointed the user's HOPGRAPH_API_KEY
    at its own server. Named with --config, the same file is trusted and the key goes there."""
    _, local = places
    monkeypatch.setenv("HOPGRAPH_DATA_DIR", str(settings.data_dir))
    monkeypatch.setenv("HOPGRAPH_API_KEY", KEY)
    ask = ["ask", "Which pickup truck is safer for pedestrians?", "--index", sample_index, "--k", "2"]
    with serve(OpenAIStub(reply=lambda _prompt: "Cybertruck")) as planted:
        local.write_text(f'llm = "openai:stub"\nbase_url = "{planted.base_url}"\nmax_retries = 0\n', "utf-8")
        code, _, err = hopgraph(ask, capsys)
        assert code == 2 and "is not sent the key from HOPGRAPH_API_KEY" in err and KEY not in err
        assert planted.requests == []
        code, out, err = hopgraph(["--config", str(local), *ask], capsys)
        assert code == 0, err
        assert "Answer: Cybertruck" in out
        assert planted.requests and planted.requests[0].headers["authorization"] == f"Bearer {KEY}"
