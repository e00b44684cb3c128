"""report.md from results.jsonl alone: what a run measured, with the uncertainty it was measured with.

Built only from the JSONL (never from the benchmark or the models), so `hopgraph report` can rebuild it
at any time, also while a run is still writing, and on another machine; answers and evidence are scored
again from what each line stores, so the report follows the current metric rules. Every mean carries a 95%
bootstrap interval and methods are compared pairwise on the questions both answered, because on samples
of 20 to 50 questions two methods can differ by many points by chance alone.
"""

from __future__ import annotations

import html
import json
import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import combinations
from pathlib import Path
from typing import Any

from evals.explorer import page_data, write_explorer
from evals.leaderboard import (
    DEFAULT_BASELINE,
    ERROR_CELLS,
    Pooled,
    aligned_scores,
    error_counts,
    pooled_differences,
)
from evals.metrics import macro_by_hop
from evals.plots import ERRORS, F1_VS_CALLS, FOREST, HOP_CURVES, HopTables, write_plots
from evals.runner import (
    BUDGETS,
    KS,
    OFFICIAL_METRICS,
    Record,
    latest_results,
    read_records,
    rescore,
    results_path,
)
from evals.stats import bootstrap_ci, holm, paired_difference, paired_test
from stores.files import write_atomic
from stores.redaction import redact

REPORT_FILE = "report.md"
#: The leaderboard's per-dataset columns: answers, and retrieval at the middle reading budget.
_BOARD_METRICS = (("em", "EM"), ("f1", "F1"), ("recall@2000ch", "R@2k ch"), ("full@2000ch", "Full@2k ch"))
_ANSWER_METRICS = (("em", "EM"), ("f1", "F1"))
_BUDGET_METRICS = (
    *((f"recall@{c}ch", f"Recall@{c:,} ch") for c in BUDGETS),
    *((f"full@{c}ch", f"Full@{c:,} ch") for c in BUDGETS),
    ("recall@read", "Recall, all read"),
    ("full@read", "Full, all read"),
    ("coverage", "gold chars read"),
)
_K_METRICS = (*((f"recall@{k}", f"Recall@{k}") for k in KS), *((f"full@{k}", f"Full@{k}") for k in KS))
_OFFICIAL_NAMES = {"hits@4": "Hits@4", "hits@10": "Hits@10", "map@10": "MAP@10", "mrr@10": "MRR@10"}
#: What pairs of methods are compared on: (key, name, binary). Binary metrics are tested with the exact
#: McNemar test, continuous ones with a paired permutation test (evals.stats.paired_test).
_PAIRED_METRICS = (
    ("em", "EM", True),
    ("f1", "F1", False),
    ("recall@2000ch", "Recall@2,000 ch", False),
    ("full@2000ch", "Full@2,000 ch", True),
    ("coverage", "gold chars read", False),
)
#: Significance level of the "differs" mark, after the Holm correction over the whole report.
_ALPHA = 0.05
# Cost columns: (key in the record's `llm` totals, header, decimals). Plain means: they describe, not compare.
_COST = (
    ("calls", "LLM calls", 2),
    ("prompt_tokens", "prompt tok", 0),
    ("cached_tokens", "reused tok", 0),
    ("completion_tokens", "completion tok", 0),
    ("cache_hits", "cache hits", 2),
)
_MAX_LISTED_FAILURES = 20


def _pct(mean: float, low: float, high: float) -> str:
    if math.isnan(mean):
        return "–"
    return f"{100 * mean:.1f} [{100 * low:.1f}, {100 * high:.1f}]"


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else math.nan


def _num(value: float, decimals: int) -> str:
    return "–" if math.isnan(value) else f"{value:,.{decimals}f}"


def _table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


def _metric(records: Sequence[Record], key: str) -> list[float | None]:
    return [r["metrics"][key] for r in records]


def _method_order(runs: Sequence[Record], methods: Iterable[str]) -> list[str]:
    """Methods in the order the runs first listed them (the main comparison before methods a later start
    added, such as ablations), then any others by name."""
    order: list[str] = []
    for run in runs:
        order += [m for m in run["methods"] if m not in order]
    return order + sorted(set(methods) - set(order))


