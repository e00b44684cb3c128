"""Retrieve: search the run's index with a query taken from the state and add the hits to the evidence.

One node serves every method that retrieves chunks; a graph builds it with where its query comes from and
which retrieval round (hop) the hits count as. NaiveRAG uses the defaults (the question, hop 1); IR-CoT
retrieves with its last chain-of-thought sentence, Iter-RetGen with the question and its last generation,
ReSP and decomposition branches with a sub-question, each at its own hop; Multi-Meta-RAG with a metadata
filter it extracted. (TreeHop searches the same index by vector from its own hop node, all of a hop's
branches in one query: `ChunkIndex.search_by_vectors`.)
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from operator import itemgetter
from typing import Any, TypeVar

from langgraph.runtime import Runtime

from nodes.context import RetrievalContext, RetrievalMode, context_of
from nodes.protocols import IndexProvider
from nodes.state import QAState
from stores.evidence import Evidence
from stores.index import ChunkIndex

T = TypeVar("T")
State = Mapping[str, Any]
FromState = str | Callable[[State], T]
"""Where a node parameter comes from: a state key, or a function of the state."""
Query = str | Sequence[float]
"""Text (searched in the run's retrieval mode) or a vector in the index's embedding space (dense search)."""
Where = dict[str, Any] | None


def search_evidence(
    index: ChunkIndex,
    query: Query,
    k: int,
    hop: int,
    *,
    mode: RetrievalMode = "hybrid",
    where: Where = None,
    exclude: Collection[str] = frozenset(),
) -> list[Evidence]:
    """The `k` best chunks for `query` as evidence recorded at `hop`, best first, none of them in `exclude`.

    Excluded ids are dropped from a search for k + len(exclude) chunks, so k new chunks come back however
    the excluded ones ranked (fewer only when the index, or its `where` filter, holds fewer).
    """
    depth = k + len(exclude)
    if isinstance(query, str):
        hits = index.search(query, depth, mode=mode, where=where)
    else:
        hits = index.search_by_vector(query, depth, where=where)
    fresh = [hit for hit in hits if hit.chunk.id not in exclude][:k]
    return [index.evidence(hit.chunk, hit.score, hop) for hit in fresh]


def _from_state(source: FromState[T]) -> Callable[[State], T]:
    return source if callable(source) else itemgetter(source)


class Retrieve:
    """Retrieval as a node, parameterised when the graph is built.

    - `query`: the state key holding the query, or a function of the state (e.g. the question joined with
      the last generation). Text is searched in the run's `retrieval_mode`; a vector by vector.
    - `hop`: the retrieval round the hits count as (see `nodes.state.Evidence`): a number, a state key
      or a function of the state.
    - `where`: a Chroma metadata filter, from a state key or a function of the state (None: no filter).
      A filter that leaves fewer than `filled_below` passages (a context field, capped at the depth) is
      topped up from the unfiltered search, filtered hits first, and the top-up is recorded in
      `fallbacks`: a filter that is wrong, or names a source with little on the topic, must not leave the
      answer without passages. A method may turn that off (`filled_below` naming a field that is 0, as
      Multi-Meta-RAG does by default): an empty filtered result is then recorded in `fallbacks`.
    - `depth`: the context field that says how many passages to retrieve (`top_k`; Multi-Meta-RAG
      retrieves `candidates` to rerank).
    - `exclude_seen`: leave out chunks already in `evidence` and still return `top_k` new ones, for
      methods whose later rounds should add to what earlier rounds found rather than find it again.
    - `into`: the state key the hits are written to: `evidence` (merged there by its reducer), or a
      working set such as `gathered` that replaces the previous one (NaiveRAG w/ QD reads each
      sub-question's own top-k there; its answer node then moves them into `evidence`).
    - `context`: the method's context schema, whose defaults (`top_k`, `retrieval_mode`) apply when a
      run passes no context (ReSP searches dense by default).

    The state is annotated as a plain Mapping on purpose: LangGraph hands a node annotated with a TypedDict
    only that TypedDict's keys, and the key this node reads is the graph's choice.
    """

    def __init__(
        self,
        indexes: IndexProvider,
        *,
        query: FromState[Query] = "question",
        hop: int | FromState[int] = 1,
        where: FromState[Where] | None = None,
        exclude_seen: bool = False,
        into: str = "evidence",
        context: type[RetrievalContext] = RetrievalContext,
        depth: str = "top_k",
        filled_below: str = "top_k",
    ) -> None:
        self.indexes = indexes
        self.query = _from_state(query)
        self.hop = (lambda _state: hop) if isinstance(hop, int) else _from_state(hop)
        self.where = (lambda _state: None) if where is None else _from_state(where)
        self.exclude_seen = exclude_seen
        self.into = into
        self.context = context
        self.depth = depth
        self.filled_below = filled_below

    def __call__(self, state: State, runtime: Runtime[RetrievalContext]) -> dict:
        ctx = context_of(runtime.context, self.context)
        seen = {item["id"] for item in state.get("evidence", [])} if self.exclude_seen else set()
        index, query, hop = self.indexes.open(ctx.index), self.query(state), self.hop(state)
        where = self.where(state)
        k: int = getattr(ctx, self.depth)
        found = search_evidence(index, query, k, hop, mode=ctx.retrieval_mode, where=where, exclude=seen)
        minimum = min(k, getattr(ctx, self.filled_below))
        if where is not None and not found and not minimum:
            return {self.into: found, "fallbacks": ["retrieve: the metadata filter left no passage"]}
        if where is None or len(found) >= minimum:
            return {self.into: found}
        rest = search_evidence(
            index,
            query,
            k - len(found),
            hop,
            mode=ctx.retrieval_mode,
            exclude=seen | {i["id"] for i in found},
        )
        note = (
            f"retrieve: the metadata filter left {len(found)} passage(s), fewer than {minimum}; "
            f"unfiltered search added {len(rest)}"
        )
        return {self.into: found + rest, "fallbacks": [note]}


def count_passages(state: QAState) -> dict:
    """Where parallel retrieval branches join (query decomposition's `aggregate`): their hits are already
    one list, merged by `merge_evidence` (each passage once, at the smallest hop that found it; by hop, and
    within a hop in its branch's rank order, whichever branch finished first). What is left to record is its
    size: the statistic `passages`, the distinct passages the answer reads, which says what NaiveRAG's top_k
    must be to read as many."""
    return {"stats": {"passages": float(len(state.get("evidence", [])))}}
