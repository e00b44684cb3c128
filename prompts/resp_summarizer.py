"""ReSP's dual-function summarizer (paper 001 §4.1, Table 1 "Global Evidence" and "Local Pathway").

Two calls over the same retrieved passages, asking what Table 1 asks, in our words:
- global evidence: a short passage, written only from the retrieved passages, of what supports answering
  the overarching question, with no label before it. Table 1 also asks the model to close it with an end
  mark ("[DONE]"); we do not: the embedded 1.5B model wrote the mark first, an empty summary, in 8 of the
  first 10 HotpotQA dev questions' first rounds (39 of 50 over an evaluation), and in none of them once the
  mark was no longer asked for. A reply that writes the mark anyway is still cut there (it is a stop
  sequence too);
- local pathway: can the current sub-question be answered completely and exactly from what is known,
  without inferring? "Yes" and the answer without restating the question, or "No" alone.

Table 1 shows the local-pathway prompt reading the memory queues, while §4.1 has the summarizer read the
retrieved documents for both tasks. We follow §4.1 (the passages) by default; `local_messages(...,
known=...)` gives Table 1's variant, which the graph uses with the context switch
`local_pathway_reads = "memories"`.

Layout for llama.cpp's KV-prefix reuse: both calls share the system text and the numbered passages, and
differ only in the question and instruction at the end, so the local call re-evaluates only its tail.

Parsing, with the defined outcome of every reply a small model gets wrong (the node records each):
- `global_evidence`: cut at the end mark; a leading label ("Passage:", "Evidence:") dropped; sentences
  repeated word for word dropped (a looping model); a reply that ran into the token cap without its end
  mark cut back to its last whole sentence; nothing left -> no summary.
- the local pathway reply is read by the shared Yes/No parser (`prompts.reader.verdict_and_rest`): Yes
  with an answer -> answered; Yes with no answer or a refusal, No, or neither -> not answered.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from prompts.echo import EchoGuard, normalise
from prompts.ircot import sentences
from prompts.passages import DATA_RULE, format_passages
from stores.evidence import Evidence

SYSTEM = (
    "You condense retrieved passages for a search that answers a question in steps. Use only what the "
    f"passages say. {DATA_RULE}"
)

END_MARK = "[DONE]"  # Table 1's end mark: not asked for (see above), cut at when written
GLOBAL_INSTRUCTION = (
    "Write a short passage that gathers every fact in these passages that helps to answer the question, "
    "using only what they state. Start directly with the facts, without a heading or label."
)
GLOBAL_CUE = "Supporting passage:"

LOCAL_INSTRUCTION = (
    "Relying only on the information above and without guessing, can you answer this question completely "
    "and exactly? If you can, reply Yes followed by the answer, without restating the question. If you "
    "cannot, reply No and nothing else."
)

GLOBAL_GUARD = EchoGuard(own_text=(SYSTEM, GLOBAL_INSTRUCTION, GLOBAL_CUE))
LOCAL_GUARD = EchoGuard(own_text=(SYSTEM, LOCAL_INSTRUCTION), allowed=frozenset({"yes", "no"}))

_LABEL = re.compile(r"^\s*(supporting passage|passage|evidence|summary|response)\s*:\s*", re.IGNORECASE)
# Text that closes a sentence: a full stop, question or exclamation mark, possibly inside quotes/brackets.
_SENTENCE_END = re.compile(r"[.!?][\"'”’)\]]*$")


def _task(passages: Sequence[Evidence], question: str, instruction: str) -> HumanMessage:
    return HumanMessage(f"Passages:\n{format_passages(passages)}\n\nQuestion: {question}\n{instruction}")


def global_messages(passages: Sequence[Evidence], question: str) -> list[BaseMessage]:
    """The global-evidence call: the round's passages, the overarching question, the instruction."""
    return [SystemMessage(SYSTEM), _task(passages, question, f"{GLOBAL_INSTRUCTION}\n{GLOBAL_CUE}")]


def local_messages(
    passages: Sequence[Evidence], sub_question: str, known: str | None = None
) -> list[BaseMessage]:
    """The local-pathway call: the round's passages (§4.1), or with `known` the memory queues instead
    (Table 1), then the sub-question and the instruction."""
    if known is None:
        return [SystemMessage(SYSTEM), _task(passages, sub_question, LOCAL_INSTRUCTION)]
    return [
        SystemMessage(SYSTEM),
        HumanMessage(f"Known information:\n{known}\n\nQuestion: {sub_question}\n{LOCAL_INSTRUCTION}"),
    ]


def global_evidence(reply: str, nlp: Any, *, hit_cap: bool) -> tuple[str, list[str]]:
    """(the summary to file in the global evidence memory, notes on what was wrong with the reply).

    `hit_cap` says the reply used its whole token budget: without the end mark, a last sentence with no
    closing full stop was cut off mid-way and is dropped (unless it is the only one, which is kept as
    written: half a fact is still evidence).
    """
    text, ended, _ = reply.partition(END_MARK)
    notes: list[str] = []
    said = sentences(_LABEL.sub("", text.strip()), nlp) if text.strip() else []
    kept: list[str] = []
    for sentence in said:
        if normalise(sentence) not in {normalise(k) for k in kept}:
            kept.append(sentence)
    if len(kept) < len(said):
        notes.append(f"{len(said) - len(kept)} repeated sentence(s) dropped")
    if hit_cap and not ended and len(kept) > 1 and not _SENTENCE_END.search(kept[-1]):
        kept.pop()
        notes.append("it ran into the token cap mid-sentence: cut back to its last whole sentence")
    summary = " ".join(kept)
    return summary, notes