def _answers_table(answered: Mapping[str, list[Record]], failed: Mapping[str, list[Record]]) -> list[str]:
    header = ["Method", "n", "failed", *(name for _, name in _ANSWER_METRICS)]
    header += [name for _, name, _ in _COST] + ["seconds", "hops used", "echoes", "not answered"]
    rows = []
    for method, records in answered.items():
        row = [method, str(len(records)), str(len(failed.get(method, [])))]
        row += [_pct(*bootstrap_ci(_metric(records, key))) for key, _ in _ANSWER_METRICS]
        row += [_num(_mean([r["llm"][key] for r in records]), d) for key, _, d in _COST]
        row.append(_num(_mean([r["seconds"] for r in records]), 1))
        row.append(_num(_mean([r["metrics"]["hops_used"] for r in records]), 2))
        row.append(str(sum(int(r["llm"].get("echoes", 0)) for r in records)))
        row.append(_outcomes(records))
        rows.append(row)
    return _table(header, rows)


def _outcomes(records: Sequence[Record]) -> str:
    """How many answers were not plain answers (nodes.generate.AnswerOutcome), e.g. "best_span 3, refused 1";
    records written before outcomes were recorded count as answered."""
    counts = Counter(r.get("outcome") or "answered" for r in records)
    return ", ".join(f"{name} {n}" for name, n in sorted(counts.items()) if name != "answered") or "0"


def _common_questions_section(
    answered: Mapping[str, list[Record]], failed: Mapping[str, list[Record]]
) -> list[str]:
    """The answers table again on the questions every method answered, when methods ran on different sets.

    Ablations added later on the first 20 questions would otherwise sit beside means over 50, and a
    difference in the questions would read as a difference between the methods.
    """
    same = common_questions(answered)
    if all(len(same[m]) == len(records) for m, records in answered.items()):
        return []
    n_common = len(next(iter(same.values())))
    title = f"### Answers on the {n_common} questions every method answered"
    if not n_common:
        return ["", title, "", "No question was answered by every method."]
    return ["", title, "", *_answers_table(same, failed)]


def common_questions(answered: Mapping[str, list[Record]]) -> dict[str, list[Record]]:
    """Each method's records restricted to the questions every method answered, in the file's order.

    Retrieval, hop and paired tables compare methods, so they are computed on one set of questions: a
    method that failed or has not reached some questions yet would otherwise be averaged over others.
    """
    if not answered:
        return {}
    ids = set.intersection(*({r["question_id"] for r in records} for records in answered.values()))
    return {m: [r for r in records if r["question_id"] in ids] for m, records in answered.items()}


def _with_gold(records: Sequence[Record]) -> int:
    return sum(r["metrics"]["recall@read"] is not None for r in records)


def _metric_table(
    same: Mapping[str, list[Record]],
    metrics: Sequence[tuple[str, str]],
    extra: tuple[str, Callable[[Sequence[Record]], float]] | None = None,
) -> list[str]:
    """A row per method: n with gold evidence, each metric's mean and interval in %, then `extra` (a
    column name and a plain mean over the method's questions with gold evidence), if given."""
    header = ["Method", "n with gold evidence", *(name for _, name in metrics)]
    header += [extra[0]] if extra else []
    rows = []
    for method, records in same.items():
        row = [method, str(_with_gold(records))]
        row += [_pct(*bootstrap_ci(_metric(records, key))) for key, _ in metrics]
        if extra:
            row.append(_num(extra[1]([r for r in records if r["metrics"]["recall@read"] is not None]), 0))
        rows.append(row)
    return _table(header, rows)


def _chars_read(records: Sequence[Record]) -> float:
    """Mean characters of evidence read per question."""
    return _mean([sum(len(e["text"]) for e in r["evidence"]) for r in records])


