"""Index extras: what methods retrieve from beyond chunks, built into the same atomic, resumable build.

Chunks (the Chroma collection "chunks" and BM25) are the base of every index. Anything a method adds on
top (ChainRAG's sentence graph, a questions collection, a question-chunk graph, a trained model file,
metadata fields for filters) is an *extra*: a subclass of `Extra` that declares everything the store
needs to build, keep, copy and open it without knowing what it is:

    name          its key in the manifest's `extras` and on the command line (`hopgraph index --with NAME`)
    description   what it is, for people (error messages, the list of known extras)
    depends_on    other extras it is built from and opened with (the chunks are always there)
    params_type   dataclass of build parameters; they enter the build id and the manifest
    models        the models its build is handed, by the name hopgraph's Services provides each under
    directory     its folder in a build; `collections`: its collections in the build's Chroma database
    key()         its part of the build id
    build()       resumable: its folder and collections may hold an interrupted run's output; and
                  incremental: `previous` is its folder in the current build when that was made with the
                  same models, so work on unchanged documents can be reused
    open()        what queries use; an index opens each extra once, on first use, and shares it

Stores never load models or import LLM code: an extra that needs a model receives it in `models`, typed
by a protocol of stores/protocols.py. `stores.extra_registry` lists the extras by name; methods declare
the ones they need in graphs/registry.py.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Protocol, TypeVar

from stores.errors import HopgraphError, IndexNotFoundError

if TYPE_CHECKING:
    from chromadb.api.models.Collection import Collection

    from stores.chroma import BuildCollections
    from stores.chunking import Chunk
    from stores.documents import Document
    from stores.protocols import Embedder, Progress


CHUNK_COLLECTION = "chunks"
"""The base collection of every build, one entry per chunk (its vector, text and metadata): the index
writes it before any extra, which may read it."""


class ExtraInfo(Protocol):
    """An extra's part of the manifest: at least the parameters it was built with, so that rebuilding the
    index for an edited corpus builds the extra again alike."""

    @property
    def params(self) -> Any: ...


ParamsT = TypeVar("ParamsT")
InfoT = TypeVar("InfoT", bound=ExtraInfo)
ReaderT = TypeVar("ReaderT")


class UnknownExtraError(HopgraphError):
    """A name no index extra is registered under."""


class ExtraMissingError(IndexNotFoundError):
    """The index exists, but its current build lacks an extra a method retrieves from."""


@dataclass(frozen=True)
class ExtraBuild(Generic[ParamsT]):
    """What an extra's build is handed: the corpus, its parameters and models, and where to write."""

    params: ParamsT
    docs: Sequence[Document]
    embedder: Embedder
    models: Mapping[str, Any]
    directory: Path  # the extra's folder in the build being made; it exists
    previous: Path | None  # its folder in the index's current build, when made with the same models
    chroma: BuildCollections  # the build's Chroma collections, which already hold the chunks
    chunks: Callable[[], list[Chunk]]  # the build's chunks in corpus order, read when asked for
    dependencies: Mapping[str, Any]  # the extras of `depends_on`, opened from this build
    report: Progress

    def collection(self, name: str) -> Collection:
        """The build's Chroma collection `name` (cosine): created by a first run, kept by a resumed one."""
        return self.chroma.get_or_create(name)


@dataclass(frozen=True)
class ExtraSource(Generic[InfoT]):
    """What opening an extra for queries is handed: its files, its manifest part and the index's models."""

    directory: Path
    info: InfoT
    embedder: Embedder
    chroma: BuildCollections
    dependencies: Mapping[str, Any]


class Extra(ABC, Generic[ParamsT, InfoT, ReaderT]):
    """The declaration of one kind of extra (see the module docstring); one instance is registered.

    `ReaderT` is what queries read it through (`open`'s result): `ChunkIndex.extra(TheExtraClass)` returns
    that type, so a caller never casts an untyped lookup."""

    name: ClassVar[str]
    description: ClassVar[str]
    params_type: ClassVar[type]
    directory: ClassVar[str]
    depends_on: ClassVar[tuple[str, ...]] = ()
    models: ClassVar[Mapping[str, str]] = {}  # model name -> what it must be (named when it is missing)
    collections: ClassVar[tuple[str, ...]] = ()
    # The top-level manifest field that held this extra's info before manifests had `extras`.
    legacy_field: ClassVar[str | None] = None

    def key(self, params: ParamsT, models: Mapping[str, Any]) -> Any:
        """This extra's part of the build id (JSON-serialisable). An extra built with models must add
        their identity: another model makes another extra, so it must land in another build."""
        return [self.name, asdict(params)]

    def same_models(self, info: InfoT, models: Mapping[str, Any]) -> bool:
        """Whether the extra described by `info` was made with these `models`, so its work can be reused."""
        return True

    @abstractmethod
    def build(self, job: ExtraBuild[ParamsT]) -> tuple[InfoT, bool]:
        """Build into `job.directory` (and the build's Chroma database); returns (info, resumed)."""

    @abstractmethod
    def open(self, source: ExtraSource[InfoT]) -> ReaderT:
        """The object queries use."""

    @abstractmethod
    def info_from_dict(self, data: dict[str, Any]) -> InfoT:
        """Inverse of `dataclasses.asdict` on the info `build` returned (as read from manifest.json)."""
