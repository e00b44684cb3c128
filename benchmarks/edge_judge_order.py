"""BiQOG's edge judge: prompt tokens the embedded model evaluates when the judge calls go chunk by chunk (the
index build's order) against question by question (the order the pairs are made in), in one command.

    .venv/bin/python -m benchmarks.edge_judge_order [--chunks 4] [--questions 5] [--candidates 2]

The judge's prompt is the instructions, then the chunk, then the question (prompts.edge_judge), and
llama.cpp evaluates only what follows the prefix its context still holds from the previous call. Judged
chunk by chunk (stores.question_graph.in_judging_order, the build's sort), every call after a chunk's first
shares the instructions and the chunk with the last one; judged question by question (a question against
its own chunk, then its nearest others, then the next question), consecutive calls mostly share only the
instructions. Both orders judge the same pairs with the same prompts: the verdicts must agree (greedy
decoding), which the table checks.

The pairs are made as the build makes them: the first chunk of each of the first `--chunks` documents of
the bundled sample corpus (so the chunks are about different things), `--questions` questions each from
the question writer, and each question's candidates its own chunk and its `--candidates` nearest other
chunks of the whole index. The response cache is off; the question writer's calls run in their own
llama.cpp context (their own prompt family), so the judge's context starts empty.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from dataclasses import dataclass

from hopgraph import Settings, index_corpus
from hopgraph.cli import SAMPLE_CORPUS
from hopgraph.providers import Services
from nodes.edge_judge import LLMEdgeJudge
from nodes.questions import LLMQuestionWriter
from stores.chunking import Chunk
from stores.question_graph import Pair, in_judging_order
from stores.questions import StoredQuestion


@dataclass(frozen=True)
class OrderRun:
    calls: int
    sent: int
    evaluated: int
    seconds: float
    verdicts: dict[tuple[str, str], str]


def judge_in_order(judge: LLMEdgeJudge, pairs: Sequence[Pair]) -> OrderRun:
    """Judge `pairs` one after another, as given, with the cost the judge's calls report."""
    before = dict(judge.spent)
    started = time.perf_counter()
    verdicts = {
        (pair.question.question, pair.chunk.id): judge.judge(
            pair.chunk.title, pair.chunk.text, pair.question.question
        )
        for pair in pairs
    }
    seconds = time.perf_counter() - started
    spent = {
        key: judge.spent[key] - before.get(key, 0) for key in ("calls", "prompt_tokens", "cached_tokens")
    }
    sent = int(spent["prompt_tokens"])
    return OrderRun(int(spent["calls"]), sent, sent - int(spent["cached_tokens"]), seconds, verdicts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chunks", type=int, default=4, help="source chunks, one per document (default 4)")
    parser.add_argument("--questions", type=int, default=5, help="questions written per chunk (default 5)")
    parser.add_argument("--candidates", type=int, default=2, help="nearest other chunks per question")
    args = parser.parse_args()

    settings = Settings(llm_cache=False)
    built = index_corpus(SAMPLE_CORPUS, "sample", settings)
    services = Services(settings)
    index = services.indexes.open("sample")
    chunks = index.all_chunks()
    sources: list[Chunk] = []
    for chunk in chunks:
        if len(sources) < args.chunks and all(chunk.doc_id != kept.doc_id for kept in sources):
            sources.append(chunk)
    print(f"index 'sample': {built.manifest.chunks} chunks; {len(sources)} source chunks")

    writer = LLMQuestionWriter(services.llm, 1)
    made: list[Pair] = []
    for source_number, source in enumerate(sources):
        questions, _ = writer.write(source.title, source.text, args.questions)
        vectors = services.embedder.embed(questions)
        for number, (question, hits) in enumerate(
            zip(questions, index.search_by_vectors(vectors, args.candidates + 1), strict=True)
        ):
            others = [hit.chunk for hit in hits if hit.chunk.id != source.id][: args.candidates]
            stored = StoredQuestion(f"{source_number:04d}.{number:04d}", question, source.id)
            made.extend(Pair(stored, chunk) for chunk in (source, *others))
    print(f"{len(made)} pairs: {sum(1 for p in made if p.chunk.id == p.question.chunk_id)} questions, "
          f"each with its own chunk and up to {args.candidates} nearest others")  # fmt: skip

    question_major = list(made)  # as made: each question's candidates together
    chunk_major = in_judging_order(made, chunks)  # the build's own order
    judge = LLMEdgeJudge(services.llm, 1)
    runs = {
        "question by question (as made)": judge_in_order(judge, question_major),
        "chunk by chunk (the build's order)": judge_in_order(judge, chunk_major),
    }

    print("\n| judging order | calls | prompt tokens sent | evaluated | evaluated / sent | s / call |")
    print("|---|---|---|---|---|---|")
    for label, run in runs.items():
        share = run.evaluated / run.sent
        print(f"| {label} | {run.calls} | {run.sent:,} | {run.evaluated:,} | {share:.2f} | "
              f"{run.seconds / run.calls:.2f} |")  # fmt: skip
    naive, ordered = runs.values()
    same = sum(naive.verdicts[key] == verdict for key, verdict in ordered.verdicts.items())
    print(f"\nchunk by chunk / question by question: evaluated tokens "
          f"x{ordered.evaluated / naive.evaluated:.2f}, seconds x{ordered.seconds / naive.seconds:.2f} "
          f"(same run); verdicts identical {same} of {len(ordered.verdicts)}")  # fmt: skip


if __name__ == "__main__":
    main()