def _chars_per_unit(records: Sequence[Record]) -> float:
    """Mean characters of one unit (chunk, sentence ...) read."""
    return _mean([len(e["text"]) for r in records for e in r["evidence"]])


def hop_table(answered: Mapping[str, list[Record]]) -> dict[str, list[tuple[int, float, float, float]]]:
    """(r, P_r, R_r, F1_r) per method, all methods over the same hops r = 1..(most hops any method took)."""
    per_method = {m: [r["metrics"]["hop_prf"] for r in records] for m, records in answered.items()}
    longest = max((len(q) for qs in per_method.values() for q in qs), default=0)
    return {m: macro_by_hop(qs, max_hop=longest) for m, qs in per_method.items()}


def _hop_section(table: Mapping[str, Sequence[tuple[int, float, float, float]]]) -> list[str]:
    longest = max((len(v) for v in table.values()), default=0)
    if not longest:
        return ["No question has gold evidence, so there are no hop-conditioned scores."]
    header = ["Method", *(f"r = {r}" for r in range(1, longest + 1))]
    rows = [
        [m, *(f"{100 * f1:.1f} ({100 * p:.1f} / {100 * rec:.1f})" for _, p, rec, f1 in values)]
        for m, values in table.items()
        if values
    ]
    return _table(header, rows)


def paired_rows(same: Mapping[str, list[Record]]) -> list[dict[str, Any]]:
    """A − B for every pair of methods and every paired metric, on the questions both answered (and, for
    retrieval, with gold): the bootstrap difference with its interval (the effect size), the number of
    pairs and the p-value of the test that fits the metric (exact McNemar / paired permutation)."""
    rows = []
    for a, b in combinations(same, 2):
        for key, name, binary in _PAIRED_METRICS:
            xs, ys = aligned_scores(same[a], same[b], key)
            n = sum(x is not None and y is not None for x, y in zip(xs, ys, strict=True))
            mean, low, high = paired_difference(xs, ys)
            p = paired_test(xs, ys, binary=binary) if n else math.nan
            rows.append(
                {
                    "pair": f"{a} − {b}",
                    "metric": name,
                    "diff": (mean, low, high),
                    "n": n,
                    "p": p,
                    "binary": binary,
                }
            )
    return rows


def with_holm(rows_by_section: Mapping[str, list[dict[str, Any]]]) -> dict[str, list[dict[str, Any]]]:
    """The rows with `p_holm`, Holm-corrected over every comparison of the report (all sections)."""
    flat = [row for rows in rows_by_section.values() for row in rows]
    adjusted = iter(holm([row["p"] for row in flat]))
    return {
        section: [{**row, "p_holm": next(adjusted)} for row in rows]
        for section, rows in rows_by_section.items()
    }


def _p(value: float) -> str:
    if math.isnan(value):
        return "–"
    return "<0.001" if value < 0.001 else f"{value:.3f}"


def _paired_section(rows: Sequence[Mapping[str, Any]], n_methods: int) -> list[str]:
    """The paired comparisons of one dataset, with p-values and the Holm-corrected "differs" mark."""
    if n_methods < 2:
        return ["Only one method was run; nothing to compare."]
    body = []
    for row in rows:
        mean, low, high = row["diff"]
        diff = "–" if math.isnan(mean) else f"{100 * mean:+.1f} [{100 * low:+.1f}, {100 * high:+.1f}]"
        test = "McNemar" if row["binary"] else "permutation"
        differs = "yes" if row["p_holm"] < _ALPHA else "no"
        body.append(
            [row["pair"], row["metric"], diff, str(row["n"]), test, _p(row["p"]), _p(row["p_holm"]), differs]
        )
    header = ["Pair", "Metric", "Difference (points)", "n paired", "test", "p", "p (Holm)", "differs"]
    return _table(header, body)


