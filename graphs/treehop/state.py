"""TreeHop's state: the keys its steps read and write, and what a run returns."""

from __future__ import annotations

import operator
from typing import Annotated

# pydantic, and so Studio's input and output forms, cannot read typing.TypedDict on Python 3.11
from typing_extensions import TypedDict

from nodes.state import (
    AnswerOutput,
    QAState,
)
from stores.evidence import Evidence


class TreeNode(TypedDict):
    """One chunk the TreeHop search retrieved, as a node of its retrieval tree.

    `id` is the node's path from the root, the 1-based rank of each chunk among its parent query's hits
    ("2" is hop 1's second hit, "2.4" the fourth hit of the query "2" led to); `parent` is the parent's id
    ("" for hop 1, whose parent is the question). `score` is the chunk's cosine similarity to its parent's
    query embedding, the score layer-wise pruning ranks by. `status` says what became of the node:
    "expanded" (kept, and its updated query searched the next hop), "last_hop" (kept; the search ended),
    "redundant" (the chunk was already in the tree, so neither kept again nor expanded) or "layer_top_k"
    (not among the K best new chunks of its hop).
    """

    id: str
    parent: str
    hop: int
    chunk_id: str
    title: str
    score: float
    status: str


class Branch(TypedDict):
    """A query embedding waiting to search the next hop: the tree node it came from ("" = the question)."""

    node: str
    vector: list[float]


class TreeHopState(QAState, total=False):
    """TreeHop's search: the retrieval tree, every node with its score and what ended it (`tree`, in the
    order the hops built it), the queries the next hop searches (`frontier`), the hops done (`rounds`),
    and the passages the answer reads (`gathered`: the kept chunks, ordered and cut as the context says).
    Kept chunks join `evidence` at their hop."""

    tree: Annotated[list[TreeNode], operator.add]
    frontier: list[Branch]
    rounds: int
    gathered: list[Evidence]


class TreeHopOutput(AnswerOutput, total=False):
    """What a TreeHop run returns: the answer and its evidence, and the retrieval tree behind them."""

    tree: list[TreeNode]
