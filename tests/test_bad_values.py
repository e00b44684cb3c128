"""Every bad value stops where it enters, before any work: one line on stderr naming the input and what it
takes, exit code 2. And the good values of the same inputs still run.

The entries are a CLI option (typer's ranges and choices), `--set KEY=VALUE` and `--methods` variants (the
method's context fields: nodes.context.parameter_problem), hopgraph.toml and HOPGRAPH_* variables (the
Settings fields), and HOPGRAPH_CONFIG itself. Each row of BAD runs `hopgraph` in this process through its
real entry point (hopgraph.cli.main) over the session's index, with the LLM scripted: a bad value that got
through would run (and a k of 0 would answer from no passages, counted as answered), so a row fails on
exit code 0, on a traceback, on anything printed to stdout or on any LLM call.
"""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import get_type_hints

import pytest

from evals.runner import read_records, results_path
from graphs.chainrag.context import ChainRAGContext
from graphs.multimeta.context import MultiMetaContext
from graphs.registry import METHODS, builder
from hopgraph import Settings, services_for
from hopgraph import settings as settings_module
from hopgraph.cli import main
from hopgraph.settings import SettingsError
from nodes.context import ParameterError
from tests import tiny_hotpot
from tests.scripted import ScriptedChatModel, scripted_gateway
from tests.test_context_descriptions import NO_SERVICES

NOTES = Path(__file__).parent / "fixtures" / "corpora" / "notes"
QUESTION = "Which electric pickup did Elon Musk say is safer for pedestrians?"
ASK = ["ask", QUESTION, "--index", "sample"]
INDEX = ["index", str(NOTES), "--name", "bad-values"]
# DATA and OUT stand for the tiny benchmark's folder and the run folder each test writes
EVAL = ["eval", "--dataset", "hotpotqa", "--data", "DATA", "--out", "OUT", "--limit", "2", "--no-cache"]


@dataclass(frozen=True)
class Bad:
    """A command line, with the HOPGRAPH_* variables and hopgraph.toml it runs under, and what its one line
    of error must say."""

    args: list[str]
    says: list[str]
    env: dict[str, str] = field(default_factory=dict)
    toml: str | None = None