def _stats_section(answered: Mapping[str, list[Record]]) -> list[str]:
    """Each method's own statistics (`stats` in its final state), averaged over the questions that report
    them; methods that report none get no row, and no table when none does."""
    names = sorted({name for records in answered.values() for r in records for name in r.get("stats") or {}})
    if not names:
        return []
    rows = []
    for method, records in answered.items():
        reported = [r.get("stats") or {} for r in records]
        values = {name: [stats[name] for stats in reported if name in stats] for name in names}
        if any(values.values()):
            rows.append([method, *(_num(_mean(v), 2) if v else "" for v in values.values())])
    return [
        "",
        "### Method statistics",
        "",
        *_table(["Method", *names], rows),
        "",
        "What each method measures of its own run (nodes.state.AnswerOutput `stats`), mean per question.",
    ]


def _settings_section(runs: Sequence[Record]) -> list[str]:
    """Every start in the folder, and each method's context as it last ran (later starts may add
    methods, e.g. ablations run on fewer questions beside the main comparison)."""
    last = runs[-1]
    contexts: dict[str, Any] = {}
    for run in runs:
        contexts.update(run["context"])
    starts = [
        f"- {run['run_name']} {run['started_at']}: {plain(run['questions'])} questions (limit "
        f"{plain(run['limit'] or 'none')}), methods {', '.join(run['methods'])}, concurrency "
        f"{plain(run['concurrency'])}"
        for run in runs
    ]
    lines = [
        f"{len(runs)} start(s) in this folder, index {last['index']}:",
        "",
        *starts,
        "",
        "Runtime context per method (as it last ran):",
        "",
        "```json",
        json.dumps(contexts, indent=2, ensure_ascii=False),
        "```",
    ]
    if last["settings"]:
        lines += ["", "Models and settings (last start):", "", "```json"]
        # redacted again: a run line written before its writer redacted URLs may still hold credentials
        settings = json.dumps(last["settings"], indent=2, ensure_ascii=False, sort_keys=True)
        lines += [redact(settings), "```"]
    return lines


_CONTROL = re.compile(r"[\x00-\x1f\x7f\u0085\u2028\u2029]+")
_MARKDOWN = re.compile(r"([\\`*_\[\]|#!])")
# What in a name could end a table cell or a code span, or open a link: the emphasis marks (`_`, `*`) only
# restyle a name, and every label hopgraph writes is made of them (`naive+retrieval_mode=dense`)
_STRUCTURE = re.compile(r"([\\`\[\]|])")
_NAMES = ("method", "dataset", "run_name", "started_at", "index")  # the names a record gives, besides methods


def plain(text: object, marks: re.Pattern[str] = _MARKDOWN) -> str:
    """A record field as inert text in report.md: on one line (control characters and line breaks become
    a space, so a field cannot start a line of its own), HTML escaped and Markdown's marks backslashed, so
    a field from a shared results folder renders as the characters it holds and nothing else."""
    one_line = _CONTROL.sub(" ", str(text))
    return marks.sub(r"\\\1", html.escape(one_line, quote=False))


def inert_names(record: Record) -> Record:
    """`record` with the names it gives (its method label and dataset; a run line's name, start, index and
    methods) as inert text, for the report's tables, headings and settings. Only what could break the
    Markdown is escaped, so every name hopgraph writes reads as it was written, here and in the explorer."""
    names = {key: plain(record[key], _STRUCTURE) for key in _NAMES if isinstance(record.get(key), str)}
    if isinstance(record.get("methods"), list):
        names["methods"] = [plain(method, _STRUCTURE) for method in record["methods"]]
    return {**record, **names}


def _failures_section(failed: Mapping[str, list[Record]]) -> list[str]:
    listed = [r for records in failed.values() for r in records]
    if not listed:
        return []
    lines = [
        "",
        f"### Failed questions ({len(listed)})",
        "",
        "Left out of every mean above; re-running the same command retries them.",
        "",
    ]
    lines += [
        f"- {plain(r['method'])} · {plain(r['question_id'])}: {plain(r['error'])}"
        for r in listed[:_MAX_LISTED_FAILURES]
    ]
    if len(listed) > _MAX_LISTED_FAILURES:
        lines.append(f"- … and {len(listed) - _MAX_LISTED_FAILURES} more (see results.jsonl)")
    return lines


