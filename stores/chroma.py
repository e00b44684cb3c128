"""Where index builds keep their Chroma collections: an embedded database in each build's folder (the
default), or one Chroma server that every index and build shares (`chroma_url`).

The store and the extras name collections as the build knows them ("chunks", "sentences"); a
`ChromaPlace` maps those names to where they are:

    EmbeddedChroma   NAME/builds/<build id>/chroma/ holds the build's collections under their own names.
                     Copying a build's collections copies the folder; the folder goes with the build.
    ChromaServer     one server holds the collections of every build of every index, so the name there
                     carries both: "<index>--<build id>--chunks". Dropping a build deletes its collections
                     from the server.

Either way a query reaches a build only through the index's local `current` link and manifest (written
last), so a build's collections, half-written or complete, stay invisible to readers until the build is
switched to; and a build's collections are named by its build id, so an interrupted build resumes into
its own collections. Everything else of an index (manifest, BM25, extras' files) stays on local disk.
"""

from __future__ import annotations

import os
import shutil
from abc import ABC, abstractmethod
from pathlib import Path
from types import TracebackType
from typing import cast
from urllib.parse import urlsplit

import chromadb
import chromadb.config
import chromadb.errors
from chromadb.api.client import Client
from chromadb.api.models.Collection import Collection

from stores.errors import HopgraphError
from stores.files import batches
from stores.redaction import redact

# Chroma's SQLite layer limits how many ids one `get` may name; stay far below it.
GET_BATCH = 1000


def _settings(token: str | None = None) -> chromadb.config.Settings:
    """Telemetry off (indexes may hold private corpora), and a server `token` sent by chromadb's token
    client. A new object per client: chromadb's client constructors write their own fields (server host,
    API implementation, path) into the one they are given, so a shared one would turn the next embedded
    client into a server client."""
    if token is None:
        return chromadb.config.Settings(anonymized_telemetry=False)
    return chromadb.config.Settings(
        anonymized_telemetry=False,
        chroma_client_auth_provider="chromadb.auth.token_authn.TokenAuthClientProvider",
        chroma_client_auth_credentials=token,
    )


class ChromaUnreachableError(HopgraphError):
    """`chroma_url` names a server that does not answer."""


class BuildCollections:
    """The Chroma collections of one build, by the names the build gives them; close when done.

    `prefix` is what the place puts before each name (empty in a build's own embedded database).
    """

    def __init__(self, client: Client, prefix: str = "") -> None:
        self.client = client
        self._prefix = prefix

    def get(self, name: str) -> Collection:
        return self.client.get_collection(self._prefix + name, embedding_function=None)

    def get_or_create(self, name: str) -> Collection:
        """The collection `name` (cosine HNSW): created by a first run, kept by a resumed one."""
        return self.client.get_or_create_collection(
            self._prefix + name, embedding_function=None, metadata={"hnsw:space": "cosine"}
        )

    def names(self) -> list[str]:
        """The build's collection names (without the prefix)."""
        listed = (collection.name for collection in self.client.list_collections())
        return sorted(name[len(self._prefix) :] for name in listed if name.startswith(self._prefix))

    def delete(self, name: str) -> None:
        self.client.delete_collection(self._prefix + name)

    def close(self) -> None:
        self.client.close()

    def __enter__(self) -> BuildCollections:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()


class ChromaPlace(ABC):
    """Where builds' collections live; `index` and `build_id` name the build, `build_dir` is its folder."""

    @abstractmethod
    def open(self, index: str, build_id: str, build_dir: Path) -> BuildCollections:
        """The build's collections (none yet for a new build)."""

    @abstractmethod
    def started(self, index: str, build_id: str, build_dir: Path, first: str) -> bool:
        """Whether the build has begun writing, i.e. holds its `first` collection (the one written first
        by a fresh build and last by a copy), so a resumed build continues its own work."""

    @abstractmethod
    def copy(self, index: str, source: tuple[str, Path], target: tuple[str, Path], keep: list[str]) -> None:
        """Copy the collections `keep` of build `source` (build id, folder) into build `target`, the last
        of `keep` last; an interruption never leaves that last one partly copied."""

    @abstractmethod
    def drop(self, index: str, build_id: str, build_dir: Path) -> None:
        """Delete the build's collections (called just before its folder is deleted)."""

    @abstractmethod
    def describe(self) -> str:
        """Where the collections are, for people."""


