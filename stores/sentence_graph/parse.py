"""The spaCy pass: split each document into sentences with exact spans and name their entities.

It is the slowest stage of a build and runs on one core, so it parses only documents whose text it has
no record of, skips the pipeline components whose output the graph never reads, and hands each record on
as soon as it exists so that embedding overlaps it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from stores.documents import Document
from stores.errors import CorpusError
from stores.protocols import NLPDoc, NLPPipeline, Progress
from stores.sentence_graph.records import DocRecord, text_sha

_SPACY_BATCH = 16
# Pipeline components whose output (POS tags, morphology, lemmas) a sentence graph never reads: skipping
# them for the pass saves about a fifth of spaCy's time with en_core_web_sm, without changing its output.
_UNNEEDED_PIPES = frozenset(
    {"tagger", "morphologizer", "attribute_ruler", "lemmatizer", "trainable_lemmatizer"}
)
_SENTENCE_PIPES = frozenset({"parser", "senter", "sentencizer"})
_WHITESPACE = re.compile(r"\s+")
_POSSESSIVE = re.compile(r"(?:['’][sS]|(?<=[sS])['’])$")
_LEADING_THE = re.compile(r"^the\s+")
_QUOTES = "\"'“”‘’()[]"


def pipeline_identity(nlp: NLPPipeline) -> str:
    """Name and version of a spaCy pipeline (part of the build id: another model finds other entities),
    after checking it can split sentences and find entities, so a wrong one fails before any work."""
    identity = f"{nlp.meta['lang']}_{nlp.meta['name']}-{nlp.meta['version']}"
    if "ner" not in nlp.pipe_names or not _SENTENCE_PIPES & set(nlp.pipe_names):
        raise ValueError(
            f"the spaCy pipeline {identity} must split sentences (parser, senter or sentencizer) and find "
            f"entities (ner); its enabled components are {nlp.pipe_names}"
        )
    return identity


def entity_display(text: str) -> str:
    """An entity mention as shown to people: single spaces, no possessive ("Apple's" -> "Apple")."""
    return _POSSESSIVE.sub("", _WHITESPACE.sub(" ", text).strip()).strip(_QUOTES + " ")


def entity_key(display: str) -> str:
    """What makes two mentions one entity: case and a leading "the" do not ("The Fed" = "the Fed")."""
    return _LEADING_THE.sub("", display.casefold())


def _parse(doc: Document, parsed: NLPDoc) -> DocRecord:
    """Sentences of one parsed document with exact spans (surrounding whitespace trimmed) and entities.

    spaCy attaches trailing whitespace ("\\n\\n") to a sentence and may yield whitespace-only ones: those
    are dropped, so positions count real sentences only and SA windows have no holes.
    """
    ents = list(parsed.ents)
    next_ent = 0
    sentences: list[list[Any]] = []
    for sent in parsed.sents:
        names: list[str] = []
        # An entity belongs to the sentence it starts in (spaCy's NER does not see sentence boundaries).
        while next_ent < len(ents) and ents[next_ent].start < sent.end:
            name = entity_display(ents[next_ent].text)
            if entity_key(name):
                names.append(name)
            next_ent += 1
        raw = sent.text
        text = raw.strip()
        if not text:
            continue
        start = sent.start_char + len(raw) - len(raw.lstrip())
        sentences.append([start, start + len(text), len(sent), text, names])
    return DocRecord(doc.id, doc.title, text_sha(doc.text), sentences)


def spacy_pass(
    docs: Sequence[Document],
    nlp: NLPPipeline,
    known: dict[str, DocRecord],
    on_record: Callable[[DocRecord], None],
    report: Progress,
) -> list[DocRecord]:
    """Split and tag every document whose text is not already in `known`, in one batched nlp.pipe pass.

    Each document's record goes to `on_record` as soon as it exists, so its sentences can be embedded
    while spaCy parses the next documents.
    """
    records: dict[str, DocRecord] = {}
    todo: list[Document] = []
    for doc in docs:
        record = known.get(doc.id)
        if record is not None and record.sha == text_sha(doc.text):
            records[doc.id] = DocRecord(doc.id, doc.title, record.sha, record.sentences)
            on_record(records[doc.id])
        else:
            if len(doc.text) > nlp.max_length:
                raise CorpusError(
                    f"Document {doc.id!r} has {len(doc.text)} characters, more than the spaCy pipeline's "
                    f"max_length ({nlp.max_length}); split it, or raise nlp.max_length if memory allows."
                )
            todo.append(doc)
    report("spacy", len(records), len(docs))
    disable = [pipe for pipe in nlp.pipe_names if pipe in _UNNEEDED_PIPES]
    parsed_docs = nlp.pipe((doc.text for doc in todo), batch_size=_SPACY_BATCH, disable=disable)
    for doc, parsed in zip(todo, parsed_docs, strict=True):
        records[doc.id] = _parse(doc, parsed)
        on_record(records[doc.id])
        report("spacy", len(records), len(docs))
    return [records[doc.id] for doc in docs]
