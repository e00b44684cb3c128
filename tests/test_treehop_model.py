"""TreeHop's query update: shapes and unit norm of every form, the update computed by hand on 2-d vectors,
the sizes the issue states, and the checkpoint's round trip and embedder check."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from graphs.treehop.model import CheckpointError, ModelCard, TreeHopUpdate, load_checkpoint, save_checkpoint


def update(variant: str, dimension: int = 8) -> TreeHopUpdate:
    torch.manual_seed(0)
    return TreeHopUpdate(ModelCard(variant, "test-embedder", dimension)).eval()


def unit(*values: float) -> torch.Tensor:
    vector = torch.tensor(values, dtype=torch.float32)
    return vector / vector.norm()


def parameters(model: torch.nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize("variant", ["simple", "full", "delta"])
@pytest.mark.parametrize("shape", [(8,), (5, 8), (3, 4, 8)])
def test_every_form_maps_rows_to_unit_rows_of_the_same_shape(variant: str, shape: tuple[int, ...]) -> None:
    q = torch.nn.functional.normalize(torch.randn(shape), dim=-1)
    c = torch.nn.functional.normalize(torch.randn(shape), dim=-1)
    moved = update(variant)(q, c)
    assert moved.shape == q.shape
    assert torch.allclose(moved.norm(dim=-1), torch.ones(shape[:-1]), atol=1e-5)


def test_rows_of_other_shapes_or_dimension_are_refused_naming_both_shapes() -> None:
    with pytest.raises(ValueError, match=r"\(5, 8\) and \(4, 8\)"):
        update("full")(torch.zeros(5, 8), torch.zeros(4, 8))
    with pytest.raises(ValueError, match="same shape"):
        update("simple")(torch.zeros(2, 6), torch.zeros(2, 6))


def test_delta_is_the_normalised_difference_of_query_and_chunk() -> None:
    moved = update("delta", 2)(unit(1, 0), unit(0, 1))
    assert torch.allclose(moved, unit(1, -1))


def test_the_simple_gate_attends_over_query_and_chunk_by_hand() -> None:
    model = update("simple", 2)
    with torch.no_grad():
        model.gate.query.weight.copy_(torch.eye(2))
        model.gate.key.weight.copy_(torch.eye(2))
        model.gate.value.weight.copy_(torch.eye(2))
    q, c = unit(1, 0), unit(0, 1)
    # logits q.q / sqrt(2) and q.c / sqrt(2): weights softmax([1/sqrt 2, 0]) over [q, c]
    w_q = 1 / (1 + math.exp(-1 / math.sqrt(2)))
    gate = w_q * q + (1 - w_q) * c
    assert torch.allclose(model(q, c), torch.nn.functional.normalize(q - c + gate, dim=-1), atol=1e-6)


def test_a_full_gate_projected_to_zero_leaves_the_delta_update() -> None:
    model = update("full", 4)
    with torch.no_grad():
        model.gate.project.weight.zero_()
    q, c = unit(1, 2, 0, 0), unit(0, 1, 1, 0)
    assert torch.allclose(model(q, c), update("delta", 4)(q, c), atol=1e-6)


def test_sizes_are_those_of_the_seed_and_of_the_public_code_at_minilm_dimensions() -> None:
    d = 384
    assert parameters(update("simple", d)) == 3 * d * d
    assert 2.9e6 < parameters(update("full", d)) < 3.1e6  # "about 3M at MiniLM's 384"
    assert parameters(update("delta", d)) == 0


def test_a_checkpoint_round_trips_in_float16_and_keeps_its_card(tmp_path: Path) -> None:
    model = update("full")
    path = tmp_path / "treehop.pt"
    save_checkpoint(model, path)
    loaded = load_checkpoint(path, "test-embedder", 8)
    assert loaded.card == model.card and not loaded.training
    q = torch.nn.functional.normalize(torch.randn(6, 8), dim=-1)
    c = torch.nn.functional.normalize(torch.randn(6, 8), dim=-1)
    assert torch.allclose(loaded(q, c), model(q, c), atol=2e-3)


def test_a_checkpoint_for_another_embedder_is_refused_with_how_to_train_one(tmp_path: Path) -> None:
    path = tmp_path / "treehop.pt"
    save_checkpoint(update("simple"), path)
    with pytest.raises(
        CheckpointError, match=r"trained for test-embedder \(8 dimensions\).*hopgraph train treehop"
    ):
        load_checkpoint(path, "all-MiniLM-L6-v2", 384)
    with pytest.raises(CheckpointError, match=r"does not exist.*hopgraph train treehop"):
        load_checkpoint(tmp_path / "absent.pt", "test-embedder", 8)
    (tmp_path / "broken.pt").write_text("not a checkpoint")
    with pytest.raises(CheckpointError, match="cannot be read"):
        load_checkpoint(tmp_path / "broken.pt", "test-embedder", 8)
