"""Reply shapes: what a parsed role's reply looks like, as data, for providers that can constrain output.

A role whose reply is parsed declares its shape (a JSON schema) in its own prompt module. With the
`structured_output` setting on, the gateway asks the provider for it (llama.cpp turns the schema into a
grammar; an OpenAI-compatible server takes it as `response_format`), and the role's parser reads such a
reply with `ReplyShape.read` first: plain JSON of exactly that shape. Anything else (cut off at the token
limit, a server that ignored the request) goes to the role's tolerant parser, as every reply does with the
setting off, and the parser notes `UNREAD` in what it records.

Each shape is what its prompt already asks for, written as JSON (a JSON array of sub-questions, a bare
"Yes" / "No" verdict as the JSON string `"Yes"`, the planned question as a JSON string; the question writer's
lines as an array of strings), so the prompts read the same with the setting on or off (one wording, one
KV prefix) and the tolerant parsers read most structured replies too. OpenAI's own API takes only an object at a schema's root: it refuses the array,
string and enum shapes, and the gateway then asks that role without one (nodes.llm).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

UNREAD = "a structured reply not of its shape: read as free text"

_TYPES: dict[str, type | tuple[type, ...]] = {
    "string": str,
    "array": list,
    "object": dict,
    "boolean": bool,
    "null": type(None),
    "integer": int,
    "number": (int, float),
}


@dataclass(frozen=True)
class ReplyShape:
    """A reply's JSON schema, named (OpenAI's `response_format` wants a name) and readable back."""

    name: str
    schema: Mapping[str, Any]

    @property
    def version(self) -> str:
        """A short hash of the schema: what asking for it adds to an index extra's identity."""
        return hashlib.sha256(json.dumps(self.schema, sort_keys=True).encode()).hexdigest()[:10]

    def read(self, text: str) -> Any | None:
        """The reply as JSON when it is exactly this shape (whitespace around it aside), else None."""
        try:
            value = json.loads(text)
        except (ValueError, RecursionError):  # not JSON, cut short, or nested too deep for the decoder
            return None
        return value if fits(value, self.schema) else None


def fits(value: Any, schema: Mapping[str, Any]) -> bool:
    """Whether `value` keeps to `schema`, for the keywords the shapes use: type (one or a list), enum,
    items, minItems, minLength, properties, required, additionalProperties (False)."""
    kinds = schema.get("type")
    if kinds is not None:
        names = [kinds] if isinstance(kinds, str) else list(kinds)
        # JSON's true is no integer, though Python's bool is an int
        if isinstance(value, bool) and "boolean" not in names:
            return False
        if not any(isinstance(value, _TYPES[name]) for name in names):
            return False
    if "enum" in schema and value not in schema["enum"]:
        return False
    if isinstance(value, str) and len(value.strip()) < schema.get("minLength", 0):
        return False
    if isinstance(value, list):
        items = schema.get("items", {})
        return len(value) >= schema.get("minItems", 0) and all(fits(item, items) for item in value)
    if isinstance(value, dict):
        properties = schema.get("properties", {})
        if any(key not in value for key in schema.get("required", ())):
            return False
        if schema.get("additionalProperties", True) is False and any(key not in properties for key in value):
            return False
        return all(fits(item, properties[key]) for key, item in value.items() if key in properties)
    return True


YES_NO = ReplyShape("verdict", {"type": "string", "enum": ["Yes", "No"]})
"""A one-word verdict: the JSON string "Yes" or "No" (the prompts ask for Yes or No only)."""


def json_object(text: str, shape: ReplyShape, structured: bool) -> tuple[dict[str, Any] | None, list[str]]:
    """(a reply's JSON object, notes on how it was read), for the parsers of object-shaped replies: a
    `structured` reply (asked for `shape`) is read as that shape when it is one; otherwise the first JSON
    object in the text is read, text around it ignored (noted UNREAD when it was asked structured). None,
    noted, when there is no object or it does not parse (cut off at the token limit, nested too deep for
    the decoder, or a number too long to convert)."""
    data = shape.read(text) if structured else None
    notes = [UNREAD] if structured and data is None else []
    if data is not None:
        return data, notes
    start = text.find("{")
    if start < 0:
        return None, [*notes, "no JSON object"]
    try:
        found, _ = json.JSONDecoder().raw_decode(text, start)
    except (ValueError, RecursionError):
        return None, [*notes, "broken JSON object"]
    return found, notes
