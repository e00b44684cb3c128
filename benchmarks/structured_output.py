"""Structured output on and off (issue 34 item 1), paired per question, for each method, in one command.

    .venv/bin/python -m benchmarks.structured_output --out runs/structured [--limit 30] \
        [--methods chainrag,resp,ircot,decomposition,naive_qd] [--dataset hotpotqa] [--data DIR]

Runs `hopgraph eval` twice on the first `--limit` dev questions of the dataset (read from ../shared/data
as the evaluation harness reads it): once with `structured_output` off, once on. Each side is its own
process with its own data directory (index, checkpoints) under `--out`, the model directory shared, and no
response cache, so neither side's answers, KV prefixes, cached replies or index extras (QuOTE's and
BiQOG's questions and edges are written by the LLM too) reach the other, and each side's seconds are its
own calls. Re-running resumes both (the harness's results files). Printed per method and side: LLM calls
per question; per 100 calls, the fallbacks its state recorded (all of them, and those that were a
structured reply not of its shape) and the echoes; refusals of the shape by the server; EM, F1 and
seconds per question; then the paired differences on - off with the paired bootstrap's 95% interval
(evals.stats.paired_difference).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from evals.runner import answered_results
from evals.stats import bootstrap_ci, paired_difference
from hopgraph import Settings
from prompts.structured import UNREAD

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
DEFAULT_METHODS = "chainrag,resp,ircot,decomposition,naive_qd"
SIDES = ("off", "on")


def run_side(args: argparse.Namespace, side: str) -> Path:
    """`hopgraph eval` with structured output `side`, in its own process and data directory."""
    out = args.out / side
    env = {
        **os.environ,
        "HOPGRAPH_STRUCTURED_OUTPUT": "true" if side == "on" else "false",
        "HOPGRAPH_DATA_DIR": str(out / "data"),
        "HOPGRAPH_MODEL_DIR": str(Settings().models_path),  # the one assembled GGUF, not a copy per side
    }
    data = args.data or SHARED_DATA / args.dataset
    subprocess.run(
        [
            sys.executable, "-m", "hopgraph", "eval", "--dataset", args.dataset, "--data", str(data),
            "--out", str(out / "run"), "--methods", args.methods, "--limit", str(args.limit), "--no-cache",
            "--allow-failures",
        ],
        check=True,
        env=env,
    )  # fmt: skip
    return out / "run"


def outcomes(run_dir: Path) -> dict[str, dict[str, dict[str, float]]]:
    """method -> question -> what its latest answered record says (scores, cost, fallbacks, echoes)."""
    by_method: dict[str, dict[str, dict[str, float]]] = {}
    for (_, method, _), record in answered_results(run_dir).items():
        llm, fallbacks = record.get("llm") or {}, record.get("fallbacks") or []
        by_method.setdefault(method, {})[record["question"]] = {
            "em": float(record["metrics"].get("em", 0.0)),
            "f1": float(record["metrics"].get("f1", 0.0)),
            "seconds": float(record["seconds"]),
            "calls": float(llm.get("calls", 0)),
            "echoes": float(llm.get("echoes", 0)),
            "refused": float(llm.get("structured_refused", 0)),
            "fallbacks": float(len(fallbacks)),
            "unread": float(sum(UNREAD in note for note in fallbacks)),
        }
    return by_method


def _per_100_calls(rows: Sequence[Mapping[str, float]], key: str) -> str:
    calls = sum(row["calls"] for row in rows)
    return f"{100 * sum(row[key] for row in rows) / calls:.1f}" if calls else "–"


def _mean(rows: Sequence[Mapping[str, float]], key: str, scale: float = 100.0) -> str:
    mean, low, high = bootstrap_ci([row[key] for row in rows])
    return f"{scale * mean:.1f} [{scale * low:.1f}, {scale * high:.1f}]"


def table(runs: Mapping[str, Path]) -> str:
    """Markdown: per method and side the counts and scores, then per method the paired differences."""
    lines = [
        "| method | structured | n | calls / q | fallbacks / 100 calls | of them unread structured "
        "| echoes / 100 calls | refused | EM | F1 | s / q |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    sides = {side: outcomes(run) for side, run in runs.items()}
    for method in sorted({m for rows in sides.values() for m in rows}):
        for side, by_method in sides.items():
            rows = list(by_method.get(method, {}).values())
            if not rows:
                continue
            lines.append(
                f"| {method} | {side} | {len(rows)} | {sum(r['calls'] for r in rows) / len(rows):.1f}"
                f" | {_per_100_calls(rows, 'fallbacks')} | {_per_100_calls(rows, 'unread')}"
                f" | {_per_100_calls(rows, 'echoes')} | {sum(r['refused'] for r in rows):.0f}"
                f" | {_mean(rows, 'em')} | {_mean(rows, 'f1')} | {_mean(rows, 'seconds', 1.0)} |"
            )
    lines += [
        "",
        "| method | questions | EM on - off | F1 on - off | s / q on - off |",
        "|---|---|---|---|---|",
    ]
    for method in sorted(set(sides["off"]) & set(sides["on"])):
        off, on = sides["off"][method], sides["on"][method]
        common = sorted(set(off) & set(on))
        cells = []
        for key, scale in (("em", 100.0), ("f1", 100.0), ("seconds", 1.0)):
            mean, low, high = paired_difference([on[q][key] for q in common], [off[q][key] for q in common])
            cells.append(f"{scale * mean:+.1f} [{scale * low:+.1f}, {scale * high:+.1f}]")
        lines.append(f"| {method} | {len(common)} | {' | '.join(cells)} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="run folder (both sides resume)")
    parser.add_argument("--limit", type=int, default=30)
    parser.add_argument("--methods", default=DEFAULT_METHODS)
    parser.add_argument("--dataset", default="hotpotqa")
    parser.add_argument("--data", type=Path, help="the dataset's folder (default ../shared/data/DATASET)")
    args: Any = parser.parse_args(argv)
    runs = {side: run_side(args, side) for side in SIDES}
    print(table(runs))


if __name__ == "__main__":
    main()
