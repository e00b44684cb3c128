"""Every index extra by name: the one list of them, as graphs/registry.py is the one list of methods."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from stores.extras import Extra, UnknownExtraError
from stores.metadata import METADATA
from stores.question_graph import QUESTION_GRAPH
from stores.questions import QUESTIONS
from stores.sentence_graph import SENTENCE_GRAPH

EXTRAS: dict[str, Extra[Any, Any, Any]] = {
    extra.name: extra for extra in (SENTENCE_GRAPH, METADATA, QUESTIONS, QUESTION_GRAPH)
}


def extra_named(name: str) -> Extra[Any, Any, Any]:
    """The extra registered as `name`; an error naming the known ones otherwise."""
    try:
        return EXTRAS[name]
    except KeyError:
        known = "; ".join(f"{extra.name} ({extra.description})" for extra in EXTRAS.values())
        raise UnknownExtraError(f"Unknown index extra {name!r}; known extras: {known}.") from None


def in_build_order(names: Iterable[str]) -> list[Extra[Any, Any, Any]]:
    """The named extras and every extra they depend on, each after its dependencies (otherwise by name)."""
    ordered: list[Extra[Any, Any, Any]] = []

    def visit(name: str, needed_by: tuple[str, ...]) -> None:
        if name in needed_by:
            raise ValueError(
                f"index extras depend on each other in a cycle: {' -> '.join((*needed_by, name))}"
            )
        extra = extra_named(name)
        if extra not in ordered:
            for dependency in extra.depends_on:
                visit(dependency, (*needed_by, name))
            ordered.append(extra)

    for name in sorted(names):
        visit(name, ())
    return ordered
