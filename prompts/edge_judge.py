"""Edge judge (BiQOG's edge formation): does this chunk answer this hypothetical question? Yes or No.

Layout for llama.cpp's KV reuse: the instructions (identical for every call), then the chunk, then the
question last. The build orders its calls chunk by chunk, so every question judged against a chunk after
the first reuses the evaluated instructions and chunk from the cache and only the question and the verdict
are new tokens.

The verdict is the reply's first word, punctuation and case aside: "Yes" / "No" (whatever follows, such as
a reason, is ignored). Anything else is `malformed`: no edge is made, and the count is reported, so a
model that does not keep to the format shows in the numbers instead of silently making a sparse graph.
"""

from __future__ import annotations

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from prompts.echo import EchoGuard, normalise
from prompts.passages import DATA_RULE, chunk_passage, chunk_prompt_version
from prompts.structured import YES_NO

SYSTEM = (
    "You read a passage and a question, and decide whether the passage itself contains the answer to the "
    f"question. Reply Yes if it does and No if it does not, and nothing else. {DATA_RULE}"
)

TEMPLATE = "{passage}\n\nQuestion: {question}\nDoes the passage answer it?"

GUARD = EchoGuard(own_text=(SYSTEM,), allowed=frozenset({"yes", "no"}))

# Which prompt judged an index's edges: part of the judge's identity, so a reworded prompt judges anew.
VERSION = chunk_prompt_version(SYSTEM, TEMPLATE)

YES, NO, MALFORMED = "yes", "no", "malformed"
VERDICTS = (YES, NO, MALFORMED)

# The verdict for structured output: the one word asked for, as a JSON string
REPLY = YES_NO

# A verdict is one word; a few tokens leave room for "Yes." and a stray space without paying for a reason.
MAX_TOKENS = 4


def messages(title: str, text: str, question: str) -> list[BaseMessage]:
    """Instructions, then the chunk, then the question: what many calls share first, what varies last."""
    return [
        SystemMessage(SYSTEM),
        HumanMessage(TEMPLATE.format(passage=chunk_passage(title, text), question=question)),
    ]


def verdict(reply: str, structured: bool = False) -> str:
    """YES or NO by the reply's first word (case and punctuation aside); MALFORMED for anything else. A
    `structured` reply (asked for REPLY) is read as that JSON string first; one that is not falls to the
    first word, so a verdict cut short is MALFORMED, counted as any other."""
    shaped = REPLY.read(reply) if structured else None
    words = normalise(shaped if shaped is not None else reply).split()
    first = words[0] if words else ""
    return first if first in (YES, NO) else MALFORMED
