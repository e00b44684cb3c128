"""A run's steps as `hopgraph history` replays them: which node ran and what it wrote, in run order.

Both read them here, from the graph's checkpoints, so a question's steps in an evaluation's result line are
the same, node for node, as `hopgraph history THREAD_ID` prints: each super-step is the node(s) that ran
(`next` of the checkpoint before it: `__start__` for the question itself) and the state keys whose values it
changed, with the two lists every step appends to (evidence and LLM usage) cut to what that step added.

The evaluation keeps them in each result line (`record_steps`), because the explorer page must show a
question's steps without the checkpoint store, which may be another data directory or Postgres.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from itertools import pairwise
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from langgraph.graph.state import CompiledStateGraph

#: State lists a step appends to: a step shows only what it added.
_APPENDED = ("evidence", "usage")
#: Keys holding passages (Evidence items): in a result line those of the final evidence are kept as
#: references (id, hop, score), their text stored once in the line's `evidence`.
_PASSAGES = ("evidence", "gathered", "ranked")
#: Keys holding query embeddings (TreeHop's next hop): a result line keeps only how many.
_VECTORS = ("frontier",)

Step = tuple[str, dict[str, Any]]


def thread_steps(graph: CompiledStateGraph, config: Mapping[str, Any]) -> list[Step]:
    """(node(s) that ran, what they changed) for every step of the thread `config` names, first to last."""
    snapshots = list(reversed(list(graph.get_state_history(dict(config)))))
    steps: list[Step] = []
    for before, after in pairwise(snapshots):
        ran = ", ".join(before.next) or "input"
        changed = {k: v for k, v in after.values.items() if before.values.get(k) != v}
        for listed in _APPENDED:
            if listed in changed:
                changed[listed] = changed[listed][len(before.values.get(listed, [])) :]
        steps.append((ran, changed))
    return steps


def _compact(key: str, value: Any, final: set[str]) -> Any:
    if key in _VECTORS and isinstance(value, list):
        return {"vectors": len(value)}
    if key in _PASSAGES and isinstance(value, list):
        return [
            {"id": item["id"], "hop": item["hop"], "score": item["score"]}
            if item.get("id") in final
            else item
            for item in value
        ]
    return value


def record_steps(steps: Iterable[Step], evidence: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The steps as a result line keeps them: {"node", "update"}, passages of the final `evidence` by
    reference and embeddings by count, so a line holds each passage's text once."""
    final = {item["id"] for item in evidence}
    kept = [
        {"node": node, "update": {key: _compact(key, value, final) for key, value in update.items()}}
        for node, update in steps
    ]
    # a value JSON cannot hold (a method's own object in its state) is kept as its repr, not a failed line
    return json.loads(json.dumps(kept, default=repr))
