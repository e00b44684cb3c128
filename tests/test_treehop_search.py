"""TreeHop's tree search on a hand-built case whose tree is known: a scripted index answers each hop's
vector query with fixed hits, the update is the delta rule (so every query vector can be checked by hand),
and a scripted chat model stands in for the generator (it tests the wiring, never what an LLM answers)."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from graphs import treehop
from graphs.treehop.context import TreeHopContext
from graphs.treehop.model import ModelCard, TreeHopUpdate
from graphs.treehop.steps import answer_passages, prune_layer, top_k_positions
from hopgraph import cli
from stores.chunking import Chunk
from stores.documents import Span
from stores.evidence import Evidence, evidence_from
from stores.index import Hit
from tests.scripted import scripted_gateway

DIMENSION = 4
QUESTION_VECTOR = np.array([1.0, 0.0, 0.0, 0.0], dtype=np.float32)


def unit(*values: float) -> np.ndarray:
    vector = np.asarray(values, dtype=np.float32)
    return vector / np.linalg.norm(vector)


VECTORS = {
    "A": unit(1, 1, 0, 0),
    "B": unit(1, 0, 1, 0),
    "C": unit(0, 1, 1, 0),
    "D": unit(0, 0, 1, 1),
    "E": unit(1, 0, 0, 1),
    "F": unit(0, 1, 0, 1),
    "G": unit(1, 1, 1, 1),
}


def hit(chunk_id: str, score: float) -> Hit:
    text = f"Passage {chunk_id}."
    chunk = Chunk(id=chunk_id, doc_id=f"doc-{chunk_id}", title=f"Title {chunk_id}", text=text, position=0,
                  char_start=0, char_end=len(text))  # fmt: skip
    return Hit(chunk, score, VECTORS[chunk_id])


# Each hop's hits per query row, in the frontier's order (the tree the test expects is drawn below).
SCRIPT = [
    [[hit("A", 0.9), hit("B", 0.8)]],
    [[hit("B", 0.95), hit("E", 0.5)], [hit("C", 0.7), hit("D", 0.65)]],
    [[hit("F", 0.8), hit("G", 0.4)], [hit("F", 0.75), hit("A", 0.9)]],
]
EXPECTED_TREE = [
    ("1", "", 1, "A", "expanded"),
    ("2", "", 1, "B", "expanded"),
    ("1.1", "1", 2, "B", "redundant"),  # kept at hop 1
    ("1.2", "1", 2, "E", "layer_top_k"),  # the third best new chunk of hop 2, K = 2
    ("2.1", "2", 2, "C", "expanded"),
    ("2.2", "2", 2, "D", "expanded"),
    ("2.1.1", "2.1", 3, "F", "last_hop"),
    ("2.1.2", "2.1", 3, "G", "last_hop"),
    ("2.2.1", "2.2", 3, "F", "redundant"),  # found by the better-scoring branch 2.1 in the same hop
    ("2.2.2", "2.2", 3, "A", "redundant"),
]


@dataclass
class ScriptedIndex:
    """Answers the n-th vector query with SCRIPT[n] and records the query rows it was sent and whether it
    was asked for the hits' embeddings."""

    script: list[list[list[Hit]]]
    queries: list[np.ndarray] = field(default_factory=list)
    with_vectors: list[bool] = field(default_factory=list)

    def evidence(self, span: Span, score: float, hop: int) -> Evidence:
        """As an index without metadata makes evidence: the span alone."""
        return evidence_from(span, score, hop)

    def search_by_vectors(
        self, vectors: np.ndarray, k: int, *, with_vectors: bool = False
    ) -> list[list[Hit]]:
        self.queries.append(vectors)
        self.with_vectors.append(with_vectors)
        answer = self.script[len(self.queries) - 1]
        assert len(answer) == len(vectors)
        return [hits[:k] for hits in answer]


class FixedEmbedder:
    name = "fixed"
    dimension = DIMENSION

    def embed(self, texts: list[str]) -> np.ndarray:
        return np.stack([QUESTION_VECTOR for _ in texts])


def run(script: list[list[list[Hit]]], models: Any = None, **context: Any) -> tuple[dict, ScriptedIndex, Any]:
    index = ScriptedIndex(script)
    llm, model = scripted_gateway(lambda _prompt: "Answer")
    services = SimpleNamespace(
        llm=llm,
        indexes=SimpleNamespace(open=lambda _name: index),
        embedder=FixedEmbedder(),
        treehop_model=models,
    )
    graph = treehop.build(services).compile()
    settings = {"top_k": 2, "hops": 3, "update": "delta", **context}
    out = graph.invoke({"question": "Q?"}, context=TreeHopContext(**settings))
    return out, index, model


def delta(q: np.ndarray, c: np.ndarray) -> np.ndarray:
    return (q - c) / np.linalg.norm(q - c)


