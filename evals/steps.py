"""A run's steps as `hopgraph history` replays them: which node ran and what it wrote, in run order.

Both read them here, from the graph's checkpoints, so a question's steps in an evaluation's result line are
the same, node for node, as `hopgraph history THREAD_ID` prints, and as `hopgraph ask` printed them live:
each task's own update, as LangGraph records it with the task (`StateSnapshot.tasks[i].result`, the writes
the node returned), `__start__` being the question itself. A `Send` fan-out runs one node as several tasks
in one super-step; each is a step of its own, labelled with its branch (`task_labels`).

The evaluation keeps them in each result line (`record_steps`), because the explorer page must show a
question's steps without the checkpoint store, which may be another data directory or Postgres.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from langgraph.graph.state import CompiledStateGraph

#: Keys holding passages (Evidence items): in a result line those of the final evidence are kept as
#: references (id, hop, score), their text stored once in the line's `evidence`.
_PASSAGES = ("evidence", "gathered", "ranked")
#: Keys holding query embeddings (TreeHop's next hop): a result line keeps only how many.
_VECTORS = ("frontier",)

Step = tuple[str, dict[str, Any]]


def task_labels(names: Sequence[str]) -> list[str]:
    """The labels of one super-step's tasks, given their node names in task order: the name, and for a node
    that runs as several branches in the step (a `Send` fan-out), which one it is.

    Task order is the same for a live run (`stream_mode="tasks"`, whose start events come before any
    result) and for the checkpoint's `tasks`, so `ask` and `history` give a branch the same label."""
    runs = Counter(names)
    seen: Counter[str] = Counter()
    labels = []
    for name in names:
        seen[name] += 1
        labels.append(f"{name} (branch {seen[name]} of {runs[name]})" if runs[name] > 1 else name)
    return labels


def thread_steps(graph: CompiledStateGraph, config: Mapping[str, Any]) -> list[Step]:
    """(task label, the task's own update) for every task of the thread `config` names that finished, first
    to last, branches of a step in branch order; a task that failed gives {"error": ...} instead.

    A task's update is what its node returned, not a difference of states: a node that writes a value the
    state already holds still shows it, and parallel branches are never merged under one label."""
    steps: list[Step] = []
    for snapshot in reversed(list(graph.get_state_history(dict(config)))):
        for label, task in zip(task_labels([t.name for t in snapshot.tasks]), snapshot.tasks, strict=True):
            if task.result is not None:
                steps.append((label, dict(task.result)))
            elif task.error is not None:
                steps.append((label, {"error": f"{type(task.error).__name__}: {task.error}"}))
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
