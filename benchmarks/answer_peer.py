"""hopgraph's answers against the plain dense RAG answer peer, question by question, in one command.

The peer (../shared/peers/plain_rag_answer_peer.py: top-5 paragraphs by MiniLM, "Reply with the answer
only: a few words, no sentence.", the same embedded GGUF) prints only its means; a paired comparison needs
its answer to each question. So this runs the peer's own code unchanged, with its llama.cpp model wrapped
to record each reply in the order the peer asks (per question: with retrieval, then closed book), then
scores those replies with the evaluation's metrics (the same SQuAD rules the peer uses) and compares them
with the methods of an evaluation run on the same questions by the paired bootstrap.

    .venv/bin/python -m benchmarks.answer_peer hotpotqa --run runs/after-hotpotqa-50 --limit 50 \
        [--against runs/before-hotpotqa-50] [--peer-out runs/peer/hotpotqa.jsonl]

The peer's replies go to RUN/peer-answers.jsonl and are read from there on a re-run (the peer takes about
5 s a question); `--fresh` runs it again; `--peer-out` reads the file the peer's own `--out` wrote instead.

Besides EM / F1 and the paired differences (bootstrap intervals; p the exact McNemar test on EM), each row
says where answers lose for their form: mean words per answer, the share longer than the closest gold
answer by more than three words, and of the questions the peer got right and the answerer wrong, how many
had a gold answer inside the answer (right, but not as the span EM credits). The paired differences are
also drawn, a row per answerer with its interval and p, into RUN/against-peer.png.

`--peer-reads METHOD` separates retrieval from reading: the peer's own code answers once more with its
retrieval replaced by the passages METHOD of RUN read, in the order it read them
(RUN/peer-reads-METHOD.jsonl). Against the peer, that row differs only in retrieval; METHOD against it,
only in the reader (printed below the table as "the same passages read by two readers").

    .venv/bin/python -m benchmarks.answer_peer musique --run runs/naive-musique --peer-reads naive

`--data FILE` sets the peer beside a run on another questions file, such as the disjoint questions that
`benchmarks.disjoint_questions` writes (whether a method is at least the peer's equal on questions it was
not tuned to): the peer asks that file's questions over the corpus the evaluation indexed for them.

    .venv/bin/python -m benchmarks.answer_peer musique --data runs/disjoint/musique.jsonl --limit 70 \
        --run runs/order-musique-disjoint
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from benchmarks.peer_scripts import SHARED, command_line, load
from evals.datasets import load_benchmark
from evals.metrics import answer_words, exact_match, normalize_answer, past_gold, token_f1
from evals.plots import Interval, intervals_figure, method_colors, save_figure
from evals.runner import answered_results, results_path
from evals.stats import bootstrap_ci, mcnemar_exact, paired_difference
from hopgraph import Settings
from hopgraph.local_model import ensure_gguf
from stores.files import write_atomic

DATA_FILES = {
    "hotpotqa": SHARED / "data" / "hotpotqa" / "hotpot_dev_distractor_v1.json",
    "musique": SHARED / "data" / "musique" / "musique_ans_v1.0_dev.jsonl",
    "2wikimultihopqa": SHARED / "data" / "2wikimultihopqa" / "2wikimultihopqa_dev_200.jsonl",
}
PEER_FILE = "peer-answers.jsonl"
PLOT_FILE = "against-peer.png"


def run_peer(
    dataset: str,
    limit: int,
    k: int,
    passages: Mapping[str, list[str]] | None = None,
    data: Path | None = None,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Run the peer as its own command line would; (one row per question, the peer's printed summary).

    With `passages` (question -> passages, best first), the peer's retrieval is replaced by them
    (`RoutedEncoder`), so its reader answers over exactly those: the peer's reading over another's retrieval.
    With `data`, a questions file the peer's own loader does not read (`peer_questions`), the peer asks
    that file's questions over the corpus `hopgraph eval --data` indexes for them; without it, the peer
    reads the slice's file with its own loader.
    """
    peer = load("plain_rag_answer_peer")
    replies: list[str] = []

    class RecordingLlama(peer.Llama):  # type: ignore[name-defined,misc]
        def create_chat_completion(self, *args: Any, **kwargs: Any) -> Any:
            out = super().create_chat_completion(*args, **kwargs)
            replies.append(out["choices"][0]["message"]["content"].strip().split("\n")[0])
            return out

    peer.Llama = RecordingLlama
    source = data or DATA_FILES[dataset]
    questions = peer_questions(dataset, data, limit) if data else peer.load(dataset, str(source), limit)
    if passages is not None:
        routed = RoutedEncoder({q: passages_for(passages, q, k) for q, _, _ in questions})
        questions = [(q, golds, routed.passages[q]) for q, golds, _ in questions]
        peer.SentenceTransformer = lambda *_, **__: routed
    peer.load = lambda *_: questions
    settings = Settings()
    gguf = settings.local_model_path or ensure_gguf(settings.models_path)
    argv = ["peer", dataset, str(source), str(gguf), "--limit", str(limit), "--k", str(k)]
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed), command_line(argv):
        peer.main()
    summary = json.loads(printed.getvalue().strip().splitlines()[-1])
    rows = [
        {"question": q, "gold_answers": golds, "rag": replies[2 * i], "closed_book": replies[2 * i + 1]}
        for i, (q, golds, _) in enumerate(questions)
    ]
    return rows, summary