BAD = {
    # CLI options
    "ask --k 0": Bad([*ASK, "--k", "0"], ["'--k'", "greater than or equal to 1", "ask --help"]),
    "ask --k -3": Bad([*ASK, "--k", "-3"], ["'--k'", "greater than or equal to 1"]),
    "ask --mode sparse": Bad([*ASK, "--mode", "sparse"], ["'--mode'", "dense", "bm25", "hybrid"]),
    "eval --k -3": Bad([*EVAL, "--k", "-3"], ["'--k'", "greater than or equal to 1", "eval --help"]),
    "eval --concurrency 0": Bad([*EVAL, "--concurrency", "0"], ["'--concurrency'", "greater than or equal"]),
    "eval --limit 0": Bad([*EVAL, "--limit", "0"], ["'--limit'", "greater than or equal to 1"]),
    "index --chunk-size -5": Bad([*INDEX, "--chunk-size", "-5"], ["'--chunk-size'", "greater than or equal"]),
    "index --chunk-overlap -1": Bad([*INDEX, "--chunk-overlap", "-1"], ["'--chunk-overlap'"]),
    "index overlap >= size": Bad(
        [*INDEX, "--chunk-size", "16", "--chunk-overlap", "16"],
        ["chunk_overlap=16", "less than chunk_size (16)"],
    ),
    "index --questions-per-chunk 0": Bad([*INDEX, "--questions-per-chunk", "0"], ["'--questions-per-chunk'"]),
    "index --max-chunks -1": Bad([*INDEX, "--max-chunks", "-1"], ["'--max-chunks'"]),
    # --set and --methods variants: each method's context fields
    "ask --set top_k=-3": Bad([*ASK, "--set", "top_k=-3"], ["--set", "top_k", "at least 1"]),
    "ask --set retrieval_mode=sparse": Bad(
        [*ASK, "--set", "retrieval_mode=sparse"], ["--set", "retrieval_mode", "dense, bm25, hybrid"]
    ),
    "ask multimeta --set answer_k=0": Bad(
        [*ASK, "--method", "multimeta", "--set", "answer_k=0"], ["--set", "answer_k", "at least 1"]
    ),
    "eval --set top_k=-3": Bad([*EVAL, "--set", "top_k=-3"], ["top_k", "at least 1"]),
    "eval chainrag --set candidates=0": Bad(
        [*EVAL, "--methods", "chainrag", "--set", "candidates=0"], ["candidates", "at least 1"]
    ),
    "eval variant naive+top_k=0": Bad(
        [*EVAL, "--methods", "naive,naive+top_k=0"], ["'naive+top_k=0'", "top_k", "at least 1"]
    ),
    # HOPGRAPH_* variables
    "HOPGRAPH_TIMEOUT=abc": Bad(
        INDEX, ["HOPGRAPH_TIMEOUT='abc'", "valid number"], {"HOPGRAPH_TIMEOUT": "abc"}
    ),
    "HOPGRAPH_TIMEOUT=-5": Bad(
        INDEX, ["HOPGRAPH_TIMEOUT='-5'", "greater than 0"], {"HOPGRAPH_TIMEOUT": "-5"}
    ),
    "HOPGRAPH_RERANKER=best": Bad(
        INDEX, ["HOPGRAPH_RERANKER='best'", "'hybrid'"], {"HOPGRAPH_RERANKER": "best"}
    ),
    "HOPGRAPH_CHUNK_OVERLAP=256": Bad(
        INDEX,
        ["HOPGRAPH_CHUNK_OVERLAP='256'", "less than chunk_size (256)"],
        {"HOPGRAPH_CHUNK_SIZE": "256", "HOPGRAPH_CHUNK_OVERLAP": "256"},
    ),
    "HOPGRAPH_EMBED_METADATA not JSON": Bad(
        INDEX, ["embed_metadata", "as JSON"], {"HOPGRAPH_EMBED_METADATA": "source"}
    ),
    # hopgraph.toml, and HOPGRAPH_CONFIG naming it
    "toml syntax": Bad(INDEX, ["hopgraph.toml", "line 2, column 12"], toml='llm = "local"\nchunk_size 5\n'),
    "toml unknown key": Bad(INDEX, ["hopgraph.toml: lmm", "did you mean llm"], toml='lmm = "local"\n'),
    "toml unknown role key": Bad(
        INDEX,
        ["hopgraph.toml: roles.generator.lmm", "did you mean llm"],
        toml='[roles.generator]\nlmm = "x"\n',
    ),
    "toml unknown role": Bad(
        INDEX,
        ["hopgraph.toml: roles", "'planner' is not a role", "the roles are generator, reasoner"],
        toml='[roles.planner]\nllm = "x"\n',
    ),
    "toml out of range": Bad(
        INDEX,
        ["hopgraph.toml: index_concurrency=0", "greater than or equal to 1"],
        toml="index_concurrency = 0\n",
    ),
    "HOPGRAPH_CONFIG names no file": Bad(
        INDEX, ["HOPGRAPH_CONFIG=nowhere.toml", "no such file"], {"HOPGRAPH_CONFIG": "nowhere.toml"}
    ),
}


def scripted_answer(prompt: str) -> str:
    """The tiny benchmark's gold answer to its questions, "Cybertruck" to the sample's."""
    return tiny_hotpot.answer(prompt) if tiny_hotpot.question_in(prompt) else "Cybertruck"


