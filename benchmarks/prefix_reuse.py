"""Reused prompt prefixes and reply determinism in the embedded llama.cpp model (hopgraph.local_model.BATCH).

Two measurements and an estimate, one command:
- prompt evaluation speed at several batch sizes (tokens/s over one long prompt evaluated whole, best of
  two), which decides the batch a kept prefix is cut to;
- for prompts sharing a prefix with the call before them, the largest difference between the logits of
  the prompt's last token and those of the same prompt evaluated whole in an emptied context, when the
  context kept the whole shared prefix (llama-cpp-python's own reuse) and when it kept only its whole
  batches (hopgraph's: these prompts are plain sentences, with no message or blank line to cut batches
  at, hopgraph.local_model.batch_starts). Zero means the reply cannot depend on the call before;
- with `--runs`, what keeping only whole batches costs, from evaluation folders run before it: each
  call's reused prefix (llama.cpp's own count, kept per call in the results) less its whole batches is
  what the call would have evaluated again, per method, against the tokens it did evaluate (an upper
  bound since prompts cut their own batches: a prefix shared up to a cut is kept whole).

    .venv/bin/python -m benchmarks.prefix_reuse [--batches 512,256,128,64] [--prefixes 330,331,336,339]
        [--runs runs/*] [--skip-model]
"""

from __future__ import annotations

import argparse
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from evals.runner import answered_results
from hopgraph.local_model import BATCH, _counting_llama, ensure_gguf
from hopgraph.settings import Settings

# Stable text to cut prompts from: a sentence repeated, so any prefix length is available.
SENTENCE = "Read the numbered passages and answer about them, using only what they say. "


def _tokens(llama: Any, text: str) -> list[int]:
    return llama.tokenize(text.encode("utf-8"), add_bos=False)


def _last_logits(llama: Any) -> np.ndarray:
    return np.ctypeslib.as_array(llama._ctx.get_logits(), shape=(llama._n_vocab,)).copy()


def _first_token_logits(llama: Any, tokens: list[int]) -> np.ndarray:
    """Evaluate `tokens` as a completion does (`generate`, which keeps what it may of the context) up to
    the first sampled token, and return the logits that token was sampled from."""
    next(iter(llama.generate(tokens, temp=0.0)))
    return _last_logits(llama)


def evaluation_speed(model_path: str, batches: Sequence[int], prompt_tokens: int) -> dict[int, float]:
    """Prompt tokens per second evaluated whole, at each batch size (best of two)."""
    import llama_cpp

    speeds = {}
    for batch in batches:
        llama = llama_cpp.Llama(model_path=model_path, n_ctx=4096, n_threads=2, n_batch=batch, verbose=False)
        tokens = (_tokens(llama, SENTENCE * (prompt_tokens // 10)))[:prompt_tokens]
        seconds = []
        for _ in range(2):
            llama.reset()
            llama._ctx.kv_cache_clear()
            started = time.perf_counter()
            llama.eval(tokens)
            seconds.append(time.perf_counter() - started)
        speeds[batch] = prompt_tokens / min(seconds)
        del llama
    return speeds


def logit_differences(model_path: str, prefixes: Sequence[int]) -> list[tuple[int, float, float]]:
    """(shared prefix, max |logit difference| with llama-cpp-python's reuse, with hopgraph's) per prefix."""
    import llama_cpp

    plain = llama_cpp.Llama(model_path=model_path, n_ctx=2048, n_threads=2, n_batch=BATCH, verbose=False)
    hopgraph = _counting_llama()(model_path=model_path, n_ctx=2048, n_threads=2, n_batch=BATCH, verbose=False)
    stem = _tokens(plain, SENTENCE * 60)
    ending = _tokens(plain, "\nQuestion: which passage names the river?\nAnswer:")
    rows = []
    for prefix in prefixes:
        prompt = stem[:prefix] + ending
        before = stem[: prefix + 40]  # shares exactly `prefix` tokens with the prompt
        plain.reset()
        plain._ctx.kv_cache_clear()
        whole = _first_token_logits(plain, prompt)
        differences = []
        for llama in (plain, hopgraph):
            _first_token_logits(llama, before)
            differences.append(float(np.abs(_first_token_logits(llama, prompt) - whole).max()))
        rows.append((prefix, *differences))
    return rows


def extra_evaluation(runs: Sequence[Path]) -> dict[str, tuple[int, float, float]]:
    """Per method (its name before any `+setting`): questions, prompt tokens evaluated a question, and the
    tokens a question whole-batch reuse would have evaluated on top, over every answered question of
    `runs` (calls answered from the response cache evaluated nothing and are left out)."""
    questions: Counter[str] = Counter()
    evaluated: Counter[str] = Counter()
    extra: Counter[str] = Counter()
    for run in runs:
        for record in answered_results(run).values():
            method = str(record["method"]).split("+")[0]
            questions[method] += 1
            for step in record.get("steps") or []:
                for usage in (step.get("update") or {}).get("usage") or []:
                    if usage.get("cache_hits"):
                        continue
                    reused = usage["cached_tokens"]
                    evaluated[method] += usage["prompt_tokens"] - reused
                    extra[method] += reused % BATCH if reused > 1 else 0
    return {
        m: (questions[m], evaluated[m] / questions[m], extra[m] / questions[m]) for m in sorted(questions)
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--batches", default="512,256,128,64", help="batch sizes to time")
    parser.add_argument("--prompt-tokens", type=int, default=1536, help="length of the timed prompt")
    parser.add_argument("--prefixes", default="330,331,336,339,650", help="shared prefix lengths to compare")
    parser.add_argument(
        "--runs", nargs="*", type=Path, default=[], help="evaluation folders to estimate from"
    )
    parser.add_argument("--skip-model", action="store_true", help="only the estimate from --runs")
    args = parser.parse_args()
    if args.runs:
        print(f"Prompt tokens a question evaluated, and those keeping only whole batches of {BATCH} adds:")
        print("| method | questions | evaluated | added | added / evaluated |\n|---|---|---|---|---|")
        for method, (count, evaluated, extra) in extra_evaluation(args.runs).items():
            print(
                f"| {method} | {count} | {evaluated:,.0f} | {extra:,.0f} | {100 * extra / evaluated:+.1f}% |"
            )
    if args.skip_model:
        return
    settings = Settings()
    model_path = str(settings.local_model_path or ensure_gguf(settings.models_path))

    print(f"Prompt evaluation, {args.prompt_tokens} tokens evaluated whole (best of two):")
    print("| batch | tokens/s |\n|---|---|")
    for batch, speed in evaluation_speed(
        model_path, [int(b) for b in args.batches.split(",")], args.prompt_tokens
    ).items():
        print(f"| {batch} | {speed:.1f} |")
    print(f"\nLogits of a prompt's last token against the prompt evaluated whole (batch {BATCH}):")
    print(
        "| shared prefix | kept whole (llama-cpp-python) | kept in whole batches (hopgraph) |\n|---|---|---|"
    )
    for prefix, plain, ours in logit_differences(model_path, [int(p) for p in args.prefixes.split(",")]):
        print(f"| {prefix} | {plain:.3g} | {ours:.3g} |")


if __name__ == "__main__":
    main()
