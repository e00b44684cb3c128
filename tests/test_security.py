"""Issue 40: what hopgraph reads from others is data, never code or a path of its choosing.

Each test plants what an attacker could (a copied data directory's links and manifests, a corpus title, a
method label) and checks that it stays inert. The other guards have their own
files: links on write in test_files.py, checkpoint rows in test_checkpoint_safety.py, the embedded
model's digest in test_local_model.py, the Chroma server's token in test_chroma_server.py.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from matplotlib.text import Text

from evals.plots import f1_vs_calls_figure
from hopgraph import Settings, services_for
from hopgraph.api import checkpointer_for
from nodes.llm import ResponseCache
from stores.documents import Document
from stores.errors import IndexDamagedError
from stores.files import LinkedPathError
from stores.index import IndexParams, IndexStore
from stores.protocols import Embedder
from tests.scripted import ScriptedChatModel, scripted_gateway
from tests.test_bad_values import hopgraph

DOCS = [
    Document(id="truck", title="Cybertruck", text="Tesla's Cybertruck is an electric pickup truck."),
    Document(id="car", title="Model 3", text="The Model 3 is an electric sedan made by Tesla."),
]
SMALL = IndexParams(chunk_size=32, chunk_overlap=4)


def built_store(root: Path, embedder: Embedder, docs: list[Document] = DOCS) -> IndexStore:
    store = IndexStore(root / "indexes")
    store.build("notes", docs, embedder, SMALL)
    return store


def test_a_current_link_or_manifest_naming_a_path_outside_is_refused(
    tmp_path: Path, minilm: Embedder
) -> None:
    """`current -> ../../..` or a manifest whose build_id is `../../../outside` would open (and create)
    Chroma files wherever they point; both are refused with one line, and nothing is created there."""
    store = built_store(tmp_path, minilm)
    index_dir = tmp_path / "indexes" / "notes"
    manifest = next((index_dir / "builds").iterdir()) / "manifest.json"
    data = json.loads(manifest.read_text(encoding="utf-8"))
    data["build_id"] = "../../../outside"
    manifest.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(IndexDamagedError, match=re.escape("names build_id '../../../outside'")) as refused:
        IndexStore(tmp_path / "indexes").open("notes", minilm)
    assert "\n" not in str(refused.value) and "hopgraph index PATH --name notes" in str(refused.value)

    (index_dir / "current").unlink()
    (index_dir / "current").symlink_to("../../../outside")
    with pytest.raises(IndexDamagedError, match="not at one of the index's builds"):
        IndexStore(tmp_path / "indexes").open("notes", minilm)
    with pytest.raises(IndexDamagedError):
        store.current_manifest("notes")
    assert not (tmp_path / "outside").exists() and not (tmp_path.parent / "outside").exists()


def test_a_linked_builds_folder_is_not_emptied(tmp_path: Path, minilm: Embedder) -> None:
    """A rebuild deletes every build but the new one; in a `builds` folder that is a link, that would
    delete whatever the link points at. The deletion is refused and the folder's other files survive."""
    built_store(tmp_path, minilm)
    index_dir = tmp_path / "indexes" / "notes"
    elsewhere = tmp_path / "elsewhere"
    shutil.move(index_dir / "builds", elsewhere)
    (elsewhere / "precious").mkdir()
    (elsewhere / "precious" / "thesis.tex").write_text("years of work", encoding="utf-8")
    (index_dir / "builds").symlink_to(elsewhere)
    changed = [*DOCS, Document(id="new", title="Roadster", text="The Roadster is Tesla's first car.")]
    with pytest.raises(LinkedPathError, match="is a symbolic link"):
        IndexStore(tmp_path / "indexes").build("notes", changed, minilm, SMALL)
    assert (elsewhere / "precious" / "thesis.tex").read_text(encoding="utf-8") == "years of work"


MARKUP_TITLE = "[link=https://attacker.example/]Cybertruck facts[/link]"
MARKUP_ANSWER = "[/bold] Cybertruck"


