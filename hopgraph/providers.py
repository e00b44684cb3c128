"""Model providers: the LLM per role, the embedder, the reranker and spaCy, each built once per process.

Everything below graphs/, nodes/ and stores/ receives these objects; nothing there loads a model.
"""

from __future__ import annotations

import functools
import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from hopgraph.local_model import MODEL_ID, LocalLlamaChat, ensure_gguf
from hopgraph.onnx_export import ONNX_FILES, embedding_path, ensure_export, token_window
from hopgraph.settings import RoleSettings, Settings
from nodes.edge_judge import LLMEdgeJudge
from nodes.llm import LLMGateway, ReplyFormat, ResponseCache, RoleModel
from nodes.protocols import Reranker
from nodes.questions import LLMQuestionWriter
from nodes.window import prompt_tokens
from stores.bm25 import reciprocal_rank_fusion, scores_among, tokenize, top_positive
from stores.chroma import ChromaServer
from stores.errors import HopgraphError
from stores.index import ChunkIndex, IndexStore
from stores.redaction import redact

if TYPE_CHECKING:
    from graphs.treehop.model import TreeHopUpdate

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

SHIPPED_TREEHOP = Path(__file__).parent / "checkpoints" / "treehop.pt"
_log = logging.getLogger("hopgraph")


def treehop_checkpoint_of(settings: Settings) -> Path:
    """The TreeHop checkpoint these settings load: `treehop_checkpoint`, else the one shipped with the
    package."""
    return settings.treehop_checkpoint or SHIPPED_TREEHOP


"""TreeHop's default update, trained by `hopgraph train treehop` for EMBEDDED_EMBEDDING (see its .json)."""


class ConfigError(HopgraphError):
    """A setting that cannot be honoured, with the setting's name and a fix."""


class _LazyEmbedder:
    """Shared behaviour of the embedders: the model loads on first use, not on construction.

    Graphs are built (and Studio imports them) long before anything is embedded; holding an embedder must
    not cost a model load. `token_spans` reads the model's own fast tokenizer. `backend` is what computes
    the vectors (an index records it: vectors of two backends never mix in one), `space` the vector space
    they live in, which a trained TreeHop checkpoint records: the model's name, for every backend whose
    vectors equal the model's own.
    """

    backend = "sentence-transformers"
    # Queries remembered (`embed` of one text): a few hundred vectors of 384 floats, under a megabyte.
    REMEMBERED_QUERIES = 512

    def __init__(self, name: str) -> None:
        self.name = name
        self._loaded: Any = None
        self._dimension: int | None = None
        self._lock = threading.Lock()
        self._queries: OrderedDict[str, np.ndarray] = OrderedDict()
        self._queries_lock = threading.Lock()

    def _load(self) -> Any:
        raise NotImplementedError

    def _embed(self, texts: list[str]) -> np.ndarray:
        raise NotImplementedError

    def embed(self, texts: list[str]) -> np.ndarray:
        """Unit vectors of `texts`, in their order. The vector of a single text (a query) is remembered, the
        latest REMEMBERED_QUERIES of them: ChainRAG embeds each sub-question to pre-filter sentences, again
        to rerank them and again at every expansion step, so a sub-question cost a model pass each time
        (about 21 ms of CPU with ONNX fp32) for the same vector."""
        if len(texts) != 1:
            return self._embed(texts)
        (text,) = texts
        with self._queries_lock:
            if text in self._queries:
                self._queries.move_to_end(text)
                return self._queries[text][None, :].copy()
        vectors = self._embed(texts)
        with self._queries_lock:
            self._queries[text] = vectors[0].copy()
            if len(self._queries) > self.REMEMBERED_QUERIES:
                self._queries.popitem(last=False)
        return vectors

    @property
    def _model(self) -> Any:
        with self._lock:
            if self._loaded is None:
                self._loaded = self._load()
            return self._loaded

    @property
    def space(self) -> str:
        return self.name

    @property
    def dimension(self) -> int:
        if self._dimension is None:
            self._dimension = int(self.embed(["dimension probe"]).shape[1])
        return self._dimension

    def token_spans(self, text: str) -> list[tuple[int, int]]:
        encoded = self._model.tokenizer(
            text, add_special_tokens=False, return_offsets_mapping=True, verbose=False
        )
        return [(int(a), int(b)) for a, b in encoded["offset_mapping"]]