def _pooled_cell(row: Pooled | None) -> list[str]:
    if row is None or math.isnan(row.mean):
        return ["–", "–"]
    mark = " *" if row.p_holm < _ALPHA else ""
    return [f"{100 * row.mean:+.1f} [{100 * row.low:+.1f}, {100 * row.high:+.1f}]{mark}", _p(row.p_holm)]


def leaderboard_rows(
    compared: Mapping[str, Mapping[str, list[Record]]], pooled_rows: Sequence[Pooled], baseline: str
) -> tuple[list[str], list[list[str]]]:
    """(header, rows) of the leaderboard, a row per method: per dataset EM / F1 / retrieval at 2,000
    characters (on the questions every method of that dataset answered), cost per question over all
    datasets, and the pooled paired difference against the baseline."""
    methods = list(dict.fromkeys(m for by_method in compared.values() for m in by_method))
    pooled = {(row.method, row.metric): row for row in pooled_rows}
    header = ["Method"]
    header += [f"{dataset} {name}" for dataset in compared for _, name in _BOARD_METRICS]
    header += ["LLM calls", "prompt tok", "s / q"]
    header += [f"pooled ΔEM vs {baseline}", "p (Holm)", f"pooled ΔF1 vs {baseline}", "p (Holm)"]
    rows = []
    for method in methods:
        row = [method]
        for by_method in compared.values():
            records = by_method.get(method, [])
            row += [_pct(*bootstrap_ci(_metric(records, key))) for key, _ in _BOARD_METRICS]
        everywhere = [r for by_method in compared.values() for r in by_method.get(method, [])]
        row += [
            _num(_mean([r["llm"][key] for r in everywhere]), d)
            for key, d in (("calls", 2), ("prompt_tokens", 0))
        ]
        row.append(_num(_mean([r["seconds"] for r in everywhere]), 1))
        row += _pooled_cell(pooled.get((method, "EM"))) + _pooled_cell(pooled.get((method, "F1")))
        rows.append(row)
    return header, rows


def error_rows(compared: Mapping[str, Mapping[str, list[Record]]]) -> tuple[list[str], list[list[str]]]:
    """(header, rows) of error attribution: every answered question of each method and dataset in exactly
    one cell."""
    counts = error_counts(compared)
    header = ["Dataset", "Method", "n", *(name for name, _ in ERROR_CELLS)]
    rows = []
    for dataset, by_method in counts.items():
        for method, cells in by_method.items():
            n = sum(cells.values())
            shown = [
                f"{cells[name]} ({100 * cells[name] / n:.0f}%)" if cells[name] else "0"
                for name, _ in ERROR_CELLS
            ]
            rows.append([dataset, method, str(n), *shown])
    return header, rows


def _board_section(
    compared: Mapping[str, Mapping[str, list[Record]]],
    board: tuple[list[str], list[list[str]]],
    errors: tuple[list[str], list[list[str]]],
    baseline: str,
) -> list[str]:
    return [
        "",
        "## Leaderboard",
        "",
        *_table(*board),
        "",
        "Per dataset on the questions every method of it answered, in % with 95% intervals (R@2k ch /"
        " Full@2k ch: gold evidence found within the first 2,000 characters read). Cost columns: means per"
        f" question over all datasets. Pooled: the paired difference against {baseline} over the questions"
        f" both answered in every dataset, resampled within each dataset (a dataset weighs by its questions);"
        f" `*` when the Holm-corrected p (exact McNemar for EM, permutation for F1) is below {_ALPHA}."
        f" Forest plot: [{FOREST}]({FOREST}).",
        "",
        "### Where answers are lost",
        "",
        *_table(*errors),
        "",
        "Each answered question in one cell: right or wrong (EM) by how much of its gold evidence the"
        " method read before answering (all, part, none). `lost in reading`: all of it was read and the"
        " answer is still wrong; `lost in retrieval`: none of it was read. Questions without gold evidence"
        f" (null queries) are counted apart. Plot: [{ERRORS}]({ERRORS}).",
    ]


