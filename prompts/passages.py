"""How retrieved passages are shown to a model: numbered, titled, in retrieval order."""

from __future__ import annotations

from collections.abc import Sequence

from stores.evidence import Evidence


def format_passages(evidence: Sequence[Evidence]) -> str:
    """Number passages in the order they were gathered, so appending new evidence keeps the prefix stable."""
    return "\n\n".join(f"[{i}] {item['title']}\n{item['text'].strip()}" for i, item in enumerate(evidence, 1))
