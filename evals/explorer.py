"""explorer.html: one self-contained page to see why a method wins or loses, question by question.

Written beside report.md from the same scored records (evals.report), so its leaderboard and error cells
are the report's own cells. The page holds its data (JSON), script (evals/explorer_page.js), styles and
plots (PNG as data URLs) inline: it opens from file:// with no server and no network, and uses no library.
Each passage's text is stored once per page, and the steps each method took (evals.steps, as kept in the
result lines) refer to it by id.
"""

from __future__ import annotations

import base64
import html
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from evals.leaderboard import ERROR_CELLS, error_cell
from evals.metrics import about_gold
from evals.runner import Record, evidence_spans, stored_gold
from stores.files import write_atomic

EXPLORER_FILE = "explorer.html"
_SCRIPT = Path(__file__).with_name("explorer_page.js")
_STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 1em 2em; color: #222; }
table { border-collapse: collapse; margin: .5em 0 1em; font-size: 12px; }
th, td { border: 1px solid #ccc; padding: 2px 6px; text-align: right; white-space: nowrap; }
th { background: #f3f3f3; cursor: pointer; } td:first-child, th:first-child { text-align: left; }
.filters { display: flex; gap: .5em; flex-wrap: wrap; margin: .5em 0; }
#panes { display: grid; grid-template-columns: minmax(18em, 1fr) 2.5fr; gap: 1.5em; }
#questions { max-height: 80vh; overflow-y: auto; padding-left: 1.2em; }
.method { border-top: 2px solid #ddd; margin-top: 1em; }
.step { border-left: 3px solid #9ab; margin: .4em 0; padding-left: .6em; }
.node { font-weight: bold; color: #246; } .key { color: #555; } .value { white-space: pre-wrap; }
.llm { color: #735; font-size: 12px; } .meta { color: #777; font-size: 12px; }
.passage details { display: inline; } .passage.gold { background: #fff6c8; } .mark { color: #a60; }
.right { color: #176b2c; } .wrong { color: #b0281c; } .fallbacks { color: #a35; }
.check .missing { color: #b0281c; }
img { max-width: 100%; }
"""


def _plot(path: Path) -> str:
    """An <img> of a plot as a data URL (the page must not depend on files beside it), or "" if missing."""
    if not path.is_file():
        return ""
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return f'<img alt="{html.escape(path.stem)}" src="data:image/png;base64,{data}">'


def _question(dataset: str, by_method: Mapping[str, Record], passages: dict[str, dict[str, Any]]) -> dict:
    """One question's page data: the question and its gold, then each method's answer and steps; every
    passage's text goes into `passages` once and is referred to by id."""
    first = next(iter(by_method.values()))
    gold = stored_gold(first)
    gold_ids: set[str] = set()
    results = {}
    for method, record in by_method.items():
        for item, is_gold in zip(
            record["evidence"], about_gold(gold, evidence_spans(record["evidence"])), strict=True
        ):
            passages.setdefault(item["id"], {k: item[k] for k in ("id", "doc_id", "title", "text")})
            if is_gold:
                gold_ids.add(item["id"])
        results[method] = {
            "prediction": record["prediction"],
            "em": record["metrics"]["em"],
            "f1": record["metrics"]["f1"],
            "outcome": record.get("outcome"),
            "sentence": record.get("answer_sentence"),
            "shortening": record.get("answer_shortening"),
            "check": record.get("refusal_check"),
            "cell": error_cell(record),
            "fallbacks": record.get("fallbacks") or [],
            "steps": record.get("steps") or [],
        }
    return {
        "key": f"{dataset}/{first['question_id']}",
        "dataset": dataset,
        "id": first["question_id"],
        "question": first["question"],
        "type": first.get("question_type"),
        "hops": first.get("hops"),
        "gold_answers": first["gold_answers"],
        "gold": [{"title": g.title, "text": g.text} for g in gold],
        "gold_passages": sorted(gold_ids),
        "results": results,
    }


def page_data(
    compared: Mapping[str, Mapping[str, Sequence[Record]]],
    board: tuple[list[str], list[list[str]]],
    errors: tuple[list[str], list[list[str]]],
) -> dict[str, Any]:
    """Everything the page shows: the report's leaderboard and error cells, and every question every
    method of its dataset answered, with each method's answer and steps."""
    passages: dict[str, dict[str, Any]] = {}
    questions = []
    for dataset, by_method in compared.items():
        by_id: dict[str, dict[str, Record]] = {}
        for method, records in by_method.items():
            for record in records:
                by_id.setdefault(record["question_id"], {})[method] = record
        questions += [_question(dataset, answers, passages) for answers in by_id.values()]
    return {
        "datasets": list(compared),
        "methods": list(dict.fromkeys(m for by_method in compared.values() for m in by_method)),
        "cells": [name for name, _ in ERROR_CELLS],
        "board": {"header": board[0], "rows": board[1]},
        "errors": {"header": errors[0], "rows": errors[1]},
        "questions": questions,
        "passages": passages,
    }


def write_explorer(out_dir: Path, title: str, data: Mapping[str, Any], plots: Sequence[str]) -> Path:
    """Write OUT_DIR/explorer.html: `data` (page_data) as inline JSON, the script and styles inline, and
    the named PNGs of OUT_DIR embedded."""
    # "</" would end the <script> element early if a passage contains it
    payload = json.dumps(data, ensure_ascii=False).replace("</", "<\\/")
    images = "".join(_plot(out_dir / name) for name in plots)
    page = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>{_STYLE}</style></head>
<body>
<h1>{html.escape(title)}</h1>
<h2>Leaderboard</h2><div id="board"></div>
<h2>Where answers are lost</h2><div id="errors"></div>
<details><summary>Plots</summary>{images}</details>
<div id="panes"><div id="browse"></div><div id="detail"></div></div>
<script id="data" type="application/json">{payload}</script>
<script>{_SCRIPT.read_text(encoding="utf-8")}</script>
</body></html>
"""
    path = out_dir / EXPLORER_FILE
    write_atomic(path, lambda handle: handle.write(page.encode("utf-8")))
    return path