def peer_questions(dataset: str, data: Path, limit: int) -> list[tuple[str, list[str], list[str]]]:
    """The first LIMIT questions of DATA as the peer's loader gives them (question, gold answers, paragraphs
    as "Title. text"), read by hopgraph's own loader, so any file `hopgraph eval --data` takes will do: the
    disjoint questions `benchmarks.disjoint_questions` writes (MuSiQue's in FlashRAG's layout, HotpotQA's a
    record a line), which the peer's loader cannot read. Each question carries the whole corpus hopgraph
    indexes for them, so the peer's index, the union of its questions' paragraphs, is that corpus."""
    benchmark = load_benchmark(dataset, data, limit=limit)
    paragraphs = [f"{document.title}. {document.text}" for document in benchmark.corpus]
    return [(example.question, list(example.answers), paragraphs) for example in benchmark.examples]


def passages_for(passages: Mapping[str, list[str]], question: str, k: int) -> list[str]:
    """QUESTION's passages, each once, when there are exactly k (the peer reads its top k of them all: with
    fewer, it would fill up with other questions' passages)."""
    if question not in passages:
        raise SystemExit(f"no passages for {question!r}: evaluate the method on these questions first")
    found = list(dict.fromkeys(passages[question]))
    if len(found) != k:
        raise SystemExit(f"{len(found)} distinct passages for {question!r}, not --k {k}: pass the k it read")
    return found


class RoutedEncoder:
    """Stands in for the peer's SentenceTransformer so that each question's cosine top k, computed by the
    peer's own code (`P @ q`, then the k highest), is exactly its given passages in their order: a passage's
    vector holds, for each question listing it, a score falling with its place in that list (0 where it is
    not listed), and a question's vector is its one-hot."""

    def __init__(self, passages: Mapping[str, list[str]]) -> None:
        self.passages = passages
        self._column = {question: i for i, question in enumerate(passages)}

    def encode(self, texts: list[str], **_: Any) -> np.ndarray:
        vectors = np.zeros((len(texts), len(self._column)))
        if all(text in self._column for text in texts):
            for row, text in enumerate(texts):
                vectors[row, self._column[text]] = 1.0
            return vectors
        row_of = {text: row for row, text in enumerate(texts)}
        for question, column in self._column.items():
            listed = self.passages[question]
            for place, passage in enumerate(listed):
                vectors[row_of[passage], column] = len(listed) - place
        return vectors