Grouped = dict[str, dict[str, list[Record]]]


def group_results(records: Sequence[Record]) -> tuple[Grouped, Grouped]:
    """Final outcomes as dataset -> method -> records, split into answered and failed.

    Answered records are scored anew from the evidence they store, so a report always applies the current
    metric rules, also to results written before a rule changed. Methods keep the runs' order and
    questions the file's order, so tables and plots are stable.
    """
    runs = [r for r in records if r.get("type") == "run"]
    answered: Grouped = {}
    failed: Grouped = {}
    for (dataset, method, _), record in latest_results(records).items():
        answered.setdefault(dataset, {}).setdefault(method, [])
        if record["error"] is None:
            answered[dataset][method].append(rescore(record))
        else:
            failed.setdefault(dataset, {}).setdefault(method, []).append(record)
        answered.setdefault(dataset, {}).setdefault(method, [])
    ordered: Grouped = {}
    for dataset, methods in answered.items():
        dataset_runs = [r for r in runs if r["dataset"] == dataset]
        # a method a run lists but has no result for yet (a run just started) gets no row
        ordered[dataset] = {m: methods[m] for m in _method_order(dataset_runs, methods) if m in methods}
    return ordered, failed


def write_report(
    out_dir: str | Path, sources: Sequence[str | Path] = (), baseline: str = DEFAULT_BASELINE
) -> Path:
    """Rebuild OUT_DIR/report.md and its plots from the results.jsonl of every folder in `sources` (OUT_DIR
    itself when none is given: one run's report); returns the report's path.

    Folders of different datasets (or models) pool into one leaderboard; where two hold the same dataset
    and method label, the later folder's answer to a question is the one kept.
    """
    out_dir = Path(out_dir)
    folders = [Path(source) for source in sources] or [out_dir]
    records = [inert_names(record) for folder in folders for record in read_records(results_path(folder))]
    out_dir.mkdir(parents=True, exist_ok=True)
    runs = [r for r in records if r.get("type") == "run"]
    answered, failed = group_results(records)
    compared = {dataset: common_questions(methods) for dataset, methods in answered.items()}
    hops: HopTables = {dataset: hop_table(same) for dataset, same in compared.items()}
    paired = with_holm({dataset: paired_rows(same) for dataset, same in compared.items()})
    pooled = pooled_differences(compared, baseline)
    board, errors = leaderboard_rows(compared, pooled, baseline), error_rows(compared)
    write_plots(compared, hops, pooled, out_dir, baseline)
    lines = [
        f"# Evaluation report: {out_dir.name}",
        "",
        f"Built from `results.jsonl` alone (rebuild with `hopgraph report {' '.join(map(str, folders))}"
        f"{'' if folders == [out_dir] else f' --out {out_dir}'}`), scored by the rules"
        " of docs/scoring.md. Scores are in %, each mean with its 95% percentile-bootstrap interval (2,000"
        " resamples, seed 0). A question that failed is left out of the means and listed below.",
        "",
        f"Plots: [hop-conditioned precision / recall / F1]({HOP_CURVES}) ·"
        f" [answer F1 against LLM calls]({F1_VS_CALLS}) · [differences against {baseline}]({FOREST}) ·"
        f" [where answers are lost]({ERRORS})",
    ]
    if not answered:
        lines += ["", "No results yet."]
    else:
        lines += _board_section(compared, board, errors, baseline)
    for dataset, methods in answered.items():
        dataset_runs = [r for r in runs if r["dataset"] == dataset]
        same = compared[dataset]
        n_same = len(next(iter(same.values()), []))
        lines += ["", f"## {dataset}", "", "### Answers and cost per question", ""]
        lines += _answers_table(methods, failed.get(dataset, {}))
        lines += _common_questions_section(methods, failed.get(dataset, {}))
        lines += [
            "",
            "EM / F1: SQuAD-normalised exact match and token F1, best over gold aliases; unanswerable"
            " (null) questions included, and a refusal a method kept on purpose (run with `unanswerable`)"
            " scored as the canonical refusal whatever its wording. Cost columns are plain means per"
            " question; `reused tok` are prompt"
            " tokens the model did not re-evaluate (KV prefix / provider prompt cache), `cache hits` calls"
            " answered by the LLM response cache. `seconds` is the wall time of the attempt that finished"
            " the question: shorter than a cold run after cache hits or a resume from a checkpoint."
            " `echoes`: replies, over all questions, that repeated their prompt's own instructions or"
            " examples (each asked again once; goal 0). `not answered`: answers that were not a plain"
            " answer (best_span = a refusal replaced by the best answer from the evidence; refused = empty;"
            " unanswerable = a refusal the method kept on purpose; checked = a refusal the refusal check"
            " overturned, every fact the question needs stated in the passages).",
            "",
            f"Every table below is computed on the {n_same} questions every method answered.",
            "",
            "### Retrieval at equal reading budget",
            "",
            *_metric_table(same, _BUDGET_METRICS, ("chars read", _chars_read)),
            "",
            "The cross-method comparison: Recall / Full within the first 1,000 / 2,000 / 4,000 characters"
            " the method read, in its own ranking (the last unit cut at the budget), so a method reading"
            " long chunks and one reading sentences are compared on the same amount of text. A gold item"
            " is found when what was read of its document covers half of it (or, for a MuSiQue paragraph,"
            " half of the sentence holding its sub-answer). `all read`: over everything the method read"
            " before answering; `gold chars read`: the share of the gold evidence's characters read.",
            "",
            "### Retrieval at k units",
            "",
            *_metric_table(same, _K_METRICS, ("chars per unit", _chars_per_unit)),
            "",
            "Recall@k: share of gold evidence found in the first k distinct units of the method's ranking;"
            " Full@k: all of it. Units differ in size between methods (last column), so @k measures unit"
            " size as much as retrieval: compare methods at equal budget above.",
        ]
        if dataset == "multihop_rag":
            lines += [
                "",
                "### MultiHop-RAG's own retrieval metrics",
                "",
                *_metric_table(same, [(key, _OFFICIAL_NAMES[key]) for key in OFFICIAL_METRICS]),
                "",
                "As the benchmark's retrieval_evaluate.py computes them over the method's first 10 units, on"
                " its non-null queries: Hits@k = a gold fact (spaces and newlines removed) inside one of"
                " the top k units; MAP@10 / MRR@10 its average precision and reciprocal rank. Hits@k is"
                " per query, not the share of facts (that is Recall@k).",
            ]
        lines += [
            "",
            "### Hop-conditioned retrieval: F1_r (Precision_r / Recall_r) after hop r",
            "",
            *_hop_section(hops[dataset]),
            "",
            "Macro-averaged over questions with gold evidence, on the evidence accumulated up to hop r; a"
            " question that stopped earlier keeps its last value; a round that found nothing new counts.",
            "",
            "### Paired differences",
            "",
            *_paired_section(paired[dataset], len(same)),
            "",
            "A − B on the questions both answered. The interval is the paired bootstrap's (an effect size);"
            " `p` is the exact McNemar test (binary metrics) or a paired permutation test (continuous ones);"
            f" `differs` = yes when the Holm-corrected p, over all {sum(map(len, paired.values()))}"
            f" comparisons of this report, is below {_ALPHA}. An interval that excludes 0 is not enough:"
            " 4 wins and 0 losses in 20 questions give one, and p = 0.125.",
        ]
        lines += _stats_section(methods)
        lines += _failures_section(failed.get(dataset, {}))
        if dataset_runs:
            lines += ["", "### Settings", "", *_settings_section(dataset_runs)]
    path = out_dir / REPORT_FILE
    text = "\n".join(lines) + "\n"
    write_atomic(path, lambda handle: handle.write(text.encode("utf-8")))
    data = page_data(compared, board, errors)
    write_explorer(
        out_dir, f"hopgraph explorer: {out_dir.name}", data, [FOREST, ERRORS, HOP_CURVES, F1_VS_CALLS]
    )
    return path
