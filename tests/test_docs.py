"""The documentation's commands still run, and its links still lead somewhere.

Every fenced ```bash / ```sh / ```shell block of README.md and docs/**/*.md is read line by line
(continuation lines joined), and so is every inline code span of their prose that holds a command (there a
hopgraph subcommand counts only when it is a lower-case word, so `hopgraph COMMAND --help` stays prose).
A line that invokes hopgraph (`.venv/bin/hopgraph SUB ...`, `hopgraph SUB ...`,
`python -m hopgraph SUB ...`) must name a subcommand that exists: `hopgraph SUB --help` exits 0, run once
per distinct subcommand through the command's Typer app in this process. A `python -m benchmarks.NAME`
line must name a file benchmarks/NAME.py whose `--help` exits 0 (all of them in one process: they parse
their arguments before any work, and share their imports). A `bash scripts/NAME.sh` line must name a
script that exists. README.md stays a guide of at most 400 lines, and every relative link in README.md
and docs/ points to a file that exists (and to a heading of it, when the link names one).
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hopgraph.cli import app
from nodes.roles import ROLES

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
DOCS = [README, *sorted((REPO / "docs").rglob("*.md"))]
README_MAX_LINES = 400

FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```", re.MULTILINE | re.DOTALL)
SHELL = frozenset({"bash", "sh", "shell"})
# a word after the subcommand that may be a nested subcommand (`hopgraph train treehop`); placeholders
# (THREAD_ID), paths, quoted questions and "..." never match. An argument that does match is harmless:
# --help is eager, so `hopgraph history q1 --help` still prints history's help.
NESTED = re.compile(r"[a-z][a-z_]*")
INLINE = re.compile(r"`([^`]+)`")
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def _shell_lines() -> Iterator[tuple[str, list[str]]]:
    """(where, tokens) for every command line of every shell block, comments dropped."""
    for path in DOCS:
        for block in FENCE.finditer(path.read_text(encoding="utf-8")):
            if block[1] not in SHELL:
                continue
            for line in block[2].replace("\\\n", " ").splitlines():
                try:
                    tokens = shlex.split(line, comments=True)
                except ValueError:  # an unbalanced quote in a comment: fall back to words
                    tokens = line.split("#", 1)[0].split()
                if tokens:
                    yield f"{path.relative_to(REPO)}: {line.strip()}", tokens


def _inline_commands() -> Iterator[tuple[str, list[str]]]:
    """(where, tokens) for every inline code span of the prose outside fenced blocks."""
    for path in DOCS:
        for span in INLINE.findall(FENCE.sub("", path.read_text(encoding="utf-8"))):
            try:
                tokens = shlex.split(span)
            except ValueError:
                tokens = span.split()
            if tokens:
                yield f"{path.relative_to(REPO)}: `{' '.join(span.split())}`", tokens


def _hopgraph_subcommand(tokens: list[str]) -> tuple[str, ...] | None:
    """The subcommand path a line runs hopgraph with (`("index",)`, `("train", "treehop")`), or None."""
    for i, token in enumerate(tokens):
        is_script = token == "hopgraph" or token.endswith("bin/hopgraph")
        is_module = token == "-m" and i + 1 < len(tokens) and tokens[i + 1] == "hopgraph"
        if not (is_script or is_module):
            continue
        rest = tokens[i + (2 if is_module else 1) :]
        if not rest or rest[0].startswith("-"):
            return ()
        path = [rest[0]]
        if len(rest) > 1 and NESTED.fullmatch(rest[1]):
            path.append(rest[1])
        return tuple(path)
    return None


def _benchmark_module(tokens: list[str]) -> str | None:
    for i, token in enumerate(tokens[:-1]):
        if token == "-m" and tokens[i + 1].startswith("benchmarks."):
            return tokens[i + 1]
    return None


def _script(tokens: list[str]) -> str | None:
    for i, token in enumerate(tokens[:-1]):
        if token == "bash" and tokens[i + 1].startswith("scripts/"):
            return tokens[i + 1]
    return None


def _documented() -> tuple[dict[tuple[str, ...], str], dict[str, str], dict[str, str]]:
    """Distinct hopgraph subcommands, benchmark modules and scripts, each with the first line naming it."""
    subcommands: dict[tuple[str, ...], str] = {}
    benchmarks: dict[str, str] = {}
    scripts: dict[str, str] = {}
    blocks = [(where, tokens, False) for where, tokens in _shell_lines()]
    for where, tokens, inline in blocks + [(where, tokens, True) for where, tokens in _inline_commands()]:
        # in prose a placeholder (`hopgraph COMMAND`, `benchmarks.NAME`) is a placeholder, not a command
        sub = _hopgraph_subcommand(tokens)
        if sub is not None and (not inline or (sub and NESTED.fullmatch(sub[0]))):
            subcommands.setdefault(sub, where)
        module = _benchmark_module(tokens)
        if module and (not inline or NESTED.fullmatch(module.removeprefix("benchmarks."))):
            benchmarks.setdefault(module, where)
        if script := _script(tokens):
            scripts.setdefault(script, where)
    return subcommands, benchmarks, scripts


SUBCOMMANDS, BENCHMARKS, SCRIPTS = _documented()


def test_the_documented_commands_are_found() -> None:
    """The parser above reads the README's own commands: a change of format cannot empty the checks."""
    readme = {("index",), ("ask",), ("history",), ("eval",), ("report",), ("train", "treehop")}
    assert readme <= set(SUBCOMMANDS)
    assert "benchmarks.retrieval_vs_peers" in BENCHMARKS
    assert {"scripts/quickstart.sh", "scripts/test.sh"} <= set(SCRIPTS)


