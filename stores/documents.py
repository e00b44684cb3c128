"""Documents and the corpus loader.

A user points hopgraph at whatever they have (a folder of notes, a JSONL export, the MultiHop-RAG corpus
file) and gets one list of `Document`s. Every way a corpus can be unreadable is reported as a
`CorpusError` that names the file (and line or list position) and says what to change, because the person
reading it is fixing a data file, not debugging Python.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from stores.errors import CorpusError

_log = logging.getLogger("hopgraph")

Scalar = str | int | float | bool

# Chunk fields share Chroma's metadata namespace with document metadata (so a `where` clause can filter on
# `source` directly); a document field with one of these names would be overwritten, so it is refused.
RESERVED_METADATA_KEYS = frozenset({"doc_id", "title", "position", "char_start", "char_end"})

ACCEPTED_FORMATS = (
    "a folder of .txt/.md files; a .jsonl file with one {id, title, text, ...} object per line; "
    "a .json list of {id, title, text, ...} objects or of MultiHop-RAG articles "
    "{title, source, url, body, ...}"
)

_MULTIHOP_METADATA = ("author", "source", "published_at", "category", "url")

MAX_DOCUMENT_CHARS = 10_000_000
"""The longest document indexed (about 2.5 million tokens; a book is under one million characters): each is
read whole and its tokens held while it is chunked, and a corpus someone sends may hold a 100 MB file."""
MAX_LINE_CHARS = 1_000_000
"""The longest line of a document's text: spaCy's own limit for a whole text, and far past any paragraph;
a longer one is a dump, not prose."""


@dataclass(frozen=True)
class Span:
    """A piece of a document that retrieval returns (a chunk, a sentence): `text ==
    document.text[char_start:char_end]`, so evidence always maps back to the exact corpus text."""

    id: str
    doc_id: str
    title: str
    text: str
    position: int
    char_start: int
    char_end: int


@dataclass(frozen=True)
class Document:
    """One document of a user's corpus.

    `metadata` values are restricted to scalars because they end up as Chroma metadata (filterable with
    a `where` clause); None values are dropped rather than stored, since Chroma rejects them.
    """

    id: str
    title: str
    text: str
    metadata: dict[str, Scalar] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not self.id:
            raise ValueError(f"document id must be a non-empty string, got {self.id!r}")
        if not isinstance(self.title, str):
            raise ValueError(f"'title' must be a string, got {type(self.title).__name__}")
        if not isinstance(self.text, str):
            raise ValueError(f"'text' must be a string, got {type(self.text).__name__}")
        _check_size(self.text)
        clean: dict[str, Scalar] = {}
        for key, value in self.metadata.items():
            if value is None:
                continue
            if key in RESERVED_METADATA_KEYS:
                raise ValueError(
                    f"metadata field {key!r} is reserved for chunk bookkeeping "
                    f"({', '.join(sorted(RESERVED_METADATA_KEYS))}); rename it"
                )
            if not isinstance(value, str | int | float | bool):
                raise ValueError(
                    f"metadata field {key!r} is a {type(value).__name__}; metadata values must be strings, "
                    "numbers or booleans (Chroma stores only scalars), so flatten or drop it"
                )
            clean[key] = value
        object.__setattr__(self, "metadata", clean)


def _check_size(text: str) -> None:
    """Refuse a text over MAX_DOCUMENT_CHARS, or with a line over MAX_LINE_CHARS, naming what to do."""
    if len(text) > MAX_DOCUMENT_CHARS:
        raise ValueError(
            f"the text has {len(text):,} characters, more than the {MAX_DOCUMENT_CHARS:,} a document may "
            "have; split it into several documents"
        )
    for number, line in enumerate(text.split("\n"), start=1):
        if len(line) > MAX_LINE_CHARS:
            raise ValueError(
                f"line {number} of the text has {len(line):,} characters, more than the {MAX_LINE_CHARS:,} "
                "a line may have; break it into lines or paragraphs"
            )


def load_corpus(path: str | Path) -> list[Document]:
    """Load a corpus from a folder, a .jsonl file or a .json file, choosing the reader by what `path` is."""
    path = Path(path)
    if not path.exists():
        raise CorpusError(f"Corpus path {path} does not exist. Accepted: {ACCEPTED_FORMATS}.")
    if path.is_dir():
        docs = _load_folder(path)
    elif path.suffix.lower() == ".jsonl":
        docs = _load_jsonl(path)
    elif path.suffix.lower() == ".json":
        docs = _load_json(path)
    else:
        raise CorpusError(f"Cannot read corpus {path}: unsupported file type. Accepted: {ACCEPTED_FORMATS}.")
    if not any(doc.text.strip() for doc in docs):
        raise CorpusError(f"Corpus {path} holds no non-empty documents. Accepted: {ACCEPTED_FORMATS}.")
    return docs


def corpus_hash(docs: list[Document]) -> str:
    """Fingerprint a corpus so an unchanged corpus is recognised and not indexed twice.

    Sorted by id so that reordering files or lines does not count as a change.
    """
    digest = hashlib.sha256()
    for doc in sorted(docs, key=lambda d: d.id):
        record = [doc.id, doc.title, doc.text, sorted(doc.metadata.items())]
        digest.update(json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))
        digest.update(b"\n")
    return digest.hexdigest()


def first_heading(text: str) -> str:
    """The text of the first level-one Markdown heading ("# Title", closing #s and spaces dropped), or "".

    A scan line by line, linear in the text: the regular expression it replaces took 31 s on one
    32,000-character "# ..." line and hours on a megabyte (issue 40)."""
    for line in text.split("\n"):
        if line[:1] == "#" and line[1:2] in (" ", "\t"):
            title = line[1:].lstrip(" \t").rstrip(" \t#\r")
            if title:
                return title
    return ""


def _load_folder(root: Path) -> list[Document]:
    """Every .txt/.md file below `root`, skipping hidden files and folders (.git, editor checkpoints).

    A symbolic link is read only when it leads to a file inside `root`: a corpus someone sends may hold
    `env.txt -> /proc/self/environ`, and what is indexed reaches the LLM provider, answers and results.
    Links leading outside are skipped and named in a warning."""
    docs = []
    inside = root.resolve()
    for file in sorted(p for p in root.rglob("*") if p.suffix.lower() in {".txt", ".md"} and p.is_file()):
        rel = file.relative_to(root)
        if any(part.startswith(".") for part in rel.parts):
            continue
        if not file.resolve().is_relative_to(inside):
            _log.warning(
                "corpus %s: skipped %s, a link to %s outside the corpus folder", root, rel, file.resolve()
            )
            continue
        if file.stat().st_size > 4 * MAX_DOCUMENT_CHARS:  # UTF-8 takes at most 4 bytes a character
            raise CorpusError(
                f"{file}: {file.stat().st_size:,} bytes, more than a document of {MAX_DOCUMENT_CHARS:,} "
                "characters can be; split it into several files."
            )
        text = _read_utf8(file)
        title = first_heading(text) or file.stem
        try:
            doc = Document(id=rel.as_posix(), title=title, text=text, metadata={"path": rel.as_posix()})
        except ValueError as exc:
            raise CorpusError(f"{file}: {exc}.") from exc
        docs.append(doc)
    return docs


# Python's JSON parser recurses once per level of nesting and gives up near a thousand; a document is
# at most an object holding scalars, so deeper JSON is not a corpus (and its RecursionError no message).
_TOO_DEEP = (
    "JSON nested too deeply (lists or objects inside each other about a thousand times); a document is one "
    "object of {id, title, text, ...} with plain values."
)


def _load_jsonl(path: Path) -> list[Document]:
    """One {id, title, text, ...} object per line; errors name the 1-based line number."""
    return _collect(path, "line", _jsonl_records(path))


def _jsonl_records(path: Path) -> Iterator[tuple[int, Any]]:
    """Yield (line number, parsed object) for every non-blank line."""
    # split on "\n" only: str.splitlines would also break at U+2028, which JSON allows inside strings.
    for number, line in enumerate(_read_utf8(path).split("\n"), start=1):
        if not line.strip():
            continue
        try:
            yield number, json.loads(line)
        except json.JSONDecodeError as exc:
            message = f"{path} line {number}: invalid JSON ({exc.msg} at column {exc.colno})."
            raise CorpusError(message) from exc
        except RecursionError:
            raise CorpusError(f"{path} line {number}: {_TOO_DEEP}") from None


def _load_json(path: Path) -> list[Document]:
    """A JSON list of MultiHop-RAG articles or of {id, title, text, ...} objects; errors name the index."""
    try:
        data = json.loads(_read_utf8(path))
    except json.JSONDecodeError as exc:
        message = f"{path}: invalid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})."
        raise CorpusError(message) from exc
    except RecursionError:
        raise CorpusError(f"{path}: {_TOO_DEEP}") from None
    if not isinstance(data, list):
        raise CorpusError(f"{path}: expected a JSON list of documents, got a {type(data).__name__}.")
    return _collect(path, "list index", enumerate(data))


def _collect(path: Path, where: str, records: Iterable[tuple[int, Any]]) -> list[Document]:
    """Turn parsed records into documents, refusing malformed records and duplicate ids."""
    docs: list[Document] = []
    seen: dict[str, int] = {}
    for number, record in records:
        doc = _record_to_document(path, f"{where} {number}", number, record)
        if doc.id in seen:
            raise CorpusError(
                f"{path}: duplicate id {doc.id!r} at {where} {seen[doc.id]} and {where} {number}; "
                "ids must be unique."
            )
        seen[doc.id] = number
        docs.append(doc)
    return docs


def _record_to_document(path: Path, where: str, number: int, record: Any) -> Document:
    """Read one record: a MultiHop-RAG article when it has `body` and no `text`, else {id, title, text}."""
    if not isinstance(record, Mapping):
        raise CorpusError(f"{path} {where}: expected a JSON object, got {type(record).__name__}.")
    text_key = "body" if "body" in record and "text" not in record else "text"
    if text_key == "body":
        fields = {
            "id": record.get("url") or f"doc-{number}",
            "title": record.get("title") or "",
            "text": record["body"],
            "metadata": {key: record.get(key) for key in _MULTIHOP_METADATA},
        }
    else:
        doc_id = record.get("id")
        if isinstance(doc_id, int) and not isinstance(doc_id, bool):
            doc_id = str(doc_id)
        if not doc_id:
            raise CorpusError(f"{path} {where}: missing or empty 'id'; every document needs a unique id.")
        fields = {
            "id": doc_id,
            "title": record.get("title") or "",
            "text": record.get("text"),
            "metadata": {k: v for k, v in record.items() if k not in {"id", "title", "text"}},
        }
    if not isinstance(fields["text"], str) or not fields["text"].strip():
        raise CorpusError(f"{path} {where}: missing or empty {text_key!r}; every document needs text.")
    try:
        return Document(**fields)
    except ValueError as exc:
        raise CorpusError(f"{path} {where}: {exc}.") from exc


def _read_utf8(path: Path) -> str:
    """Read a corpus file as UTF-8 (a leading BOM is dropped), naming the file if it is not UTF-8."""
    try:
        return path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise CorpusError(
            f"{path} is not valid UTF-8 (byte {exc.start}); convert it to UTF-8, e.g. with "
            f"`iconv -f latin1 -t utf-8 {path.name} > {path.stem}.utf8{path.suffix}`."
        ) from exc