class SentenceTransformerEmbedder(_LazyEmbedder):
    """The Embedder protocol over sentence-transformers (torch)."""

    def _load(self) -> Any:
        from sentence_transformers import SentenceTransformer
        from transformers.utils import logging as transformers_logging

        transformers_logging.disable_progress_bar()  # a per-load weights bar is noise in a CLI trace
        model = SentenceTransformer(embedding_path(self.name), device="cpu")
        # BERT-style position tables go to 512 word pieces, but sentence-transformers caps the tokenizer at
        # the folder's max_seq_length (256 for MiniLM), so a 256-token chunk with its title loses its last
        # tokens here as in the onnx export's window (onnx_export.token_window): the vectors stay equal.
        model.max_seq_length = min(512, model.tokenizer.model_max_length)
        return model

    def _embed(self, texts: list[str]) -> np.ndarray:
        model = self._model
        with self._lock:  # torch inference from several graph threads at once only thrashes 2 cores
            vectors = model.encode(
                texts,
                batch_size=64,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        return np.asarray(vectors, dtype=np.float32)


class FlagEmbedder(_LazyEmbedder):
    """The Embedder protocol over FlagEmbedding's FlagModel (mean pooling suits MiniLM-style models)."""

    backend = "flag"

    def _load(self) -> Any:
        try:
            from FlagEmbedding import FlagModel
        except ImportError as exc:  # e.g. a transformers release without a module FlagEmbedding imports
            raise ConfigError(
                f"embedding_backend = 'flag' could not import FlagEmbedding ({exc}). Run "
                "`bash scripts/setup.sh`, which installs the versions the tests pass with "
                "(scripts/constraints.txt), or set "
                "embedding_backend = 'onnx' (the default) or 'sentence-transformers'."
            ) from exc
        return FlagModel(embedding_path(self.name), pooling_method="mean", use_fp16=False, devices="cpu")

    def _embed(self, texts: list[str]) -> np.ndarray:
        vectors = self._model.encode(texts, batch_size=64, convert_to_numpy=True)
        vectors = np.atleast_2d(np.asarray(vectors, dtype=np.float32))
        return vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)


class OnnxEmbedder(_LazyEmbedder):
    """The Embedder protocol over onnxruntime (`embedding_backend = "onnx"` or `"onnx-int8"`), running the
    model's ONNX export (hopgraph/onnx_export.py: exported on first use, or by `hopgraph model`) with its
    fast tokenizer, mean pooling and L2 normalisation, as sentence-transformers computes MiniLM's vectors.

    Neither torch nor transformers is imported to load or run it (only the export needs them). Measured on
    MultiHop-RAG (docs/benchmarks.md, "Embedding backends"): fp32 gives torch's vectors and embeds a question
    in 21 ms against 77 ms, whole chunks at about torch's speed; int8 embeds chunks 1.4x faster, its vectors
    at a cosine of 0.965 or more to them.
    """

    def __init__(self, name: str, backend: str, models_path: Path) -> None:
        super().__init__(name)
        self.backend = backend
        self._models_path = models_path

    @property
    def space(self) -> str:
        """int8 weights move every vector a little: a checkpoint trained on the model's own vectors is not
        one trained on these."""
        return self.name if self.backend == "onnx" else f"{self.name} [{self.backend}]"

    def _load(self) -> Any:
        folder = ensure_export(self._models_path, self.name)
        return _OnnxModel(folder / ONNX_FILES[self.backend], Path(embedding_path(self.name)))

    def _embed(self, texts: list[str]) -> np.ndarray:
        return self._model.embed(texts)  # no lock: the model runs concurrent callers side by side

    def token_spans(self, text: str) -> list[tuple[int, int]]:
        return [(int(a), int(b)) for a, b in self._model.spans.encode(text, add_special_tokens=False).offsets]