@pytest.mark.parametrize("subcommand", sorted(SUBCOMMANDS), ids=" ".join)
def test_documented_hopgraph_subcommand_exists(subcommand: tuple[str, ...]) -> None:
    """`hopgraph SUB --help` through the command's own Typer app, in this process: the subcommand is what is
    tested, not the interpreter's start-up (`python -m hopgraph` is run by the CLI tests)."""
    done = CliRunner().invoke(app, [*subcommand, "--help"], env={"COLUMNS": "200"})
    assert done.exit_code == 0, (
        f"`hopgraph {' '.join(subcommand)} --help` exited {done.exit_code}; documented in "
        f"{SUBCOMMANDS[subcommand]}\n{done.output[-4000:]}\n{done.exception!r}"
    )
    assert "Usage:" in done.output, done.output[-2000:]


# Runs each benchmark's `python -m benchmarks.NAME --help` in one interpreter: prints {module: exit code or
# the exception that stopped it} as JSON on its last line, the help texts themselves discarded.
_HELP_ALL = """
import contextlib, io, json, runpy, sys, traceback
results = {}
for module in sys.argv[1:]:
    sys.argv = [module, "--help"]
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            runpy.run_module(module, run_name="__main__", alter_sys=True)
        results[module] = "returned without printing help"
    except SystemExit as exit:
        results[module] = exit.code or 0
    except BaseException:
        results[module] = traceback.format_exc(limit=-3)
print(json.dumps(results))
"""


@cache
def _benchmark_help() -> dict[str, int | str]:
    """Run once for all the benchmark tests; a crash of the run itself is every module's result."""
    done = subprocess.run(
        [sys.executable, "-c", _HELP_ALL, *sorted(BENCHMARKS)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if done.returncode != 0 or not done.stdout.strip():
        crash = f"the --help run exited {done.returncode}:\n{done.stderr[-4000:]}"
        return dict.fromkeys(BENCHMARKS, crash)
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("module", sorted(BENCHMARKS))
def test_documented_benchmark_exists(module: str) -> None:
    path = REPO / (module.replace(".", "/") + ".py")
    assert path.is_file(), f"{path.relative_to(REPO)} does not exist; documented in {BENCHMARKS[module]}"
    result = _benchmark_help()[module]
    assert result == 0, f"`python -m {module} --help`: {result}; documented in {BENCHMARKS[module]}"


@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_documented_script_exists(script: str) -> None:
    assert (REPO / script).is_file(), f"{script} does not exist; documented in {SCRIPTS[script]}"


def test_readme_is_a_guide_of_at_most_400_lines() -> None:
    lines = len(README.read_text(encoding="utf-8").splitlines())
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines; move detail into docs/"


def _anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


@cache
def _anchors(path: Path) -> frozenset[str]:
    text = FENCE.sub("", path.read_text(encoding="utf-8"))
    headings = re.findall(r"^#{1,6} (.+)$", text, flags=re.MULTILINE)
    return frozenset(_anchor(heading) for heading in headings)


def _relative_links() -> Iterator[tuple[Path, str]]:
    for path in DOCS:
        text = FENCE.sub("", path.read_text(encoding="utf-8"))
        for target in LINK.findall(text):
            if not re.match(r"[a-z]+:", target):  # http:, https:, mailto: ...
                yield path, target


def test_readme_links_to_docs_that_exist() -> None:
    """README.md's links into docs/ are the guide's way to the detail: each must lead to a file."""
    targets = [target for path, target in _relative_links() if path == README]
    assert any(target.startswith("docs/methods/") for target in targets)
    missing = [t for t in targets if not (REPO / t.split("#", 1)[0]).exists()]
    assert not missing, f"README.md links to files that do not exist: {missing}"


def test_every_relative_link_leads_to_a_file_and_heading() -> None:
    broken = []
    for path, target in _relative_links():
        file, _, anchor = target.partition("#")
        linked = (path.parent / file).resolve() if file else path
        if not linked.exists():
            broken.append(f"{path.relative_to(REPO)}: {target} (no such file)")
        elif anchor and linked.suffix == ".md" and anchor not in _anchors(linked):
            broken.append(f"{path.relative_to(REPO)}: {target} (no such heading)")
    assert not broken, "broken links:\n" + "\n".join(broken)


# where each doc lists the roles (nodes.roles.ROLES), up to the end of that sentence
ROLE_LISTS = {
    "README.md": "Each LLM call belongs to a role:",
    "docs/configuration.md": "Roles used by the methods (",
}


@pytest.mark.parametrize("doc", list(ROLE_LISTS))
def test_the_roles_a_doc_lists_are_the_roles_calls_are_made_for(doc: str) -> None:
    text = (REPO / doc).read_text(encoding="utf-8")
    sentence = re.split(r"\.\s", text[text.index(ROLE_LISTS[doc]) :])[0]
    assert set(re.findall(r"`([a-z_]+)`", sentence)) == set(ROLES)
