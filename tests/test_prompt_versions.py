"""The prompt text enters the evaluation key (issue 33 item 5): each role's text is hashed as the method uses
it (graphs.prompt_versions), and a re-run after a prompt change refuses to mix answers under one label.

The hashing is checked on a module written here (every edit a prompt file sees: docstrings, comments,
layout, a word, a placeholder, a data file) and on the methods' own roles; the refusal end to end through
`hopgraph eval` over the tiny benchmark, with the LLM scripted (named as such: what is tested is the key,
not an answer), after a word of a copy of prompts/ changed.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from evals.runner import CHECKPOINT
from graphs import prompt_versions as versions
from graphs.registry import METHODS, UnknownMethodError
from graphs.treehop.model import load_checkpoint, save_checkpoint
from hopgraph import Settings, services_for
from hopgraph.evaluate import method_versions
from hopgraph.providers import SHIPPED_TREEHOP
from tests import tiny_hotpot
from tests.scripted import ScriptedChatModel, scripted_gateway
from tests.test_bad_values import EVAL, hopgraph, with_paths

REPO = Path(__file__).resolve().parents[1]
PROBE = '''"""What the probe role asks."""

SYSTEM = "Read the passages and answer."  # a comment


def messages(question: str, passages: str) -> str:
    """The probe's prompt."""
    return f"{passages}\\nQuestion: {question}"
'''


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A copy of graphs/, nodes/ and prompts/ that prompt_versions reads instead of the repository's."""
    for package in ("graphs", "nodes", "prompts"):
        shutil.copytree(REPO / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(versions, "_ROOT", tmp_path)
    clear = [versions._prompt_modules, versions._imports, versions._text_hash]
    for cached in clear:
        cached.cache_clear()
    yield tmp_path
    for cached in clear:
        cached.cache_clear()


def probe_hash(root: Path, source: str) -> str:
    (root / "prompts" / "probe.py").write_text(source, encoding="utf-8")
    versions._text_hash.cache_clear()
    return versions._text_hash("prompts.probe")


def test_the_hash_follows_the_text_the_model_reads_and_nothing_else(root: Path) -> None:
    before = probe_hash(root, PROBE)
    unchanged = {
        "docstrings": PROBE.replace("What the probe role asks.", "Another docstring.").replace(
            "The probe's prompt.", "Reworded."
        ),
        "comments": PROBE.replace("# a comment", "# another comment\n# and one more"),
        "layout": PROBE.replace(
            '"Read the passages and answer."', '(\n    "Read the passages "\n    "and answer."\n)'
        ),
    }
    for edit, source in unchanged.items():
        assert probe_hash(root, source) == before, edit
    changed = {
        "a word": PROBE.replace("and answer.", "and reply."),
        "a placeholder moved": PROBE.replace(
            "{passages}\\nQuestion: {question}", "Question: {question}\\n{passages}"
        ),
        "a text added": PROBE + 'NUDGE = "Be brief."\n',
    }
    for edit, source in changed.items():
        assert probe_hash(root, source) != before, edit


def test_a_data_file_a_role_names_is_part_of_its_text(root: Path) -> None:
    examples = root / "prompts" / "probe_examples.json"
    examples.write_text('[{"question": "Who?", "answer": "Ada"}]', encoding="utf-8")
    source = PROBE + 'EXAMPLES = "probe_examples.json"\n'
    before = probe_hash(root, source)
    examples.write_text('[{"question": "Who?", "answer": "Alan"}]', encoding="utf-8")
    assert probe_hash(root, source) != before


def test_a_methods_roles_are_the_prompts_its_code_reaches() -> None:
    roles = {method: set(versions.prompt_versions(method)) for method in METHODS}
    # no decompose (a type only); `structured` for the reply shapes of the metadata extractor and the
    # reader's refusal check
    assert roles["naive"] == {"answer", "echo", "metadata", "passages", "refusal_check", "structured"}
    assert {"decompose", "reader", "rewrite", "summarize", "integrate"} <= roles["chainrag"]
    assert {"ircot", "demonstrations"} <= roles["ircot"] & roles["iter_retgen"]  # its chains are IR-CoT's
    assert {"resp_generator", "resp_reasoner", "resp_summarizer"} <= roles["resp"]
    prompts = {path.stem for path in (REPO / "prompts").glob("*.py")}
    assert all({"answer", "refusal_check"} <= found <= prompts for found in roles.values())
    with pytest.raises(UnknownMethodError):
        versions.prompt_versions("naïve")


def test_an_evaluation_after_a_prompt_change_is_refused_under_the_same_label(
    scripted_cli: ScriptedChatModel,
    settings: Settings,
    sample_index: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Before, the second run resumed: the answers of both wordings under one label `naive`."""
    llm, model = scripted_gateway(tiny_hotpot.answer)
    monkeypatch.setitem(services_for(settings)._built, "llm", llm)
    monkeypatch.chdir(tmp_path)
    args = with_paths(EVAL, tmp_path)
    code, out, err = hopgraph(args, capsys)
    assert code == 0, (out, err)
    before = versions.prompt_versions("naive")["answer"]

    copy = tmp_path / "copy"
    for package in ("graphs", "nodes", "prompts"):
        shutil.copytree(REPO / package, copy / package, ignore=shutil.ignore_patterns("__pycache__"))
    answer = copy / "prompts" / "answer.py"
    answer.write_text(answer.read_text(encoding="utf-8") + 'CLOSING = "Be brief."\n', encoding="utf-8")
    monkeypatch.setattr(versions, "_ROOT", copy)
    versions._text_hash.cache_clear()
    try:
        now = versions.prompt_versions("naive")["answer"]
        asked = len(model.prompts)
        code, out, err = hopgraph(args, capsys)
    finally:
        versions._text_hash.cache_clear()
    assert code == 2 and out == "", (out, err)
    assert err.splitlines() == [
        f"error: {tmp_path / 'run'} already holds results of 'naive' with prompts.answer={before} "
        f"(now {now}): use another --out"
    ]
    assert len(model.prompts) == asked  # refused before any question was asked


def test_an_evaluation_with_another_treehop_checkpoint_is_refused_under_the_same_label(
    scripted_cli: ScriptedChatModel,
    settings: Settings,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """TreeHop's answers depend on its trained weights as on its prompts: a re-run with other weights
    (here the shipped ones with one value changed) is another measurement, refused under the label."""
    llm, _ = scripted_gateway(tiny_hotpot.answer)
    monkeypatch.setitem(services_for(settings)._built, "llm", llm)
    monkeypatch.chdir(tmp_path)
    args = [*with_paths(EVAL, tmp_path), "--methods", "treehop"]
    code, out, err = hopgraph(args, capsys)
    assert code == 0, (out, err)
    embedder = services_for(settings).embedder
    model = load_checkpoint(SHIPPED_TREEHOP, embedder.name, embedder.dimension)
    with torch.no_grad():
        next(model.parameters()).view(-1)[0] += 1.0
    other = tmp_path / "other.pt"
    save_checkpoint(model, other)
    before = method_versions("treehop", settings)[CHECKPOINT]
    now = method_versions("treehop", settings.model_copy(update={"treehop_checkpoint": other}))[CHECKPOINT]
    assert before != now and "checkpoint" not in method_versions("naive", settings)

    monkeypatch.setenv("HOPGRAPH_TREEHOP_CHECKPOINT", str(other))
    code, out, err = hopgraph(args, capsys)
    assert code == 2 and out == "", (out, err)
    assert err.splitlines() == [
        f"error: {tmp_path / 'run'} already holds results of 'treehop' with checkpoint={before} "
        f"(now {now}): use another --out"
    ]
