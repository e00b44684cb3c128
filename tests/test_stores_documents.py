"""Corpus loading: the three formats, and an error that names the place for every way a corpus can be bad."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from stores.documents import Document, corpus_hash, first_heading, load_corpus
from stores.errors import CorpusError

CORPORA = Path(__file__).parent / "fixtures" / "corpora"


def test_folder_of_txt_and_md() -> None:
    docs = load_corpus(CORPORA / "notes")
    assert [d.id for d in docs] == ["sub/README.md", "sub/bees.txt", "volcanoes.md"]
    by_id = {d.id: d for d in docs}
    assert by_id["volcanoes.md"].title == "Volcanoes of Iceland"
    assert by_id["sub/bees.txt"].title == "bees"
    assert by_id["sub/README.md"].title == "README"  # a `##` heading is not a title
    assert by_id["sub/bees.txt"].text == (CORPORA / "notes" / "sub" / "bees.txt").read_text(encoding="utf-8")
    assert by_id["sub/bees.txt"].metadata == {"path": "sub/bees.txt"}


def test_folder_skips_hidden_paths(tmp_path: Path) -> None:
    (tmp_path / ".ipynb_checkpoints").mkdir()
    (tmp_path / ".ipynb_checkpoints" / "a.md").write_text("# Old\nstale copy", encoding="utf-8")
    (tmp_path / "a.md").write_text("# A\nfresh", encoding="utf-8")
    assert [d.id for d in load_corpus(tmp_path)] == ["a.md"]


def test_a_link_out_of_the_corpus_folder_is_skipped_and_named(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A corpus someone sends may hold `env.txt -> /proc/self/environ`: a link leading outside the folder
    is not read (what is indexed reaches the LLM provider); a link to a file inside it is."""
    secret = tmp_path / "secret.txt"
    secret.write_text("API_KEY=sk-not-for-the-index", encoding="utf-8")
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.md").write_text("# A\nfresh", encoding="utf-8")
    (corpus / "env.txt").symlink_to(secret)
    (corpus / "environ.txt").symlink_to("/proc/self/environ")  # the process's own environment, keys and all
    (corpus / "again.md").symlink_to(corpus / "a.md")
    os.mkfifo(corpus / "pipe.txt")  # not a regular file: reading it would wait for a writer for ever
    docs = load_corpus(corpus)
    assert [d.id for d in docs] == ["a.md", "again.md"]
    assert not any("sk-not-for-the-index" in d.text or "PATH=" in d.text for d in docs)
    assert "skipped env.txt, a link to" in caplog.text and "outside the corpus folder" in caplog.text
    assert "skipped environ.txt, a link to" in caplog.text


def test_jsonl_keeps_extra_scalars_and_drops_nulls() -> None:
    docs = load_corpus(CORPORA / "articles.jsonl")
    assert [d.id for d in docs] == ["espresso", "glacier", "sourdough"]
    glacier = docs[1]
    assert glacier.title == "Glacier retreat"
    assert glacier.metadata == {"source": "Climate Desk", "year": 2022, "peer_reviewed": False}
    assert docs[0].metadata["published_at"] == "2023-05-01T10:00:00+00:00"


def test_multihop_rag_json() -> None:
    docs = load_corpus(CORPORA / "multihop_rag.json")
    raw = json.loads((CORPORA / "multihop_rag.json").read_text(encoding="utf-8"))
    assert [d.id for d in docs] == [article["url"] for article in raw]
    first = docs[0]
    assert first.text == raw[0]["body"] and first.title == raw[0]["title"]
    assert "author" not in first.metadata  # null author dropped
    assert first.metadata["source"] == "FOX News - Entertainment"
    assert set(docs[1].metadata) == {"author", "source", "published_at", "category", "url"}