def test_the_tree_keeps_k_new_chunks_per_hop_and_records_which_rule_ended_each_path() -> None:
    out, index, model = run(SCRIPT, answer_k=3)

    tree = [(n["id"], n["parent"], n["hop"], n["chunk_id"], n["status"]) for n in out["tree"]]
    assert tree == EXPECTED_TREE
    assert [n["score"] for n in out["tree"][:2]] == [0.9, 0.8]
    assert [(item["id"], item["hop"]) for item in out["evidence"]] == [
        ("A", 1), ("B", 1), ("C", 2), ("D", 2), ("F", 3), ("G", 3)
    ]  # fmt: skip
    assert out["stats"]["retrieval_rounds"] == 3

    # hop 1 searches the question; each later query is the delta update of its parent query and chunk
    hop2 = [delta(QUESTION_VECTOR, VECTORS["A"]), delta(QUESTION_VECTOR, VECTORS["B"])]
    hop3 = [delta(hop2[1], VECTORS["C"]), delta(hop2[1], VECTORS["D"])]
    for sent, expected in zip(index.queries, [[QUESTION_VECTOR], hop2, hop3], strict=True):
        assert np.allclose(sent, np.stack(expected), atol=1e-6)
    assert index.with_vectors == [True, True, False]  # the last hop's chunks update no query

    # the answer reads the first answer_k kept chunks, hop 1 first and best first within a hop
    prompt = model.prompts[0]
    assert prompt.index("Passage A.") < prompt.index("Passage B.") < prompt.index("Passage C.")
    assert "Passage D." not in prompt


def test_the_search_stops_early_when_pruning_leaves_no_branch() -> None:
    all_seen = [SCRIPT[0], [[hit("B", 0.9), hit("A", 0.8)], [hit("A", 0.7), hit("B", 0.6)]]]
    out, index, _ = run(all_seen, hops=5)
    assert len(index.queries) == 2 and out["stats"]["retrieval_rounds"] == 2
    assert [n["status"] for n in out["tree"][2:]] == ["redundant"] * 4
    assert [item["id"] for item in out["evidence"]] == ["A", "B"]


def test_one_hop_is_dense_retrieval_of_the_question_and_needs_no_update() -> None:
    out, index, _ = run(SCRIPT, hops=1, update="learned")  # no model provider: none is asked for
    assert [(n["chunk_id"], n["status"]) for n in out["tree"]] == [("A", "last_hop"), ("B", "last_hop")]
    assert len(index.queries) == 1


def test_the_learned_update_comes_from_the_configured_checkpoint_not_the_run() -> None:
    """Which checkpoint is loaded is a setting: a run's context (a Studio caller's) names no file."""
    asked: list[str] = []

    def models() -> TreeHopUpdate:
        asked.append("configured")
        return TreeHopUpdate(ModelCard("delta", "fixed", DIMENSION))

    out, _, _ = run(SCRIPT, models, update="learned")
    assert asked == ["configured", "configured"] and len(out["tree"]) == len(EXPECTED_TREE)
    assert "checkpoint" not in {f.name for f in fields(TreeHopContext)}


def test_layer_pruning_is_a_true_top_k_not_an_argsort_read_as_ranks() -> None:
    scores = [0.1, 0.9, 0.5, 0.7]
    assert top_k_positions(scores, 2) == [1, 3]
    ranks_misread = np.argsort(-np.asarray(scores))  # [1, 3, 2, 0]: positions, not ranks
    assert {i for i, rank in enumerate(ranks_misread) if rank < 2} == {0, 3}  # what the misreading keeps
    candidates = [("1", hit(chunk_id, s)) for chunk_id, s in zip("EAFC", scores, strict=True)]
    statuses = [n["status"] for n, _ in prune_layer(candidates, set(), 2, 2, last_hop=False)]
    assert statuses == ["layer_top_k", "expanded", "layer_top_k", "expanded"]


def test_answer_passages_follow_the_order_the_context_asks_for() -> None:
    out, _, _ = run(SCRIPT)
    by_score = [item["id"] for item in answer_passages(out["evidence"], 4, "score")]
    assert by_score == ["A", "B", "F", "C"]  # B and F tie at 0.8: the earlier hop first


@pytest.mark.parametrize("bad", [{"hops": 0}, {"top_k": 0}])
def test_hops_and_k_below_one_are_refused_naming_the_context_field(bad: dict[str, int]) -> None:
    with pytest.raises(ValueError, match=f"{next(iter(bad))} must be at least 1"):
        run(SCRIPT, **bad)


def test_the_ask_trace_shows_the_tree_one_node_a_line_and_only_counts_the_frontier() -> None:
    out, _, _ = run(SCRIPT)
    with cli.console.capture() as captured:
        cli._show_update(
            "hop", {"tree": out["tree"][2:6], "frontier": [{"node": "2.1", "vector": [0.5] * 4}]}, 0.01
        )
    lines = captured.get().splitlines()
    assert [line.split()[:5] for line in lines[1:5]] == [
        ["1.1", "hop", "2", "0.950", "redundant"],
        ["1.2", "hop", "2", "0.500", "layer_top_k"],
        ["2.1", "hop", "2", "0.700", "expanded"],
        ["2.2", "hop", "2", "0.650", "expanded"],
    ]
    assert "frontier: 1 query embedding(s)" in lines[5] and "0.5" not in lines[5]
