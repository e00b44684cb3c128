"""Start-up seconds of the `hopgraph` command, before and after a change, in one run.

    .venv/bin/python -m benchmarks.cold_start [--before REV] [--repeats 3]

Three commands a new user types first: `hopgraph methods`, `hopgraph ask --help`, and the first
`hopgraph ask` over the bundled sample index (NaiveRAG), timed up to the moment its first step (retrieval)
is printed: everything before the first LLM call, which is the model's time, not start-up. Each runs as a
fresh process, `--repeats` times, from two source trees alternately (the current one and `--before`,
checked out into a temporary git worktree), so the machine's load falls on both alike; the median is
printed, with the ratio after / before. One more run per command and tree with `python -X importtime`
says where the import seconds go, summed by top-level package (importtime's own overhead inflates these
by a few tenths of a second; the wall-clock columns come from the plain runs).

Each tree indexes the sample with its own code into a temporary data directory of its own (an index
follows the code that wrote it: its embedding backend, for one); the models folder stays the configured
one, so nothing is downloaded or assembled.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from benchmarks.trees import ROOT, checked_out
from hopgraph.settings import Settings

SAMPLE = ROOT / "hopgraph" / "sample" / "corpus.jsonl"
QUESTION = "Which company makes the Cybertruck?"
FIRST_STEP = "retrieve"  # NaiveRAG's first node: its line is printed when retrieval is done
DEFAULT_BEFORE = "41fa7fb"  # the last commit before the start-up work
COMMANDS: dict[str, list[str]] = {
    "hopgraph methods": ["methods"],
    "hopgraph ask --help": ["ask", "--help"],
    "first hopgraph ask (to its first step)": ["ask", QUESTION, "--index", "sample"],
}


@dataclass(frozen=True)
class Tree:
    label: str
    path: Path


def run_once(
    tree: Tree, args: Sequence[str], env: Mapping[str, str], importtime: bool = False
) -> tuple[float, str]:
    """Seconds until the command exits, or for `ask` until its first step is printed (the process is then
    stopped); and what the process wrote to stderr (importtime's report when asked for)."""
    flags = ["-X", "importtime"] if importtime else []
    waited_for_step = args[0] == "ask" and "--help" not in args
    seconds = None
    # stderr to a file: importtime's report outgrows a pipe's buffer, and the process would block on it
    with tempfile.TemporaryFile("w+") as errors:
        started = time.perf_counter()
        process = subprocess.Popen(
            [sys.executable, *flags, "-m", "hopgraph", *args],
            cwd=tree.path,  # `-m` puts the working directory first on sys.path: this tree's code is imported
            env=dict(env),
            stdout=subprocess.PIPE,
            stderr=errors,
            text=True,
        )
        assert process.stdout is not None
        for line in process.stdout:
            if waited_for_step and line.startswith(FIRST_STEP):
                seconds = time.perf_counter() - started
                process.kill()
                break
        code = process.wait()
        if seconds is None:
            seconds = time.perf_counter() - started
        errors.seek(0)
        report = errors.read()
    if code != 0 and not (waited_for_step and seconds is not None):
        raise SystemExit(f"{' '.join(args)} in {tree.path} ended with exit code {code}:\n{report[-2000:]}")
    if waited_for_step and code == 0:
        raise SystemExit(f"{' '.join(args)} in {tree.path} printed no {FIRST_STEP!r} step")
    return seconds, report


def imports_by_package(report: str) -> Counter[str]:
    """Seconds of import, each module's own time summed under its top-level package."""
    spent: Counter[str] = Counter()
    for line in report.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        own, _, name = line.split(":", 1)[1].split("|")
        spent[name.strip().split(".")[0]] += int(own) / 1e6
    return spent


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--before", default=DEFAULT_BEFORE, help="the git revision to compare with")
    parser.add_argument("--repeats", type=int, default=3, help="plain runs per command and tree")
    args = parser.parse_args()

    with (
        tempfile.TemporaryDirectory(prefix="hopgraph-cold-start-") as scratch,
        checked_out(args.before, Path(scratch) / "before") as before_path,
    ):
        after = Tree("after (this tree)", ROOT)
        before = Tree(f"before ({args.before})", before_path)
        trees = (before, after)
        # each tree indexes the sample with its own code into its own data directory: an index's
        # manifest and vectors follow the code that wrote it (the embedding backend, for one)
        envs = {
            tree.label: os.environ
            | {
                "HOPGRAPH_DATA_DIR": str(Path(scratch) / f"data-{i}"),
                "HOPGRAPH_MODEL_DIR": str(Settings().models_path),
            }
            for i, tree in enumerate(trees)
        }
        for tree in trees:
            subprocess.run(
                [sys.executable, "-m", "hopgraph", "index", str(SAMPLE), "--name", "sample"],
                cwd=tree.path,
                env=envs[tree.label],
                check=True,
                capture_output=True,
            )
        print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f} at the start")
        seconds: dict[tuple[str, str], list[float]] = {}
        for _ in range(args.repeats):
            for name, command in COMMANDS.items():
                for tree in trees:
                    seconds.setdefault((name, tree.label), []).append(
                        run_once(tree, command, envs[tree.label])[0]
                    )
        imports = {
            (name, tree.label): imports_by_package(
                run_once(tree, command, envs[tree.label], importtime=True)[1]
            )
            for name, command in COMMANDS.items()
            for tree in trees
        }

    print(f"\nmedian of {args.repeats} fresh processes, seconds")
    print(f"{'command':42} {'before':>8} {'after':>8} {'ratio':>6}")
    for name in COMMANDS:
        was = statistics.median(seconds[(name, before.label)])
        now = statistics.median(seconds[(name, after.label)])
        print(f"{name:42} {was:8.2f} {now:8.2f} {now / was:6.2f}")
    print("\nimport seconds by package (python -X importtime, one run each): total, then the largest five")
    for name in COMMANDS:
        for tree in trees:
            spent = imports[(name, tree.label)]
            largest = ", ".join(f"{package} {s:.2f}" for package, s in spent.most_common(5))
            print(f"{name:42} {tree.label:24} {sum(spent.values()):6.2f}  {largest}")


if __name__ == "__main__":
    main()
