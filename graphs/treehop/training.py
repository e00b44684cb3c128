"""Training TreeHop's query update on the CPU in minutes (`hopgraph train treehop` assembles the paths in
hopgraph/treehop_data.py and calls `train`).

The original's recipe (InfoNCE at temperature 0.15, AdamW, weight decay 2e-8, batch 64, dropout 0.1, 5
negatives per positive, 20 epochs) on the paths hopgraph/treehop_data.py assembles, with one change:
learning rate 1e-3 instead of 6e-5. The original takes about 111K examples; the dev slices give about 1,100
paths, and at 6e-5 twenty epochs left the full model's held-out Recall@5 at 0 (its randomly initialised gate
outweighs q - c at the start, and so few steps never correct it); at 1e-3 both forms learn in under a
minute.

A path is unrolled hop by hop through the model itself (q2 = f(q1, c1), q3 = f(q2, c2), ...), as the
search will use it, and every hop's query is scored against its positive next-hop chunk and that hop's
negatives.

After every epoch the held-out tenth is measured: its InfoNCE loss, and Recall@K of each next hop when the
updated query searches the whole pool of its dataset's chunks (the chunks already on the path excluded, as
redundancy pruning excludes them). The same Recall@K of the untrained `delta` rule is the reference that
shows what training adds. The checkpoint is the epoch with the best held-out Recall@K, stored in float16;
its held-out numbers are measured again on the saved file, and everything (command, data, seed, numbers)
is written to a JSON file beside it.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.nn import functional

from graphs.treehop.model import ModelCard, TreeHopUpdate, Variant, load_checkpoint, save_checkpoint
from stores.files import write_atomic

Progress = Callable[[str, int, int], None]


@dataclass(frozen=True)
class HopPath:
    """One training question as a retrieval path: its embedding, its gold chunks in hop order (n >= 2),
    NEGATIVES negatives for each hop after the first, and its place in the dataset's pool of chunks."""

    dataset: str
    question: str
    query: np.ndarray  # (d,)
    chunks: np.ndarray  # (n, d)
    negatives: np.ndarray  # (n - 1, NEGATIVES, d)
    pool_rows: tuple[int, ...]  # each gold chunk's row in the dataset's pool
    held_out: bool
    articles: tuple[str, ...] = ()  # the gold documents on the path, in hop order


@dataclass
class TrainingData:
    """All paths, the pool of chunk vectors of each dataset (Recall@K ranks in it), and what each gave."""

    paths: list[HopPath]
    pools: dict[str, np.ndarray]
    counts: dict[str, dict[str, int]]

    def split(self, held_out: bool) -> list[HopPath]:
        return [path for path in self.paths if path.held_out == held_out]


@dataclass(frozen=True)
class Recipe:
    """Hyperparameters: the original's, except the learning rate (see the module docstring) and the form,
    `simple`, which held out better here than `full` (README, TreeHop)."""

    variant: Variant = "simple"
    epochs: int = 20
    batch_size: int = 64
    learning_rate: float = 1e-3
    weight_decay: float = 2e-8
    temperature: float = 0.15
    dropout: float = 0.1
    recall_k: int = 5
    seed: int = 0


@dataclass
class EpochResult:
    """One epoch's mean training loss and the held-out loss and Recall@K after it."""

    epoch: int
    train_loss: float
    held_out_loss: float
    held_out_recall: float


@dataclass
class TrainingRecord:
    """What the JSON beside a checkpoint records: how to make it again and what it measured."""

    command: str
    data: str
    datasets: list[str]
    evaluated_questions_excluded: dict[str, int]
    counts: dict[str, dict[str, int]]
    train_paths: int
    held_out_paths: int
    evaluated_articles_excluded: bool = True
    delta_held_out_recall: float = 0.0
    recipe: dict[str, Any] = field(default_factory=dict)
    epochs: list[EpochResult] = field(default_factory=list)
    best_epoch: int = 0
    float16_held_out_loss: float = 0.0
    float16_held_out_recall: float = 0.0
    parameters: int = 0
    checkpoint_bytes: int = 0
    seconds: float = 0.0


@dataclass(frozen=True)
class Batch:
    """Paths padded to the longest: queries (B, d), chunks (B, L, d), negatives (B, L-1, N, d) and the
    real length of each path (B)."""

    queries: torch.Tensor
    chunks: torch.Tensor
    negatives: torch.Tensor
    lengths: torch.Tensor


def batch_of(paths: Sequence[Any]) -> Batch:
    longest = max(len(path.chunks) for path in paths)
    dimension = paths[0].query.shape[0]
    negatives_per_hop = paths[0].negatives.shape[1]
    chunks = np.zeros((len(paths), longest, dimension), dtype=np.float32)
    negatives = np.zeros((len(paths), longest - 1, negatives_per_hop, dimension), dtype=np.float32)
    for i, path in enumerate(paths):
        chunks[i, : len(path.chunks)] = path.chunks
        negatives[i, : len(path.negatives)] = path.negatives
    return Batch(
        queries=torch.from_numpy(np.stack([path.query for path in paths])),
        chunks=torch.from_numpy(chunks),
        negatives=torch.from_numpy(negatives),
        lengths=torch.tensor([len(path.chunks) for path in paths]),
    )