def test_multihop_rag_json_without_url_gets_positional_id(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    path.write_text(json.dumps([{"title": "T", "source": "S", "body": "Some body."}]), encoding="utf-8")
    assert load_corpus(path)[0].id == "doc-0"


def test_json_list_of_id_title_text(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    path.write_text(json.dumps([{"id": "a", "title": "A", "text": "alpha", "lang": "en"}]), encoding="utf-8")
    assert load_corpus(path) == [Document("a", "A", "alpha", {"lang": "en"})]


def _jsonl(tmp_path: Path, *lines: str) -> Path:
    path = tmp_path / "corpus.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


GOOD = '{"id": "a", "title": "A", "text": "alpha"}'


def test_bad_json_line_names_line_number(tmp_path: Path) -> None:
    path = _jsonl(tmp_path, GOOD, "", '{"id": "b", "text": ')
    with pytest.raises(CorpusError, match=r"corpus\.jsonl line 3: invalid JSON"):
        load_corpus(path)


def test_missing_id(tmp_path: Path) -> None:
    path = _jsonl(tmp_path, GOOD, '{"title": "B", "text": "beta"}')
    with pytest.raises(CorpusError, match=r"line 2: missing or empty 'id'"):
        load_corpus(path)


def test_empty_text(tmp_path: Path) -> None:
    path = _jsonl(tmp_path, '{"id": "a", "title": "A", "text": "  "}')
    with pytest.raises(CorpusError, match=r"line 1: missing or empty 'text'"):
        load_corpus(path)


def test_duplicate_id_names_both_lines(tmp_path: Path) -> None:
    path = _jsonl(tmp_path, GOOD, '{"id": "b", "text": "beta"}', GOOD)
    with pytest.raises(CorpusError, match=r"duplicate id 'a' at line 1 and line 3"):
        load_corpus(path)


def test_non_scalar_metadata_is_refused(tmp_path: Path) -> None:
    path = _jsonl(tmp_path, '{"id": "a", "text": "alpha", "tags": ["x"]}')
    with pytest.raises(CorpusError, match=r"line 1: metadata field 'tags' is a list"):
        load_corpus(path)


def test_reserved_metadata_is_refused(tmp_path: Path) -> None:
    path = _jsonl(tmp_path, '{"id": "a", "text": "alpha", "position": 3}')
    with pytest.raises(CorpusError, match=r"'position' is reserved"):
        load_corpus(path)


def test_json_list_error_names_index(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    path.write_text(json.dumps([{"id": "a", "text": "alpha"}, {"id": "", "text": "beta"}]), encoding="utf-8")
    with pytest.raises(CorpusError, match=r"list index 1: missing or empty 'id'"):
        load_corpus(path)


def test_undecodable_file_names_file_and_fix(tmp_path: Path) -> None:
    (tmp_path / "ok.txt").write_text("fine", encoding="utf-8")
    (tmp_path / "latin.txt").write_bytes("caf\xe9 cr\xe8me".encode("latin-1"))
    with pytest.raises(CorpusError, match=r"latin\.txt is not valid UTF-8.*convert it to UTF-8"):
        load_corpus(tmp_path)


def test_empty_corpus(tmp_path: Path) -> None:
    (tmp_path / "blank.md").write_text("  \n", encoding="utf-8")
    with pytest.raises(CorpusError, match=r"no non-empty documents.*Accepted: a folder of \.txt/\.md"):
        load_corpus(tmp_path)


def test_unknown_extension(tmp_path: Path) -> None:
    path = tmp_path / "corpus.csv"
    path.write_text("id,text\n", encoding="utf-8")
    with pytest.raises(CorpusError, match=r"corpus\.csv: unsupported file type.*\.jsonl"):
        load_corpus(path)


def test_missing_path(tmp_path: Path) -> None:
    with pytest.raises(CorpusError, match=r"nowhere does not exist.*Accepted"):
        load_corpus(tmp_path / "nowhere")


def test_document_drops_none_metadata() -> None:
    assert Document("a", "A", "x", {"k": None, "n": 1}).metadata == {"n": 1}


def test_corpus_hash_is_order_independent_and_content_sensitive() -> None:
    a = Document("a", "A", "alpha", {"s": "x", "n": 1})
    b = Document("b", "B", "beta")
    assert corpus_hash([a, b]) == corpus_hash([b, a])
    assert corpus_hash([a, b]) != corpus_hash([a, Document("b", "B", "beta!")])
    assert corpus_hash([a, b]) != corpus_hash([Document("a", "A", "alpha", {"s": "y", "n": 1}), b])
    assert corpus_hash([a]) == corpus_hash([Document("a", "A", "alpha", {"n": 1, "s": "x"})])


OLD_HEADING = re.compile(r"^#[ \t]+(.+?)[ \t#\r]*$", re.MULTILINE)  # quadratic on a long "# ..." line


@pytest.mark.parametrize(
    "text",
    [
        "# Volcanoes of Iceland\nbody",
        "intro\n\n#  Spaced title ##  \r\nbody",
        "## Not a title\n# The title\n",
        "#hashtag\n# Real\n",
        "# C#\n",
        "# Foo # bar\n",
        "#\t Tabbed\t#\n",
        "no heading at all",
        "# \n# Second\n",
    ],
)
def test_the_title_is_the_first_level_one_heading(text: str) -> None:
    old = OLD_HEADING.search(text)
    assert first_heading(text) == (old.group(1) if old else "")


def test_a_megabyte_heading_line_is_read_as_a_title() -> None:
    """The regular expression this replaced took hours on such a line (issue 40); the scan is linear."""
    title = "x" * 1_000_000
    assert first_heading(f"# {title} \n") == title
