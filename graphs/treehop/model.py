"""TreeHop's query update (seed 004 §2.1): the next hop's query embedding from this hop's query and one
retrieved chunk, computed by a small learned module instead of an LLM rewrite.

    q_next = normalise((q - c) + UpdateGate(q, c))

`q - c` suppresses what the chunk already covers; the gate injects what the chunk adds that the next hop
should look for. Three forms, recorded in every checkpoint:

- `simple`, the seed's: one-head attention with learned Q_u, K_u, V_u in R^{d x d}. The query attends over
  the two embeddings it has, itself and the chunk (with the chunk alone as key the softmax would be the
  constant 1 and the gate a plain linear map of c).
- `full`, the public TreeHop code's: Q, K, V project to 2d with bias, an element-wise gate (a softmax over
  dimensions of the scaled product Q(q) * K(c), times V(c)), three residual blocks (linear, ReLU,
  LayerNorm), a bias-free projection back to d.
- `delta`, the ablation with no learned gate: normalise(q - c). It has no weights and needs no checkpoint.

Vectors are L2-normalised rows, as the index stores them, so cosine similarity is a dot product.
"""

from __future__ import annotations

import math
import pickle
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal

import torch
from torch import nn
from torch.nn import functional

from stores.errors import HopgraphError
from stores.files import write_atomic

Variant = Literal["simple", "full", "delta"]
VARIANTS: tuple[Variant, ...] = ("simple", "full", "delta")
RESIDUAL_BLOCKS = 3


class CheckpointError(HopgraphError):
    """A TreeHop checkpoint that is missing, unreadable, or made for another embedding model."""


class SimpleUpdateGate(nn.Module):
    """The seed's gate: one-head attention of the query over [query, chunk], Q_u, K_u, V_u in R^{d x d}."""

    def __init__(self, dimension: int) -> None:
        super().__init__()
        self.query = nn.Linear(dimension, dimension, bias=False)
        self.key = nn.Linear(dimension, dimension, bias=False)
        self.value = nn.Linear(dimension, dimension, bias=False)
        self.scale = 1.0 / math.sqrt(dimension)

    def forward(self, q: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
        tokens = torch.stack([q, c], dim=-2)  # (..., 2, d)
        logits = (self.key(tokens) @ self.query(q).unsqueeze(-1)).squeeze(-1) * self.scale  # (..., 2)
        weights = torch.softmax(logits, dim=-1)
        return (weights.unsqueeze(-1) * self.value(tokens)).sum(dim=-2)


class ResidualBlock(nn.Module):
    """x + LayerNorm(ReLU(Linear(x))), with dropout while training."""

    def __init__(self, width: int, dropout: float) -> None:
        super().__init__()
        self.linear = nn.Linear(width, width)
        self.norm = nn.LayerNorm(width)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.dropout(self.norm(functional.relu(self.linear(x))))


class FullUpdateGate(nn.Module):
    """The public code's gate: element-wise attention in 2d dimensions, residual blocks, projection to d."""

    def __init__(self, dimension: int, dropout: float) -> None:
        super().__init__()
        width = 2 * dimension
        self.query = nn.Linear(dimension, width)
        self.key = nn.Linear(dimension, width)
        self.value = nn.Linear(dimension, width)
        self.scale = 1.0 / math.sqrt(width)
        self.blocks = nn.Sequential(*(ResidualBlock(width, dropout) for _ in range(RESIDUAL_BLOCKS)))
        self.project = nn.Linear(width, dimension, bias=False)

    def forward(self, q: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
        gate = torch.softmax(self.query(q) * self.key(c) * self.scale, dim=-1)
        return self.project(self.blocks(gate * self.value(c)))


@dataclass(frozen=True)
class ModelCard:
    """What a checkpoint must say about itself for a run to trust it: its form, and the embedding space
    (model name and dimension) its weights were trained in."""

    variant: Variant
    embedding_model: str
    dimension: int
    dropout: float = 0.1


class TreeHopUpdate(nn.Module):
    """q_next = normalise((q - c) + gate(q, c)); the `delta` form has no gate."""

    def __init__(self, card: ModelCard) -> None:
        super().__init__()
        if card.variant not in VARIANTS:
            raise CheckpointError(f"TreeHop variant {card.variant!r} is unknown; use one of {VARIANTS}.")
        self.card = card
        self.gate: nn.Module | None = {
            "simple": lambda: SimpleUpdateGate(card.dimension),
            "full": lambda: FullUpdateGate(card.dimension, card.dropout),
            "delta": lambda: None,
        }[card.variant]()

    def forward(self, q: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
        """Next-hop queries for query rows `q` and chunk rows `c` of the same shape (..., d)."""
        if q.shape != c.shape or q.shape[-1] != self.card.dimension:
            raise ValueError(
                f"TreeHop update needs query and chunk rows of the same shape (..., {self.card.dimension}); "
                f"got {tuple(q.shape)} and {tuple(c.shape)}"
            )
        moved = q - c if self.gate is None else (q - c) + self.gate(q, c)
        return functional.normalize(moved, dim=-1)


def save_checkpoint(model: TreeHopUpdate, path: Path) -> None:
    """Write the weights in float16 (half the size; the held-out numbers are measured on the saved
    weights) with the model card beside them in the same file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    weights = {name: tensor.detach().to(torch.float16) for name, tensor in model.state_dict().items()}
    write_atomic(path, lambda handle: torch.save({"card": asdict(model.card), "weights": weights}, handle))


def load_checkpoint(path: Path, embedding_model: str, dimension: int) -> TreeHopUpdate:
    """The model of the checkpoint at `path`, in float32 and eval mode, checked against the embedder it
    will be fed by: another model's vectors live in another space, where the weights mean nothing."""
    try:
        saved = torch.load(path, map_location="cpu", weights_only=True)
        card = ModelCard(**saved["card"])
        weights = saved["weights"]
    except FileNotFoundError:
        raise CheckpointError(
            f"TreeHop checkpoint {path} does not exist: train one with `hopgraph train treehop --out {path}`."
        ) from None
    except (OSError, RuntimeError, KeyError, TypeError, pickle.UnpicklingError) as exc:
        raise CheckpointError(
            f"TreeHop checkpoint {path} cannot be read ({exc}); "
            "train a new one with `hopgraph train treehop`."
        ) from exc
    if (card.embedding_model, card.dimension) != (embedding_model, dimension):
        raise CheckpointError(
            f"TreeHop checkpoint {path} was trained for {card.embedding_model} ({card.dimension} dimensions) "
            f"but the configured embedder is {embedding_model} ({dimension} dimensions). Train one for this "
            f"embedder with `hopgraph train treehop --out PATH` and set treehop_checkpoint = PATH."
        )
    model = TreeHopUpdate(card)
    model.load_state_dict({name: tensor.to(torch.float32) for name, tensor in weights.items()})
    return model.eval()