@pytest.fixture
def reader(
    scripted_cli: ScriptedChatModel,
    settings: Settings,
    sample_index: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> ScriptedChatModel:
    """`hopgraph` in this process over the session's settings, with `sample` indexed and every LLM role
    scripted, so nothing here loads the real model even when a bad value gets through; run in a scratch
    folder, where a hopgraph.toml or a relative path lands."""
    llm, model = scripted_gateway(scripted_answer)
    monkeypatch.setitem(services_for(settings)._built, "llm", llm)
    monkeypatch.chdir(tmp_path)
    return model


def hopgraph(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of `hopgraph ARGS` run through the command's own entry point.

    The environment is put back afterwards: `--config` sets HOPGRAPH_CONFIG for the process it runs in, which
    here is the test session's, and a later test's Settings would read that file."""
    capsys.readouterr()
    environment = dict(os.environ)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sys, "argv", ["hopgraph", *args])
        try:
            with pytest.raises(SystemExit) as exited:
                main()
        finally:
            os.environ.clear()
            os.environ.update(environment)
    out, err = capsys.readouterr()
    return int(exited.value.code or 0), out, err


def with_paths(args: list[str], tmp_path: Path) -> list[str]:
    """`args` with EVAL's DATA (the tiny benchmark, written) and OUT (the run folder) filled in."""
    paths = {"DATA": str(tiny_hotpot.write(tmp_path / "tiny")), "OUT": str(tmp_path / "run")}
    return [paths.get(arg, arg) for arg in args]


@pytest.mark.parametrize("case", list(BAD), ids=list(BAD))
def test_a_bad_value_stops_with_one_line_naming_it(
    case: str,
    reader: ScriptedChatModel,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    bad = BAD[case]
    if bad.toml is not None:
        (tmp_path / "hopgraph.toml").write_text(bad.toml, encoding="utf-8")
        monkeypatch.setenv("HOPGRAPH_CONFIG", str(tmp_path / "hopgraph.toml"))
    for name, value in bad.env.items():
        monkeypatch.setenv(name, value)
    code, out, err = hopgraph(with_paths(bad.args, tmp_path), capsys)
    assert code == 2, (out, err)
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    for fragment in bad.says:
        assert fragment in lines[0]
    assert out == ""  # nothing started: no thread line, no index progress
    assert reader.prompts == []
    assert not (tmp_path / "run").exists()


def test_good_values_of_the_same_options_run(
    reader: ScriptedChatModel, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = hopgraph([*ASK, "--k", "2", "--mode", "bm25", "--set", "max_answer_tokens=16"], capsys)
    assert code == 0, err
    assert out.count("hop 1") == 2 and "Answer: Cybertruck" in out

    code, out, err = hopgraph([*INDEX, "--chunk-size", "64", "--chunk-overlap", "0"], capsys)
    assert code == 0, err
    assert "chunk 64/0 tokens" in out  # an overlap of 0 is a value, not "not given"

    eval_args = [*EVAL, "--k", "2", "--concurrency", "2", "--set", "max_answer_tokens=16"]
    code, out, err = hopgraph(with_paths(eval_args, tmp_path), capsys)
    assert code == 0, err
    started = next(r for r in read_records(results_path(tmp_path / "run")) if r["type"] == "run")
    assert started["context"]["naive"]["top_k"] == 2 and started["concurrency"] == 2
    assert started["context"]["naive"]["max_answer_tokens"] == 16


def test_help_and_usage_keep_their_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    """Standalone mode is off for the one-line errors: --help still exits 0, a bare command shows its help."""
    code, out, _ = hopgraph(["ask", "--help"], capsys)
    assert code == 0 and "--k" in out
    code, out, _ = hopgraph([], capsys)
    assert code == 2 and "Commands" in out


def index_notes(cli_env: dict[str, str], **variables: str) -> subprocess.CompletedProcess[str]:
    """`hopgraph index` of the notes folder as a user runs it, in its own process, with `variables` set."""
    return subprocess.run(
        [sys.executable, "-m", "hopgraph", "index", str(NOTES)],
        env={**cli_env, **variables},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_the_real_command_prints_the_one_line(cli_env: dict[str, str]) -> None:
    """As a user runs it, in its own process: the variable named, no traceback."""
    done = index_notes(cli_env, HOPGRAPH_TIMEOUT="abc")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines() == [
        "error: HOPGRAPH_TIMEOUT='abc' is not valid: input should be a valid number, unable to parse string "
        "as a number"
    ]


def test_settings_read_good_values_from_each_source(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "custom.toml"
    config.write_text('chunk_size = 128\nchunk_overlap = 0\n[roles.judge]\nllm = "local"\n', encoding="utf-8")
    monkeypatch.setenv("HOPGRAPH_CONFIG", str(config))
    monkeypatch.setenv("HOPGRAPH_TIMEOUT", "30")
    settings = Settings(max_retries=0)
    assert (settings.chunk_size, settings.chunk_overlap, settings.timeout, settings.max_retries) == (
        128,
        0,
        30,
        0,
    )
    assert settings.role("judge").llm == "local"


def test_an_empty_hopgraph_config_reads_no_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What tests and scripts set to keep a hopgraph.toml of the working directory out; unset, it is read."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "hopgraph.toml").write_text("chunk_size = 64\n", encoding="utf-8")
    monkeypatch.setenv("HOPGRAPH_CONFIG", "")
    assert Settings().chunk_size == 256
    monkeypatch.delenv("HOPGRAPH_CONFIG")
    assert Settings().chunk_size == 64


def test_the_python_api_gets_the_same_checks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Settings(...) and a method's context built by hand (or by Studio's form) refuse what the CLI does."""
    monkeypatch.setenv("HOPGRAPH_CONFIG", "")
    with pytest.raises(
        SettingsError, match=r"^chunk_size=0 is not valid: input should be greater than or equal to 1$"
    ):
        Settings(data_dir=tmp_path, chunk_size=0)
    with pytest.raises(SettingsError, match="lmm is not a setting"):
        Settings(data_dir=tmp_path, lmm="local")
    with pytest.raises(ParameterError, match="ChainRAGContext: top_k must be at least 1, got 0"):
        ChainRAGContext(top_k=0)
    with pytest.raises(ValueError, match="retrieval_mode must be one of dense, bm25, hybrid, got 'sparse'"):
        MultiMetaContext(retrieval_mode="sparse")  # type: ignore[arg-type]
    assert MultiMetaContext(answer_k=1, candidates=1, top_k=1).answer_k == 1


@pytest.mark.parametrize("method", sorted(METHODS))
def test_every_count_a_method_takes_declares_its_least_value(method: str) -> None:
    """A count without a minimum would let 0 through every entry again; Studio's form shows the minimum."""
    schema = builder(method)(NO_SERVICES).compile()
    context = schema.builder.context_schema
    hints = get_type_hints(context)
    undeclared = [f.name for f in fields(context) if hints[f.name] is int and "ge" not in f.metadata]
    assert not undeclared, f"{method}: no minimum for {undeclared}"
    properties = schema.get_context_jsonschema()["properties"]
    assert properties["top_k"]["minimum"] == 1, json.dumps(properties["top_k"])


def test_a_misspelt_variable_is_named_once_with_the_setting_it_resembles(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """pydantic-settings skips a HOPGRAPH_* variable no field has: HOPGRAPH_TIMOUT=30 ran at the default
    timeout without a word. Now one warning line names it and the closest setting, once per process."""
    monkeypatch.setattr(settings_module, "_warned", set())
    monkeypatch.setenv("HOPGRAPH_CONFIG", "")
    monkeypatch.setenv("HOPGRAPH_TIMOUT", "30")
    monkeypatch.setenv("HOPGRAPH_BIN", "/opt/hopgraph/bin")  # scripts/llama_server.sh's, not a setting
    monkeypatch.setenv("HOPGRAPH_ROLES__JUDGE__LLM", "local")  # nested: the field is roles
    with caplog.at_level(logging.WARNING, logger="hopgraph"):
        assert Settings().timeout == 120  # ignored, and said so
        Settings()
    assert [record.getMessage() for record in caplog.records] == [
        "HOPGRAPH_TIMOUT is not a hopgraph setting and is ignored; did you mean HOPGRAPH_TIMEOUT?"
    ]


def test_the_real_command_prints_the_warning_line(cli_env: dict[str, str]) -> None:
    done = index_notes(cli_env, HOPGRAPH_TIMOUT="30", HOPGRAPH_CHUNK_SIZE="0")  # the second stops it early
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines() == [
        "HOPGRAPH_TIMOUT is not a hopgraph setting and is ignored; did you mean HOPGRAPH_TIMEOUT?",
        "error: HOPGRAPH_CHUNK_SIZE='0' is not valid: input should be greater than or equal to 1",
    ]


def test_every_variable_the_project_reads_is_a_setting_or_known_not_to_be_one() -> None:
    """A HOPGRAPH_* variable a script or benchmark reads must not be warned of as a misspelt setting."""
    repo = Path(__file__).resolve().parents[1]
    reads = re.compile(r"""(?:environ(?:\.get)?[(\[]\s*["']|\$\{?)(HOPGRAPH_\w+)""")
    read = {
        match
        for folder in ("hopgraph", "scripts", "benchmarks", "stores", "evals")
        for path in (repo / folder).rglob("*")
        if path.suffix in {".py", ".sh"}
        for match in reads.findall(path.read_text(encoding="utf-8"))
    }
    assert {"HOPGRAPH_BIN", "HOPGRAPH_WHEELS"} <= read  # the pattern finds both kinds: Python and shell
    fields = {f"HOPGRAPH_{name.upper()}" for name in Settings.model_fields}
    assert read - fields - settings_module.OTHER_VARIABLES == set()