def read_passages(run_dir: Path, dataset: str, method: str) -> dict[str, list[str]]:
    """question -> the passages METHOD read in RUN_DIR, in the order it read them, written as the peer writes
    its paragraphs ("Title. text")."""
    records = _answered(run_dir, dataset).get(method)
    if not records:
        raise SystemExit(f"{run_dir} has no answers of {method!r} on {dataset}")
    read: dict[str, list[str]] = {}
    for question, record in records.items():
        text_of = {item["id"]: f"{item['title']}. {item['text']}" for item in record["evidence"]}
        read[question] = [text_of[id_] for id_ in record["read"] if id_ in text_of]
    return read


def _scores(prediction: str | None, golds: list[str]) -> tuple[float | None, float | None]:
    if prediction is None:
        return None, None
    return exact_match(prediction, golds), token_f1(prediction, golds)


def _pct(mean: float, low: float, high: float) -> str:
    return f"{100 * mean:.1f} [{100 * low:.1f}, {100 * high:.1f}]"


def _answered(run_dir: Path, dataset: str) -> dict[str, dict[str, dict[str, Any]]]:
    """method -> question text -> its latest answered record, from one evaluation folder."""
    results = answered_results(run_dir) if results_path(run_dir).exists() else {}
    by_method: dict[str, dict[str, dict[str, Any]]] = {}
    for (ds, method, _), record in results.items():
        if ds == dataset:
            by_method.setdefault(method, {})[record["question"]] = record
    return by_method


@dataclass(frozen=True)
class Answerer:
    """One method of one evaluation folder, on the peer's questions in the peer's order: its predictions
    (None where it has no answer), their EM / F1 and the echoes its prompts drew."""

    method: str
    run: str
    predictions: list[str | None]
    em: list[float | None]
    f1: list[float | None]
    echoes: int
    over: str | None = None  # for the peer's reader: the method whose passages it read

    @property
    def label(self) -> str:
        return f"{self.method} ({self.run})"


def scored(
    method: str,
    run: str,
    predictions: list[str | None],
    peer_rows: list[dict[str, Any]],
    echoes: int = 0,
    over: str | None = None,
) -> Answerer:
    """PREDICTIONS (one per peer row, None where there is no answer) scored against the rows' gold."""
    golds = [row["gold_answers"] for row in peer_rows]
    scores = [_scores(pred, gold) for pred, gold in zip(predictions, golds, strict=True)]
    return Answerer(method, run, predictions, [e for e, _ in scores], [f for _, f in scores], echoes, over)


def answerers(run_dirs: list[Path], dataset: str, peer_rows: list[dict[str, Any]]) -> list[Answerer]:
    """Every method of every folder, scored on the peer's questions, folders in the order given."""
    found = []
    for run_dir in run_dirs:
        for method, records in _answered(run_dir, dataset).items():
            rows = [records.get(row["question"]) for row in peer_rows]
            predictions = [record["prediction"] if record else None for record in rows]
            echoes = sum(int((record.get("llm") or {}).get("echoes", 0)) for record in rows if record)
            found.append(scored(method, run_dir.name, predictions, peer_rows, echoes))
    return found


def peer_reading(
    method: str, run: str, over: list[dict[str, Any]], peer_rows: list[dict[str, Any]]
) -> Answerer:
    """The peer's reader over METHOD's passages (`run_peer` with them), as one more answerer."""
    answer_of = {row["question"]: row["rag"] for row in over}
    predictions = [answer_of.get(row["question"]) for row in peer_rows]
    return scored(f"peer reader on {method}'s passages", run, predictions, peer_rows, over=method)


def peer_scores(peer_rows: list[dict[str, Any]]) -> tuple[list[float | None], list[float | None]]:
    """The peer's EM and F1 on each of its rows, the side every comparison is paired against."""
    peer = scored("peer", "rag", [row["rag"] for row in peer_rows], peer_rows)
    return peer.em, peer.f1


