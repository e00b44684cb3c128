"""Run options typed on a command line: `KEY=VALUE` settings and `METHOD+KEY=VALUE` method variants.

A method's per-run parameters are its `context_schema` dataclass (what Studio shows), so the command line
needs no list of its own: a value is converted to the field's declared type and checked against the range
or choices the field declares (nodes.context.parameter_problem), and a key the schema lacks is an error
that lists the keys it has. A variant names a method with some of those parameters fixed, e.g.
`chainrag+integration=contexts` (CxtInt) or `chainrag+ec_edges=false` (an ablation), so one evaluation can
put a method, its variants and its baselines side by side.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from typing import Any, get_args, get_origin, get_type_hints

from hopgraph.providers import ConfigError
from nodes.context import parameter_problem

_TRUE, _FALSE = {"true", "yes", "on", "1"}, {"false", "no", "off", "0"}


@dataclass(frozen=True)
class MethodVariant:
    """One entry of `--methods`: the registered method it runs and the parameters it fixes."""

    label: str
    method: str
    options: Mapping[str, str]


def parse_assignments(items: Iterable[str], what: str) -> dict[str, str]:
    """`["word_limit=300", ...]` -> `{"word_limit": "300"}`; `what` names the input in errors."""
    parsed: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise ConfigError(f"{what}: {item!r} is not KEY=VALUE (for example word_limit=300).")
        parsed[key.strip()] = value.strip()
    return parsed


def parse_methods(text: str) -> list[MethodVariant]:
    """`"naive, chainrag, chainrag+integration=contexts"` -> one MethodVariant each, labels unique."""
    variants = []
    for entry in (part.strip() for part in text.split(",")):
        if not entry:
            continue
        method, *assignments = (piece.strip() for piece in entry.split("+"))
        options = parse_assignments(assignments, f"--methods entry {entry!r}")
        variants.append(MethodVariant(entry, method, options))
    labels = [v.label for v in variants]
    if not variants:
        raise ConfigError("No methods to evaluate: name at least one, e.g. --methods naive.")
    if len(set(labels)) != len(labels):
        raise ConfigError(f"--methods {text!r}: name each method or variant once, e.g. naive,chainrag.")
    return variants


def typed_options(schema: type, options: Mapping[str, Any], what: str) -> dict[str, Any]:
    """Convert `options` given as text to the types `schema` (a context_schema dataclass) declares for
    them, values that are not text (from the Python API) as they are, and check each against its field's
    range and choices: a bad value stops here, named as `what` gave it, before any graph runs."""
    hints = get_type_hints(schema)
    known = {f.name for f in fields(schema)}
    typed: dict[str, Any] = {}
    for key, raw in options.items():
        if key not in known:
            raise ConfigError(
                f"{what}: {schema.__name__} has no parameter {key!r}; it has {', '.join(sorted(known))}."
            )
        try:
            typed[key] = _convert(raw, hints[key]) if isinstance(raw, str) else raw
        except ValueError as exc:
            raise ConfigError(f"{what}: {key}={raw!r} is not valid: {exc}.") from None
        if problem := parameter_problem(schema, key, typed[key]):
            raise ConfigError(f"{what}: {key}={raw!r} is not valid: {key} {problem}.")
    return typed


def _convert(raw: str, hint: Any) -> Any:
    """`raw` as the type `hint` names (a Literal's text stays text: parameter_problem checks its choices)."""
    origin, args = get_origin(hint), get_args(hint)
    if origin in (typing.Union, types.UnionType):
        if raw.lower() in {"none", "null"} and type(None) in args:
            return None
        return _convert(raw, next(a for a in args if a is not type(None)))
    if hint is bool:
        if raw.lower() not in _TRUE | _FALSE:
            raise ValueError("use true or false")
        return raw.lower() in _TRUE
    if hint in (int, float):
        try:
            return hint(raw)
        except ValueError:
            raise ValueError(f"expected {'an integer' if hint is int else 'a number'}") from None
    return raw