@pytest.fixture
def markup_reader(
    scripted_cli: ScriptedChatModel,
    settings: Settings,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> ScriptedChatModel:
    """`hopgraph` in this process over the session's settings, the reader scripted to answer with a closing
    rich tag."""
    llm, model = scripted_gateway(lambda _prompt: MARKUP_ANSWER)
    monkeypatch.setitem(services_for(settings)._built, "llm", llm)
    monkeypatch.chdir(tmp_path)
    return model


def test_corpus_titles_and_answers_print_as_text(
    markup_reader: ScriptedChatModel, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """rich reads `[...]` as markup: a title `[link=URL]` printed as a terminal link, and an answer holding
    `[/bold]` ended `ask` with a MarkupError. Both print as the text they are."""
    corpus = tmp_path / "markup.jsonl"
    record = {"id": "m1", "title": MARKUP_TITLE, "text": "Tesla's Cybertruck is an electric pickup truck."}
    corpus.write_text(json.dumps(record) + "\n", encoding="utf-8")
    code, _, err = hopgraph(["index", str(corpus), "--name", "markup"], capsys)
    assert code == 0, err
    code, out, err = hopgraph(["ask", "Which pickup truck?", "--index", "markup", "--k", "1"], capsys)
    assert code == 0, err
    assert MARKUP_TITLE[:60] in out
    assert f"Answer: {MARKUP_ANSWER}" in out
    assert markup_reader.prompts
    # a thread id is the user's text too, and `history` prints it back with the checkpoint's names
    thread = "run[/bold][link=https://example.com]1"
    args = ["ask", "Which pickup truck?", "--index", "markup", "--k", "1", "--thread-id", thread]
    code, out, err = hopgraph(args, capsys)
    assert code == 0, err
    code, out, err = hopgraph(["history", thread], capsys)
    assert code == 0, err
    assert f"thread {thread} · method naive · index markup" in out and MARKUP_TITLE[:60] in out


def test_a_dollar_in_a_method_label_draws_as_text() -> None:
    """A variant label is the user's text; a pair of `$` in it made matplotlib parse mathtext and abort the
    report (`$x^$` is no formula). Labels are drawn verbatim."""
    label = "naive+note=$x^$"
    record = {"llm": {"calls": 1}, "metrics": {"f1": 1.0, "em": 1.0}}
    figure = f1_vs_calls_figure({"hotpot$qa$": {label: [record, record]}}, {label: "#1f77b4"})
    figure.canvas.draw()
    shown = [text.get_text() for text in figure.findobj(Text)]
    assert {r"naive+note=\$x^\$ (n=2)", r"hotpot\$qa\$"} <= set(shown)


@pytest.mark.parametrize(
    ("database", "opened"),
    [
        ("checkpoints.sqlite", checkpointer_for),
        ("llm_cache.sqlite", lambda settings: ResponseCache(settings.data_dir / "llm_cache.sqlite")),
    ],
    ids=["checkpoints", "response cache"],
)
def test_a_database_planted_as_a_link_in_the_data_directory_is_refused(
    tmp_path: Path, database: str, opened: Callable[[Settings], object]
) -> None:
    """SQLite writes the file a link names: a copied data directory with `checkpoints.sqlite ->
    elsewhere` (or the response cache's) is refused in one line, and nothing is written where it points."""
    data_dir = tmp_path / "data"
    data_dir.mkdir(mode=0o700)
    elsewhere = tmp_path / "elsewhere.sqlite"
    (data_dir / database).symlink_to(elsewhere)
    with pytest.raises(LinkedPathError, match=rf"{re.escape(database)}: this file is a symbolic link"):
        opened(Settings(data_dir=data_dir))
    assert not elsewhere.exists()


def test_the_data_directory_is_created_readable_by_its_owner_only(tmp_path: Path) -> None:
    """Indexes of private corpora, checkpoints and the response cache live there."""
    for opened, name in ((services_for, "services"), (checkpointer_for, "checkpoints")):
        data_dir = tmp_path / name / "hopgraph"
        opened(Settings(data_dir=data_dir))
        assert os.stat(data_dir).st_mode & 0o777 == 0o700


def test_a_data_directory_others_can_read_is_named_once_with_the_command_that_closes_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """An existing directory keeps its mode (its owner may share it on purpose) but is named, once."""
    data_dir = tmp_path / "shared-data"
    data_dir.mkdir(mode=0o755)
    os.chmod(data_dir, 0o755)
    with caplog.at_level(logging.WARNING, logger="hopgraph"):
        services_for(Settings(data_dir=data_dir))
        checkpointer_for(Settings(data_dir=data_dir))
    [warning] = [
        record.getMessage()
        for record in caplog.records
        if "can be read by other users" in record.getMessage()
    ]
    assert str(data_dir) in warning and "0o755" in warning and f"chmod 700 {data_dir}" in warning
    assert os.stat(data_dir).st_mode & 0o777 == 0o755


def test_an_unknown_index_is_named_with_the_others_only_on_the_command_line(
    markup_reader: ScriptedChatModel,
    settings: Settings,
    sample_index: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The store's message reaches Studio and API callers and names no other index (test_stores_index.py);
    the command line's user owns the data directory, and is shown what is there to pick from."""
    code, _, err = hopgraph(["ask", "Which pickup truck?", "--index", "nope"], capsys)
    assert code == 2 and len(err.splitlines()) == 1
    assert "No index named 'nope'" in err and f"Indexes in {settings.indexes_path}: " in err
    assert f"'{sample_index}'" in err
    assert markup_reader.prompts == []