class _OnnxModel:
    """One onnxruntime session and the model's tokenizer, set up as sentence-transformers sets up its own
    (the same token window, texts sorted by length, each batch padded to its longest), run one batch per
    core at a time, each single-threaded.

    Why single-threaded runs side by side rather than one run at a time across the cores: a question is
    about 60 word pieces, too little work to split across cores without each operator's threads waiting on
    one another. Measured on 96 MultiHop-RAG queries on 2 cores (loaded by other work): one at a time with
    2 threads a run, 27 ms and 33 ms of CPU a query; 2 single-threaded runs side by side, 13 ms and 25 ms of
    CPU. Batching concurrent queries into one run saves nothing here: each is padded to the longest of its
    batch (80 word pieces for 8 queries of 59 on average), and batches of 8 cost 34-36 ms of CPU a query.
    So concurrent callers (an evaluation's questions) each run on a core of their own, and one call's
    texts are cut into at least one batch per core, run side by side (an index build's 64 chunks).
    """

    BATCH = 64

    def __init__(self, model_file: Path, source: Path) -> None:
        import onnxruntime
        from tokenizers import Tokenizer

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = 1
        self.session = onnxruntime.InferenceSession(
            str(model_file), options, providers=["CPUExecutionProvider"]
        )
        self.cores = os.cpu_count() or 1
        self._runs = threading.BoundedSemaphore(self.cores)  # more runs than cores only take turns
        self._workers = ThreadPoolExecutor(self.cores, thread_name_prefix="hopgraph-embed")
        self.inputs = [node.name for node in self.session.get_inputs()]
        self.spans = Tokenizer.from_file(str(source / "tokenizer.json"))
        padding = self.spans.padding or {}
        self.spans.no_truncation()  # the chunker reads every token of a document
        self.spans.no_padding()
        self.batches = Tokenizer.from_file(str(source / "tokenizer.json"))
        self.batches.enable_truncation(token_window(source))
        self.batches.enable_padding(
            pad_id=padding.get("pad_id", 0), pad_token=padding.get("pad_token", "[PAD]")
        )

    def embed(self, texts: list[str]) -> np.ndarray:
        """Unit vectors of `texts`, in their order: neighbours in length share a batch of at most BATCH,
        and a call has at least as many batches as there are cores (or texts), run side by side."""
        if not texts:
            return np.empty((0, 0), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        count = max(-(-len(texts) // self.BATCH), min(self.cores, len(texts)))
        batches = [batch.tolist() for batch in np.array_split(np.array(order, dtype=np.int64), count)]
        if len(batches) == 1:
            pooled = [self._run([texts[i] for i in batches[0]])]
        else:  # every batch ends before the call does, so a failed one leaves no run behind on a core
            running = [self._workers.submit(self._run, [texts[i] for i in batch]) for batch in batches]
            wait(running)
            pooled = [future.result() for future in running]
        vectors = np.empty((len(texts), pooled[0].shape[1]), dtype=np.float32)
        for batch, rows in zip(batches, pooled, strict=True):
            vectors[batch] = rows
        return vectors

    def _run(self, texts: list[str]) -> np.ndarray:
        """One batch through the model, once a core is free: mean-pooled, L2-normalised vectors."""
        encoded = self.batches.encode_batch(texts)
        feed = {
            "input_ids": np.array([e.ids for e in encoded], dtype=np.int64),
            "attention_mask": np.array([e.attention_mask for e in encoded], dtype=np.int64),
            "token_type_ids": np.array([e.type_ids for e in encoded], dtype=np.int64),
        }
        with self._runs:
            hidden = self.session.run(None, {name: feed[name] for name in self.inputs})[0]
        mask = feed["attention_mask"][..., None].astype(np.float32)
        pooled = (hidden * mask).sum(axis=1) / np.maximum(mask.sum(axis=1), 1e-9)
        return pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)


def embedder_for(settings: Settings) -> _LazyEmbedder:
    """The embedder `embedding_backend` names, over `embedding_model` (not loaded until first used)."""
    backend = settings.embedding_backend
    if backend in ONNX_FILES:
        return OnnxEmbedder(settings.embedding_model, backend, settings.models_path)
    return (FlagEmbedder if backend == "flag" else SentenceTransformerEmbedder)(settings.embedding_model)


class CrossEncoderReranker:
    """sentence-transformers' CrossEncoder from a path or name."""

    def __init__(self, model: str) -> None:
        from sentence_transformers import CrossEncoder

        self._model = CrossEncoder(model, device="cpu")

    def score(
        self,
        query: str,
        passages: list[str],
        vectors: np.ndarray | None = None,
        lexical: np.ndarray | None = None,
    ) -> list[float]:
        if not passages:
            return []
        return [
            float(s) for s in self._model.predict([(query, p) for p in passages], show_progress_bar=False)
        ]


class FlagRerankerAdapter:
    """FlagEmbedding's FlagReranker (e.g. BAAI/bge-reranker-large) from a path or name."""

    def __init__(self, model: str) -> None:
        from FlagEmbedding import FlagReranker

        self._model = FlagReranker(model, use_fp16=False, devices="cpu")

    def score(
        self,
        query: str,
        passages: list[str],
        vectors: np.ndarray | None = None,
        lexical: np.ndarray | None = None,
    ) -> list[float]:
        if not passages:
            return []
        scores = self._model.compute_score([[query, p] for p in passages])
        return [float(s) for s in np.atleast_1d(scores)]


class EmbeddingSimilarityReranker:
    """Cosine similarity of bi-encoder embeddings (`reranker = "embedding"`).

    Where candidates were pre-filtered by this same cosine (ChainRAG's seed step), it leaves their order
    unchanged; it is kept as the plain reference and as half of the hybrid default.
    """

    def __init__(self, embedder: _LazyEmbedder) -> None:
        self._embedder = embedder

    def score(
        self,
        query: str,
        passages: list[str],
        vectors: np.ndarray | None = None,
        lexical: np.ndarray | None = None,
    ) -> list[float]:
        if not passages:
            return []
        if vectors is None:  # one model pass for the query and the passages
            query_vector, *passage_vectors = self._embedder.embed([query, *passages])
            vectors = np.stack(passage_vectors)
        else:
            query_vector = self._embedder.embed([query])[0]
        return [float(s) for s in vectors @ query_vector]


class HybridReranker:
    """Offline default (`reranker = "hybrid"`): cosine and BM25 over the candidates, fused by reciprocal rank.

    No cross-encoder weights install from PyPI. A second stage that only re-sorts by the pre-filter's own
    cosine would change nothing, so this one adds a signal the pre-filter lacks: exact-word overlap, scored
    by BM25 over the candidates. On MultiHop-RAG's entity-heavy queries it raised the share of gold facts
    in the first 4,000 characters of 100 pre-filtered sentences from 0.42 (cosine order) to 0.50
    (benchmarks/seed_ranking.py). BM25's statistics are the candidates' own: with those of all 49,885
    sentences the share fell from 0.527 to 0.516 (1,550 queries, 3.4 standard errors), so a caller may pass
    the same scores from tokens it keeps (`lexical`), not scores from a larger collection.
    """

    def __init__(self, embedder: _LazyEmbedder) -> None:
        self._cosine = EmbeddingSimilarityReranker(embedder)

    def score(
        self,
        query: str,
        passages: list[str],
        vectors: np.ndarray | None = None,
        lexical: np.ndarray | None = None,
    ) -> list[float]:
        if not passages:
            return []
        cosine = self._cosine.score(query, passages, vectors)
        positions = range(len(passages))
        dense_ranking = sorted(positions, key=lambda i: -cosine[i])
        if lexical is None:
            lexical = scores_among(query, [tokenize(passage) for passage in passages])
        lexical_ranking = top_positive(np.asarray(lexical), len(passages)).tolist()
        fused = reciprocal_rank_fusion([dense_ranking, lexical_ranking])
        return [fused[i] for i in positions]


def index_store(settings: Settings, exact_search_max_chunks: int | None = None) -> IndexStore:
    """The configured index store: under `indexes_path`, on the Chroma server when `chroma_url` is set,
    exact dense search up to `exact_search_max_chunks` (the setting unless given: a benchmark compares)."""
    token = settings.chroma_token.get_secret_value() if settings.chroma_token else None
    chroma = ChromaServer(settings.chroma_url, token) if settings.chroma_url else None
    limit = settings.exact_search_max_chunks if exact_search_max_chunks is None else exact_search_max_chunks
    return IndexStore(settings.indexes_path, chroma, limit)


class BoundIndexes:
    """Opens indexes with the process's embedder (the IndexProvider nodes are handed), and says once per
    process of an index whose documents carry metadata the settings show with every passage (`shown`) but
    which was built without it: its passages then reach the reader with no source or date, whether the run
    came from the command line, the Python API or Studio."""

    def __init__(self, store: IndexStore, embedder: Any, shown: Sequence[str] = ()) -> None:
        self.store = store
        self._embedder = embedder
        self._shown = tuple(shown)
        self._checked: set[tuple[str, str]] = set()  # (name, build id) looked at (a look reads a chunk)
        self._lock = threading.Lock()

    def open(self, name: str) -> ChunkIndex:
        index = self.store.open(name, self._embedder)
        notice = self.unshown_metadata_notice(index)
        if notice:
            _log.warning("%s", notice)
        return index

    def unshown_metadata_notice(self, index: ChunkIndex) -> str | None:
        """The line saying `index` was built without the metadata line the settings show, the first time
        this build is looked at; None when it shows them, or after the first time (`hopgraph ask` prints
        the line its own way before the run, and the run's own opening then says nothing more)."""
        key = (index.manifest.name, index.manifest.build_id)
        with self._lock:
            if key in self._checked:
                return None
            self._checked.add(key)
        unshown = index.unshown_metadata(self._shown)
        if not unshown:
            return None
        name = index.manifest.name
        return (
            f"index {name!r} was built without the metadata line ({', '.join(unshown)}): its passages reach "
            f"the reader without them. Rebuild: `hopgraph index PATH --name {name}`."
        )


def _local_gguf(spec: str, settings: Settings) -> Path:
    """The GGUF a `local` spec runs: `local:PATH` names one for a single role (a second model beside the
    first, as ReSP's Table 4 swaps one role's model), bare `local` the configured or embedded one."""
    if spec.startswith("local:"):
        path = Path(spec.removeprefix("local:")).expanduser()
        if not path.is_file():
            raise ConfigError(
                f"llm = {spec!r}: no GGUF file at {path}. Give the path of a .gguf file after 'local:', "
                "or use 'local' for the embedded model."
            )
        return path
    return Path(settings.local_model_path or ensure_gguf(settings.models_path))


def build_chat_model(role: RoleSettings, settings: Settings) -> RoleModel:
    """A chat model for one role's settings: the embedded local model or any init_chat_model provider."""
    spec = role.llm or "local"
    if spec == "local" or spec.startswith("local:"):
        path = _local_gguf(spec, settings)
        local = LocalLlamaChat(
            model_path=str(path),
            n_ctx=settings.local_n_ctx,
            n_threads=settings.local_n_threads,
            contexts=settings.local_contexts,
        )
        embedded = spec == "local" and settings.local_model_path is None
        model_id = MODEL_ID if embedded else f"local:{path.name}"
        return RoleModel(
            local,
            model_id,
            f"local GGUF {path}",
            exclusive=True,
            reply_format="llama.cpp",
            context_window=settings.local_n_ctx,
            count_prompt=functools.partial(prompt_tokens, text_tokens=local.count_tokens),
        )
    if ":" not in spec:
        raise ConfigError(
            f"llm = {spec!r} is not understood: use 'local', 'local:/path/to/model.gguf' or "
            "'provider:model' such as 'openai:gpt-4o-mini' (with base_url for vLLM, Ollama or a llama.cpp "
            "server)."
        )
    from langchain.chat_models import init_chat_model

    kwargs: dict[str, Any] = {
        "temperature": 0.0,
        "timeout": settings.timeout,
        "max_retries": settings.max_retries,
    }
    if spec.startswith("openai:"):
        # a streamed reply (stream_mode="messages") carries its usage only when asked for, and ChatOpenAI
        # asks by default only of OpenAI's own URL; vLLM, Ollama and llama.cpp's server send it too
        kwargs["stream_usage"] = True
    key = role.api_key.get_secret_value() if role.api_key else None
    if role.base_url:
        kwargs["base_url"] = role.base_url
        kwargs["api_key"] = key or "not-needed"
    elif key:
        kwargs["api_key"] = key
    try:
        model = init_chat_model(spec, **kwargs)
    except Exception as exc:
        raise ConfigError(f"llm = {spec!r} could not be set up: {exc}") from exc
    # the model's id keys the response cache and the index extras it writes (recorded in manifests), and its
    # description goes into error messages: neither holds the base_url's credentials or query
    server = redact(role.base_url) if role.base_url else ""
    where = f" at {server}" if server else ""
    limits = f"timeout {settings.timeout:g} s, {settings.max_retries} retries"
    model_id = f"{spec}{'@' + server if server else ''}"
    # only OpenAI's API (and servers speaking it) takes a reply's schema as response_format; other providers
    # are never asked for one
    reply_format: ReplyFormat | None = "openai" if spec.startswith("openai:") else None
    return RoleModel(
        model,
        model_id,
        f"{spec}{where}; {limits}",
        provider_retries=settings.max_retries,
        reply_format=reply_format,
        context_window=settings.provider_n_ctx,
    )


class BuiltOnce:
    """Values built on first request and kept: concurrent first requests wait for the one build instead of
    loading twice (re-entrant, so a build may ask for another value)."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self.built: dict[Any, Any] = {}

    def __call__(self, key: Any, build: Callable[[], Any]) -> Any:
        with self._lock:
            if key not in self.built:
                self.built[key] = build()
            return self.built[key]


process_model = BuiltOnce()
"""The models of this process, shared by every Services that asks for one under the same key.

A model's weights depend only on what its key holds (the backend, the model, where it is read from), not on
the data directory or the LLM, so settings that differ in those alone (a second index folder, an
evaluation's own settings, every test's data directory) need not load it again: about 0.4 s of CPU for the
ONNX embedder and 0.9 s for spaCy each time on 2 cores. Their weights are only read, and what the embedder
remembers (its latest queries, under a lock) is the same whichever settings asked."""


class Services:
    """The heavy objects of one process, each built on first use and then shared by every graph and run;
    the embedder and spaCy are shared with other settings' Services too (`process_model`)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._shared = BuiltOnce()
        self._built = self._shared.built  # what is built so far (tests replace a part here)

    @property
    def embedder(self) -> _LazyEmbedder:
        settings = self.settings
        key = ("embedder", settings.embedding_backend, settings.embedding_model, str(settings.models_path))
        return self._shared("embedder", lambda: process_model(key, lambda: embedder_for(settings)))

    @property
    def indexes(self) -> BoundIndexes:
        return self._shared(
            "indexes",
            lambda: BoundIndexes(index_store(self.settings), self.embedder, self.settings.embed_metadata),
        )

    @property
    def reranker(self) -> Reranker:
        return self._shared("reranker", self._build_reranker)

    def _build_reranker(self) -> Reranker:
        kind, name = self.settings.reranker, self.settings.reranker_model
        if kind == "hybrid":
            return HybridReranker(self.embedder)
        if kind == "embedding":
            return EmbeddingSimilarityReranker(self.embedder)
        if not name:
            raise ConfigError(f"reranker = {kind!r} needs reranker_model (a path or a name).")
        try:
            return (FlagRerankerAdapter if kind == "flag" else CrossEncoderReranker)(name)
        except Exception as exc:
            raise ConfigError(
                f"The {kind} reranker {name!r} could not be loaded ({exc}). Point reranker_model at a local "
                "directory holding the model, or set reranker = 'hybrid' (the offline default)."
            ) from exc

    @property
    def llm(self) -> LLMGateway:
        return self._shared("llm", self._build_gateway)

    def _build_gateway(self) -> LLMGateway:
        """One model object per distinct (llm, base_url, key): roles that agree share a loaded model."""
        built: dict[tuple[str | None, str | None, str | None], RoleModel] = {}

        def model_for(role: RoleSettings) -> RoleModel:
            key = (role.llm, role.base_url, role.api_key)
            if key not in built:
                built[key] = build_chat_model(role, self.settings)
            return built[key]

        default = model_for(self.settings.role("default"))
        roles = {name: model_for(self.settings.role(name)) for name in self.settings.roles}
        cache = (
            ResponseCache(self.settings.data_dir / "llm_cache.sqlite") if self.settings.llm_cache else None
        )
        return LLMGateway(roles, default, cache, structured=self.settings.structured_output)

    @property
    def question_writer(self) -> LLMQuestionWriter:
        """Writes the `questions` extra's questions at index time (role "question_writer")."""
        return self._shared(
            "question_writer", lambda: LLMQuestionWriter(self.llm, self.settings.index_concurrency)
        )

    @property
    def edge_judge(self) -> LLMEdgeJudge:
        """Judges the `question_graph` extra's question-chunk edges at index time (role "edge_judge")."""
        return self._shared("edge_judge", lambda: LLMEdgeJudge(self.llm, self.settings.index_concurrency))

    def treehop_model(self) -> TreeHopUpdate:
        """TreeHop's update from the configured checkpoint (`treehop_checkpoint_of`)."""
        return self.treehop_model_at(treehop_checkpoint_of(self.settings))

    def treehop_model_at(self, path: Path) -> TreeHopUpdate:
        """TreeHop's update from the checkpoint at `path` (for the Python API and benchmarks comparing
        checkpoints). Loaded once per path; an embedder mismatch is a CheckpointError."""
        from graphs.treehop.model import load_checkpoint  # torch: only TreeHop's runs pay its import

        embedder = self.embedder
        return self._shared(
            f"treehop:{path.resolve()}", lambda: load_checkpoint(path, embedder.space, embedder.dimension)
        )

    @property
    def nlp(self) -> Any:
        import spacy

        name = self.settings.spacy_model
        return self._shared(
            "nlp", lambda: process_model(("spacy", name), lambda: spacy.load(name, disable=["lemmatizer"]))
        )