class EmbeddedChroma(ChromaPlace):
    """An embedded Chroma database in each build's folder (`chroma/`).

    Chroma shares one system per path within a process and stops it when its last client is closed; every
    client opened here is closed when done with, so a deleted build folder that is later recreated (the
    corpus changed back) never meets a stale system still bound to the deleted files.
    """

    def open(self, index: str, build_id: str, build_dir: Path) -> BuildCollections:
        path = str(build_dir / "chroma")
        return BuildCollections(cast(Client, chromadb.PersistentClient(path=path, settings=_settings())))

    def started(self, index: str, build_id: str, build_dir: Path, first: str) -> bool:
        return (build_dir / "chroma").exists()

    def copy(self, index: str, source: tuple[str, Path], target: tuple[str, Path], keep: list[str]) -> None:
        """Complete builds are never written again, so their database can be copied while readers have it
        open; it is copied aside and renamed into place, so an interruption leaves no partial copy."""
        staging = target[1] / "chroma.copy"
        shutil.rmtree(staging, ignore_errors=True)
        shutil.copytree(source[1] / "chroma", staging)
        with BuildCollections(
            cast(Client, chromadb.PersistentClient(path=str(staging), settings=_settings()))
        ) as copied:
            for name in copied.names():
                if name not in keep:
                    copied.delete(name)
        os.replace(staging, target[1] / "chroma")

    def drop(self, index: str, build_id: str, build_dir: Path) -> None:
        """Nothing to do: the database is inside the build's folder."""

    def describe(self) -> str:
        return "embedded Chroma in each build's folder"


class ChromaServer(ChromaPlace):
    """A Chroma server (`chroma run --host H --port P --path DIR`) at `url`, shared by all indexes; `token`,
    when given, is sent as `Authorization: Bearer TOKEN` (chromadb's token client) to a server, or a proxy
    in front of it, that requires one."""

    def __init__(self, url: str, token: str | None = None) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ChromaUnreachableError(
                f"chroma_url = {redact(url)!r} is not an http(s) URL: use e.g. http://127.0.0.1:8000, or "
                "unset chroma_url to keep Chroma embedded in each index's folder."
            )
        self.url = redact(url)  # for messages and `describe`: credentials in the URL never reach them
        self._host = parts.hostname
        self._port = parts.port or (443 if parts.scheme == "https" else 80)
        self._ssl = parts.scheme == "https"
        self._token = token

    def _client(self) -> Client:
        try:
            client = chromadb.HttpClient(
                host=self._host, port=self._port, ssl=self._ssl, settings=_settings(self._token)
            )
        except (chromadb.errors.AuthorizationError, chromadb.errors.ChromaAuthError) as exc:
            raise ChromaUnreachableError(
                f"Chroma server at {self.url} refused the connection ({redact(str(exc))}): it takes a "
                "token; set chroma_token (HOPGRAPH_CHROMA_TOKEN) to it."
            ) from exc
        except Exception as exc:  # chromadb raises ValueError, httpx errors ... for a server not there
            raise ChromaUnreachableError(
                f"Chroma server at {self.url} is not reachable ({redact(str(exc))}): start it with "
                f"`chroma run --host {self._host} --port {self._port} --path DIR`, or unset chroma_url "
                "(HOPGRAPH_CHROMA_URL) to keep Chroma embedded in each index's folder."
            ) from exc
        return cast(Client, client)

    @staticmethod
    def prefix(index: str, build_id: str) -> str:
        return f"{index}--{build_id}--"

    def open(self, index: str, build_id: str, build_dir: Path) -> BuildCollections:
        return BuildCollections(self._client(), self.prefix(index, build_id))

    def started(self, index: str, build_id: str, build_dir: Path, first: str) -> bool:
        with self.open(index, build_id, build_dir) as collections:
            return first in collections.names()

    def copy(self, index: str, source: tuple[str, Path], target: tuple[str, Path], keep: list[str]) -> None:
        """Each collection is copied under a staging name and renamed into place."""
        with (
            self.open(index, *source) as old,
            self.open(index, *target) as new,
        ):
            present = new.names()
            for name in keep:
                staging = f"copy--{name}"
                for leftover in (staging, name):
                    if leftover in present:
                        new.delete(leftover)
                _copy_collection(old.get(name), new.get_or_create(staging))
                new.get(staging).modify(name=self.prefix(index, target[0]) + name)

    def drop(self, index: str, build_id: str, build_dir: Path) -> None:
        with self.open(index, build_id, build_dir) as collections:
            for name in collections.names():
                collections.delete(name)

    def describe(self) -> str:
        return f"Chroma server at {self.url}"


def _copy_collection(source: Collection, target: Collection) -> None:
    """Every record of `source` (vectors, documents, metadata) into `target`, in batches."""
    ids = source.get(include=[])["ids"]
    for batch in batches(ids, GET_BATCH):
        rows = source.get(ids=list(batch), include=["embeddings", "documents", "metadatas"])
        target.add(
            ids=rows["ids"],
            embeddings=rows["embeddings"],
            documents=rows["documents"],
            metadatas=rows["metadatas"],
        )