def unrolled_queries(model: TreeHopUpdate, batch: Batch) -> list[torch.Tensor]:
    """The query of every hop after the first, computed through the model: element r is (B, d), the query
    that should find chunk r + 1 (rows whose path is shorter hold padding)."""
    queries, query = [], batch.queries
    for hop in range(batch.chunks.shape[1] - 1):
        query = model(query, batch.chunks[:, hop])
        queries.append(query)
    return queries


def info_nce(model: TreeHopUpdate, batch: Batch, temperature: float) -> torch.Tensor:
    """Mean InfoNCE over every real hop of the batch: the positive next-hop chunk against its negatives."""
    losses, real = [], []
    for hop, query in enumerate(unrolled_queries(model, batch)):
        positive = (query * batch.chunks[:, hop + 1]).sum(-1, keepdim=True)
        negative = torch.einsum("bd,bnd->bn", query, batch.negatives[:, hop])
        logits = torch.cat([positive, negative], dim=1) / temperature
        target = torch.zeros(len(logits), dtype=torch.long)
        losses.append(functional.cross_entropy(logits, target, reduction="none"))
        real.append(batch.lengths > hop + 1)
    loss, mask = torch.stack(losses), torch.stack(real).float()
    return (loss * mask).sum() / mask.sum()


def held_out_recall(model: TreeHopUpdate, data: TrainingData, k: int) -> float:
    """Share of held-out next hops whose chunk is among the top k of its dataset's pool for the updated
    query, the path's earlier chunks excluded."""
    found = total = 0
    with torch.inference_mode():
        for path in data.split(held_out=True):
            pool = torch.from_numpy(data.pools[path.dataset])
            queries = unrolled_queries(model, batch_of([path]))
            for hop, query in enumerate(queries):
                scores = pool @ query[0]
                scores[list(path.pool_rows[: hop + 1])] = -torch.inf
                found += int(path.pool_rows[hop + 1] in torch.topk(scores, k).indices.tolist())
                total += 1
    return found / total


def held_out_loss(model: TreeHopUpdate, data: TrainingData, temperature: float) -> float:
    with torch.inference_mode():
        return float(info_nce(model, batch_of(data.split(held_out=True)), temperature))


def train(
    data: TrainingData,
    recipe: Recipe,
    out: Path,
    record: TrainingRecord,
    embedding_model: str,
    progress: Progress | None = None,
    report: Callable[[str], None] = print,
) -> TrainingRecord:
    """Train, measure every epoch, keep the best epoch by held-out Recall@K, save it in float16 with its
    record beside it (out with .json); returns the record."""
    started = time.monotonic()
    record.recipe = asdict(recipe)
    torch.manual_seed(recipe.seed)
    shuffle = random.Random(recipe.seed)
    dimension = data.paths[0].query.shape[0]
    model = TreeHopUpdate(ModelCard(recipe.variant, embedding_model, dimension, recipe.dropout))
    delta = TreeHopUpdate(ModelCard("delta", embedding_model, dimension))
    record.delta_held_out_recall = held_out_recall(delta, data, recipe.recall_k)
    report(
        f"held-out Recall@{recipe.recall_k} of the delta rule (no training): "
        f"{record.delta_held_out_recall:.3f}"
    )
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=recipe.learning_rate, weight_decay=recipe.weight_decay
    )
    paths = data.split(held_out=False)
    batches = -(-len(paths) // recipe.batch_size)
    best_recall, best_state = -1.0, model.state_dict()
    for epoch in range(1, recipe.epochs + 1):
        model.train()
        shuffle.shuffle(paths)
        losses = []
        for step in range(batches):
            loss = info_nce(model, batch_of(paths[step * recipe.batch_size : (step + 1) * recipe.batch_size]),
                            recipe.temperature)  # fmt: skip
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
            if progress is not None:
                progress(f"epoch {epoch}", step + 1, batches)
        model.eval()
        result = EpochResult(
            epoch=epoch,
            train_loss=round(float(np.mean(losses)), 4),
            held_out_loss=round(held_out_loss(model, data, recipe.temperature), 4),
            held_out_recall=round(held_out_recall(model, data, recipe.recall_k), 4),
        )
        record.epochs.append(result)
        report(
            f"epoch {epoch}: train loss {result.train_loss:.4f}, held-out loss {result.held_out_loss:.4f}, "
            f"held-out Recall@{recipe.recall_k} {result.held_out_recall:.3f}"
        )
        if result.held_out_recall > best_recall:
            best_recall, record.best_epoch = result.held_out_recall, epoch
            best_state = {name: tensor.clone() for name, tensor in model.state_dict().items()}
    model.load_state_dict(best_state)
    save_checkpoint(model, out)
    saved = load_checkpoint(out, embedding_model, dimension)
    record.float16_held_out_loss = round(held_out_loss(saved, data, recipe.temperature), 4)
    record.float16_held_out_recall = round(held_out_recall(saved, data, recipe.recall_k), 4)
    record.parameters = sum(p.numel() for p in model.parameters())
    record.checkpoint_bytes = out.stat().st_size
    record.seconds = round(time.monotonic() - started, 1)
    card = (json.dumps(asdict(record), indent=2) + "\n").encode("utf-8")
    write_atomic(out.with_suffix(".json"), lambda handle: handle.write(card))
    return record
