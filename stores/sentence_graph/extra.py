"""The sentence graph as an index extra: how the index store builds, keeps and opens it.

Everything the store must know about the graph is declared here, including the two forms that predate
extras and must not change: its build-id part and its old top-level manifest field.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict
from typing import Any, ClassVar

from stores.extras import Extra, ExtraBuild, ExtraSource
from stores.sentence_graph.build import build_sentence_graph
from stores.sentence_graph.params import SentenceGraphInfo, SentenceGraphParams
from stores.sentence_graph.parse import pipeline_identity
from stores.sentence_graph.reader import SentenceGraph

SENTENCE_COLLECTION = "sentences"


class SentenceGraphExtra(Extra[SentenceGraphParams, SentenceGraphInfo, SentenceGraph]):
    """ChainRAG's sentence graph: spaCy's sentences and entities, the embedder's vectors, three edge kinds."""

    name = "sentence_graph"
    description = "ChainRAG's sentence graph"
    params_type = SentenceGraphParams
    directory = "sentences"
    models: ClassVar[Mapping[str, str]] = {"nlp": "a spaCy pipeline that splits sentences and finds entities"}
    collections = (SENTENCE_COLLECTION,)
    legacy_field = "sentence_graph"

    def key(self, params: SentenceGraphParams, models: Mapping[str, Any]) -> Any:
        """[params, spaCy model], without the extra's name: the form build ids had before extras existed,
        kept so that indexes built then, and the results and response caches keyed by them, keep their ids."""
        return [asdict(params), pipeline_identity(models["nlp"])]

    def same_models(self, info: SentenceGraphInfo, models: Mapping[str, Any]) -> bool:
        """Entities found by another spaCy model cannot be reused."""
        return info.nlp == pipeline_identity(models["nlp"])

    def build(self, job: ExtraBuild[SentenceGraphParams]) -> tuple[SentenceGraphInfo, bool]:
        return build_sentence_graph(
            job.docs,
            job.models["nlp"],
            job.embedder,
            job.params,
            job.directory,
            job.collection(SENTENCE_COLLECTION),
            job.previous,
            job.report,
        )

    def open(self, source: ExtraSource[SentenceGraphInfo]) -> SentenceGraph:
        return SentenceGraph(source.directory, source.info.params, source.embedder)

    def info_from_dict(self, data: dict[str, Any]) -> SentenceGraphInfo:
        return SentenceGraphInfo.from_dict(data)


SENTENCE_GRAPH = SentenceGraphExtra()
