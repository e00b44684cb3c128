"""How big explorer.html gets and how fast Chromium loads and filters it, at 50 questions x 11 methods.

    .venv/bin/python -m benchmarks.explorer_scale --from runs/s37-hotpotqa-50 [--methods 11] [--questions 50]

The page is built from a real run folder's result lines, each method's lines copied under as many labels as
--methods asks (11: one per method hopgraph has), so the page holds real answers, evidence and steps at
the size a full comparison reaches. Chromium (headless, Debian's) opens it three times: plain, with a pair
filter, and with a question opened; the page itself records when it was ready since navigation started
and how long applying the URL's filter took (`data-ready-ms`, `data-render-ms`). Targets: at most 15 MB,
loaded and filtered in under 2 s each.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from pathlib import Path

from evals.report import write_report
from evals.runner import read_records
from evals.steps import record_steps, thread_steps
from hopgraph import Settings, build_graph

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from browser import open_page


def with_steps(record: dict) -> dict:
    """The record with its steps; a line written before result lines kept them reads them from the
    checkpoint store of this machine's settings, as `hopgraph history` would."""
    if record.get("steps"):
        return record
    graph = build_graph(record["method"].split("+", 1)[0], Settings())
    steps = thread_steps(graph, {"configurable": {"thread_id": record["thread_id"]}})
    return {**record, "steps": record_steps(steps, record["evidence"])}


def scaled_folder(source: Path, target: Path, methods: int, questions: int) -> None:
    """`target`/results.jsonl: the source's first `questions` questions, each method's lines copied under
    labels m1..mN (round robin over the source's methods)."""
    records = read_records(source / "results.jsonl")
    results = [with_steps(r) for r in records if r.get("type") == "result" and r["error"] is None]
    ids = list(dict.fromkeys(r["question_id"] for r in results))[:questions]
    by_method: dict[str, list[dict]] = {}
    for r in results:
        if r["question_id"] in ids:
            by_method.setdefault(r["method"], []).append(r)
    originals = list(by_method)
    lines = []
    for i in range(methods):
        label = f"m{i + 1}-{originals[i % len(originals)]}"
        lines += [{**r, "method": label} for r in by_method[originals[i % len(originals)]]]
    target.mkdir(parents=True, exist_ok=True)
    (target / "results.jsonl").write_text(
        "".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8"
    )


def timings(dom: str) -> tuple[float, float]:
    ready = re.search(r'data-ready-ms="([\d.]+)"', dom)
    render = re.search(r'data-render-ms="([\d.]+)"', dom)
    assert ready and render, "the page did not finish its script"
    return float(ready.group(1)), float(render.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--from", dest="source", type=Path, required=True, help="a run folder of hopgraph eval"
    )
    parser.add_argument("--methods", type=int, default=11)
    parser.add_argument("--questions", type=int, default=50)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "scaled"
        scaled_folder(args.source, folder, args.methods, args.questions)
        write_report(
            folder, baseline=f"m1-{read_records(folder / 'results.jsonl')[0]['method'].split('-', 1)[1]}"
        )
        page = folder / "explorer.html"
        size = page.stat().st_size / 1e6
        data = json.loads(
            page.read_text(encoding="utf-8")
            .split('<script id="data" type="application/json">')[1]
            .split("</script>")[0]
        )
        print(
            f"page: {size:.2f} MB, {len(data['questions'])} questions x {len(data['methods'])} methods, "
            f"{len(data['passages'])} passages stored once"
        )
        question = data["questions"][0]["key"]
        rows = []
        for name, fragment in (
            ("load", ""),
            ("pair filter", f"pair={data['methods'][0]},{data['methods'][1]}"),
            ("open a question", f"q={question}"),
        ):
            dom, console = open_page(page, fragment, virtual_time=False)
            ready, render = timings(dom)
            rows.append((name, ready, render, len(console)))
        print("| view | ready since navigation (ms) | applying the URL's view (ms) | console messages |")
        print("|---|---|---|---|")
        for name, ready, render, messages in rows:
            print(f"| {name} | {ready:.0f} | {render:.0f} | {messages} |")
        ok = size <= 15 and all(ready < 2000 for _, ready, _, _ in rows)
        print(f"targets (<= 15 MB, each view ready in < 2 s): {'met' if ok else 'NOT met'}")


if __name__ == "__main__":
    main()