def compare(found: list[Answerer], dataset: str, peer_rows: list[dict[str, Any]]) -> str:
    """Markdown: EM / F1 of each answerer (`answerers`, `peer_reading`) and of the peer on the same
    questions, paired differences against the peer, the echoes each method's prompts drew (counted since
    the echo guard exists) and its most frequent predictions (a copied phrase shows there); then, for a
    method in more than one run (before / after a change), the paired difference of the last run against
    the first and how many of its predictions stayed the same, and for the peer's reader over a method's
    passages, the method against it on the same passages (its reading against the peer's)."""
    lines = [
        f"Questions: {len(peer_rows)} ({dataset}); peer = plain dense RAG answer peer, same embedded model.",
        "",
        "| answerer | n | EM | F1 | EM - peer | p | F1 - peer | words | > gold + 3 | lost, gold inside |"
        " echoes | most frequent predictions |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    golds = [row["gold_answers"] for row in peer_rows]
    peer_answers = [row["rag"] for row in peer_rows]
    peer_em, peer_f1 = peer_scores(peer_rows)
    lines.append(
        f"| peer (rag) | {len(peer_rows)} | {_pct(*bootstrap_ci(peer_em))} | {_pct(*bootstrap_ci(peer_f1))}"
        f" | | | | {_form(peer_answers, golds, peer_em, peer_em)} | – |"
        f" {_top(Counter(peer_answers).most_common(3))} |"
    )
    runs_of: dict[str, list[Answerer]] = {}
    for one in found:
        runs_of.setdefault(one.method, []).append(one)
        n = sum(e is not None for e in one.em)
        answered = [pred for pred in one.predictions if pred is not None]
        lines.append(
            f"| {one.label} | {n} | {_pct(*bootstrap_ci(one.em))} | {_pct(*bootstrap_ci(one.f1))}"
            f" | {_pct(*paired_difference(one.em, peer_em))} | {mcnemar_exact(one.em, peer_em):.3f}"
            f" | {_pct(*paired_difference(one.f1, peer_f1))}"
            f" | {_form(one.predictions, golds, one.em, peer_em)}"
            f" | {one.echoes} | {_top(Counter(answered).most_common(3))} |"
        )
    for method, runs in runs_of.items():
        if len(runs) > 1:
            first, last = runs[0], runs[-1]
            both = [
                (before, after)
                for before, after in zip(first.predictions, last.predictions, strict=True)
                if before is not None and after is not None
            ]
            lines.append(
                f"\n{method}, {last.run} - {first.run} on the questions both answered:"
                f" EM {_pct(*paired_difference(last.em, first.em))},"
                f" F1 {_pct(*paired_difference(last.f1, first.f1))},"
                f" the same prediction on {sum(before == after for before, after in both)} of {len(both)}"
            )
    for one in found:
        for other in runs_of.get(one.over or "", []):
            if other.run == one.run:
                lines.append(
                    f"\n{other.label} - {one.label}, the same passages read by two readers:"
                    f" EM {_pct(*paired_difference(other.em, one.em))}"
                    f" (p {mcnemar_exact(other.em, one.em):.3f}),"
                    f" F1 {_pct(*paired_difference(other.f1, one.f1))}"
                )
    return "\n".join(lines)


def differences_figure(found: list[Answerer], dataset: str, peer_rows: list[dict[str, Any]]) -> Figure:
    """The table's paired differences drawn: an EM and an F1 panel, a row per answerer with its 95%
    interval, the exact McNemar p in its label."""
    peer_em, peer_f1 = peer_scores(peer_rows)
    colors = method_colors(one.method for one in found)
    em_rows, f1_rows = [], []
    for one in found:
        color, p = colors[one.method], mcnemar_exact(one.em, peer_em)
        em_rows.append(Interval(f"{one.label}, p {p:.3f}", *paired_difference(one.em, peer_em), color))
        f1_rows.append(Interval(one.label, *paired_difference(one.f1, peer_f1), color))
    n = len(peer_rows)
    return intervals_figure(
        {f"EM − peer, {dataset} ({n} questions, points)": em_rows, f"F1 − peer, {dataset} (points)": f1_rows},
        empty="no evaluation run to compare",
    )


def _form(
    predictions: list[str | None], golds: list[list[str]], em: list[float | None], peer_em: list[float | None]
) -> str:
    """Three cells on the answers' form: mean words, the share longer than the closest gold by more than
    three words, and "k of n": of the n questions the peer got right and these answers wrong, the k whose
    answer holds a gold answer inside it."""
    pairs = [(pred, gold) for pred, gold in zip(predictions, golds, strict=True) if pred is not None]
    words = [answer_words(pred) for pred, _ in pairs]
    longer = [past_gold(pred, gold) for pred, gold in pairs]
    lost = [
        (pred, gold)
        for pred, gold, mine, theirs in zip(predictions, golds, em, peer_em, strict=True)
        if pred is not None and theirs == 1.0 and mine == 0.0
    ]
    inside = sum(
        any(f" {normalize_answer(g)} " in f" {normalize_answer(pred)} " for g in gold) for pred, gold in lost
    )
    mean_words = sum(words) / len(words) if words else 0.0
    share = 100 * sum(longer) / len(longer) if longer else 0.0
    return f"{mean_words:.1f} | {share:.0f}% | {inside} of {len(lost)}"


def _top(counts: list[tuple[str, int]]) -> str:
    return ", ".join(f"{text!r} x{n}" for text, n in counts if n > 1) or "none repeated"


def read_peer_rows(path: Path) -> list[dict[str, Any]]:
    """The peer's rows kept at PATH, each with its answer as `rag`: this command's file, or the one the
    peer's own --out wrote (which keeps each mode's answer with its scores)."""
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    return [{**row, "rag": row["rag"]["prediction"]} if isinstance(row["rag"], dict) else row for row in rows]


def _stored(
    path: Path, fresh: bool, run: Callable[[], tuple[list[dict[str, Any]], dict[str, Any]]], what: str
) -> list[dict[str, Any]]:
    """The peer's rows kept at PATH; when missing (or `fresh`), `run` makes them, its summary is printed
    after WHAT, and they are kept there (through a temporary file: an interrupted run leaves none)."""
    if path.exists() and not fresh:
        return read_peer_rows(path)
    rows, summary = run()
    print(f"{what}: {json.dumps(summary)}")
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "".join(json.dumps(row) + "\n" for row in rows)
    write_atomic(path, lambda handle: handle.write(text.encode("utf-8")))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset", choices=sorted(DATA_FILES))
    parser.add_argument(
        "--run",
        type=Path,
        required=True,
        help="the evaluation folder on the same data; the peer's answers go here",
    )
    parser.add_argument(
        "--against",
        type=Path,
        nargs="*",
        default=[],
        help="earlier evaluation folders to compare, e.g. before",
    )
    parser.add_argument(
        "--data",
        type=Path,
        help="the questions file the run answered, when not the slice's (e.g. benchmarks.disjoint_questions'"
        " output): the peer asks its questions over the corpus hopgraph indexes for them",
    )
    parser.add_argument("--limit", type=int, default=50)
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--fresh", action="store_true", help="run the peer again even if its answers exist")
    parser.add_argument("--peer-out", type=Path, help="the peer's own --out file to read its answers from")
    parser.add_argument(
        "--peer-reads",
        metavar="METHOD",
        help="also the peer's reader over the passages METHOD of --run read (its retrieval, the peer's "
        "reading: RUN/peer-reads-METHOD.jsonl), set against the peer and against METHOD's own answers",
    )
    args = parser.parse_args()
    rows = _stored(
        args.peer_out or args.run / PEER_FILE,
        args.fresh,
        lambda: run_peer(args.dataset, args.limit, args.k, data=args.data),
        "peer summary",
    )[: args.limit]
    found = answerers([*args.against, args.run], args.dataset, rows)
    if args.peer_reads:
        answers = _stored(
            args.run / f"peer-reads-{args.peer_reads}.jsonl",
            args.fresh,
            lambda: run_peer(
                args.dataset,
                args.limit,
                args.k,
                read_passages(args.run, args.dataset, args.peer_reads),
                args.data,
            ),
            f"peer reader over {args.peer_reads}'s passages",
        )
        found.append(peer_reading(args.peer_reads, args.run.name, answers, rows))
    print(compare(found, args.dataset, rows))
    plot = save_figure(differences_figure(found, args.dataset, rows), args.run / PLOT_FILE)
    print(f"\nplot: {plot}")


if __name__ == "__main__":
    main()
