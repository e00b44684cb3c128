"""benchmarks.prefix_reuse's estimate from evaluation folders: what keeping a reused prefix only in whole
batches would have evaluated again, from each call's recorded reuse. Hand-written result lines (only the
fields the estimate reads), so the arithmetic is checked against numbers worked out here."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.prefix_reuse import extra_evaluation
from evals.runner import results_path
from hopgraph.local_model import BATCH


def usage(sent: int, reused: int, cache_hits: int = 0) -> dict:
    return {"calls": 1, "prompt_tokens": sent, "cached_tokens": reused, "cache_hits": cache_hits}


def result(method: str, question: str, calls: list[dict], error: str | None = None) -> dict:
    steps = [
        {"node": "__start__", "update": {"question": question}},
        {"node": "read", "update": {"usage": calls}},
    ]
    return {
        "type": "result",
        "dataset": "hotpotqa",
        "method": method,
        "question_id": question,
        "error": error,
        "steps": steps,
    }


def test_each_call_adds_what_its_reused_prefix_holds_past_its_whole_batches(tmp_path: Path) -> None:
    lines = [
        {"type": "run", "run_name": "r"},
        # 2 * BATCH + 44 reused: 44 evaluated again; 1 reused (a new context's count): nothing.
        result("naive", "q1", [usage(700, 2 * BATCH + 44), usage(300, 1)]),
        # A variant counts with its method; a call answered from the response cache evaluated nothing.
        result("naive+retrieval_mode=dense", "q1", [usage(500, BATCH), usage(900, 0, cache_hits=1)]),
        # A failed question is not an answered one.
        result("resp", "q2", [usage(400, 100)], error="ProviderError: timeout"),
    ]
    results_path(tmp_path).write_text("".join(json.dumps(line) + "\n" for line in lines))

    estimate = extra_evaluation([tmp_path])

    # naive: 2 questions; evaluated (700 - 300) + (300 - 1) + (500 - 128) = 1,071; added 44.
    assert estimate == {"naive": (2, (700 - 2 * BATCH - 44 + 299 + 500 - BATCH) / 2, 44 / 2)}
