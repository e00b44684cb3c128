"""Decomposer (ChainRAG, the paper's Figure 8): break a multi-hop question into minimal sub-questions.

Keeps every guideline of the paper's prompt — decompose only when several distinct facts must be
connected; one essential fact per sub-question; no redundancy; impact questions split into the thing and
its impact; comparisons ask the compared attribute of each item separately, with a final comparison only
when complex; parallel / sequential / comparative progressions; usually two sub-questions at most — and
its output format, a JSON array of strings. Wording and examples are ours; the examples sit inside the
rules, on topics of their own, and the output format is described, not shown as a copyable array (the
1.5B model once returned the format example "Who founded Acme Corp?" as a decomposition). A later sub-question refers to
an earlier answer with a pronoun ("it", "that person"), which is exactly what the rewriting step resolves.
"""

from __future__ import annotations

import json
import re

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from prompts.echo import EchoGuard

SYSTEM = """You split questions into the fewest sub-questions needed to answer them.

Rules:
1. Split only when the question needs several separate facts that must be connected; otherwise return the question itself as the only item.
2. Each sub-question asks for one specific fact that is needed.
3. No two sub-questions may ask for the same thing or overlap.
4. For a question about the effect or importance of something, ask first what the thing or event was, then what its effect or importance was.
5. For a comparison of two items, ask for the compared attribute of each item in its own sub-question; add a final sub-question that compares the two findings only when the comparison is not trivial.
6. Use the order the facts depend on:
   - parallel: independent facts, e.g. "Were Ada Lovelace and Alan Turing both British?" -> ["What was Ada Lovelace's nationality?", "What was Alan Turing's nationality?"]
   - sequential: each step uses the previous answer, referred to with a pronoun, e.g. "In which city was the architect of the Sydney Opera House born?" -> ["Who designed the Sydney Opera House?", "In which city was he born?"]
   - comparative: e.g. "Which opened first, the Golden Gate Bridge or the Bay Bridge?" -> ["When did the Golden Gate Bridge open?", "When did the Bay Bridge open?"]
7. Keep the list short: usually two sub-questions at most.

Output only a JSON array of strings, one sub-question per string. Every sub-question must be necessary and different from the others."""

GUARD = EchoGuard(own_text=(SYSTEM,))


def messages(question: str) -> list[BaseMessage]:
    return [SystemMessage(SYSTEM), HumanMessage(f"Question: {question}\nJSON array:")]


def parse(text: str, question: str, limit: int) -> tuple[list[str], str | None]:
    """(sub-questions, fallback): the JSON array in the reply, at most `limit` items; when the reply holds
    no usable array (empty, an echo the gateway blanked, broken JSON, no strings) the question itself as the
    only item, with the reason as `fallback` so the state records it."""
    match = re.search(r"\[.*\]", text, re.DOTALL)
    if not match:
        return [question], "no JSON array: the question itself"
    try:
        items = json.loads(match.group(0))
    except json.JSONDecodeError:
        return [question], "broken JSON array: the question itself"
    subs = [str(item).strip() for item in items if str(item).strip()] if isinstance(items, list) else []
    if not subs:
        return [question], "empty JSON array: the question itself"
    return subs[:limit], None
