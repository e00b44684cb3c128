"""How retrieved passages are shown to a model: numbered, titled, in retrieval order."""

from __future__ import annotations

from collections.abc import Sequence

from stores.evidence import Evidence


def format_passages(evidence: Sequence[Evidence]) -> str:
    """Number passages in the order they were gathered, so appending new evidence keeps the prefix stable.
    A passage whose document carries metadata shows it on one line under the title (its source and date
    on MultiHop-RAG, whose questions name them)."""
    return "\n\n".join(f"[{i}] {heading(item)}\n{item['text'].strip()}" for i, item in enumerate(evidence, 1))


def heading(item: Evidence) -> str:
    """The passage's title, and its metadata line under it when it has one."""
    about = item.get("about", "")
    return f"{item['title']}\n{about}" if about else item["title"]
