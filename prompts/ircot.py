"""IR-CoT's reasoner (seed 004 §2.3; StonyBrookNLP/ircot): the next sentence of a chain of thought over the
paragraphs gathered so far, and the chain-of-thought reader that writes the whole chain
(nodes.chain_of_thought), which also writes Iter-RetGen's generations: the original Iter-RetGen prompts for
step-by-step reasoning over the retrieved passages, then the answer, which is what this asks.

What it asks, as the original's prompt does: paragraphs shown as "Wikipedia Title: <title>" blocks, then
"Q: <question>" and "A: <the chain so far>"; one fact per sentence; a chain that ends with a sentence
saying "answer is" (the original's stop pattern, colon optional). The wording is ours.

Layout for llama.cpp's KV-prefix reuse: the system message (instructions, then the worked examples) never
changes within a run; the user message holds the paragraphs in the order they arrived, then the question
and the chain so far. A step that retrieved nothing new extends the previous prompt by one sentence; a
step that retrieved re-evaluates only from the first new paragraph on. The chain-of-thought reader's
prompt is the last step's with an empty chain, so it reuses everything up to the question.

Echoes (prompts.echo): the instructions and every worked example (question, paragraphs, sentences) are
the prompt's own text, so a reply that copies them is retried, then blanked (an empty reply, whose
fallback the reasoning node defines). The one piece of our text a reply must repeat, the answer phrase
"So the answer is:", is left out of the guard's own text on purpose: it stays task text, so a sentence
that uses it is not an echo, while a copied example's whole last sentence ("So the answer is: <an
example's answer>") still is.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from prompts.demonstrations import Demonstration
from prompts.echo import EchoGuard, normalise
from prompts.passages import DATA_RULE, OPEN, fenced, heading
from stores.evidence import Evidence

SYSTEM = (
    "You answer a question by reasoning over the paragraphs given with it, one short sentence per step. "
    "Each sentence states a single fact found in the paragraphs, or draws a conclusion from the facts "
    'already stated, and leads toward the answer. The reasoning written so far follows "A:"; reply '
    f"with the sentences that continue it, without repeating it. {DATA_RULE}"
)
ANSWER_PHRASE = "So the answer is:"
_STOP_BEFORE = "When the facts are enough, the last sentence starts with"
_STOP_AFTER = "and names the answer."
STOP_RULE = f'{_STOP_BEFORE} "{ANSWER_PHRASE}" {_STOP_AFTER}'
EXAMPLES_HEADER = "Worked examples, each on a question of its own:"

#: The stop pattern: a sentence saying "answer is", with or without a colon (the original's regex).
ANSWER_IS = re.compile(r"\banswer is:?\s*(.*)", re.IGNORECASE | re.DOTALL)
# Sentences that only conclude from what the chain already says: searching with them finds nothing new
# (the original's list of reasoning starters).
_CONCLUDING = ("thus ", "thus,", "so ", "so,", "that is,", "therefore", "hence")
# Lines that begin the prompt's own layout: a reply that reaches one has left the chain of thought.
_LAYOUT_LINES = ("Q:", "Wikipedia Title:", OPEN)
_CHAIN_LABEL = re.compile(r"^\s*A\s*:\s*")


def paragraph_block(title: str, text: str, max_words: int | None = None) -> str:
    """A paragraph as the reasoner reads it, fenced as data (prompts.passages): its title line, then its
    text, cut after `max_words` words (split at spaces only, so the paragraph keeps its line breaks)."""
    words = text.strip().split(" ")
    return fenced(f"Wikipedia Title: {title}\n{' '.join(words[:max_words])}")


def _example(demo: Demonstration) -> str:
    paragraphs = "\n\n".join(paragraph_block(p.title, p.text) for p in demo.paragraphs)
    return f"{paragraphs}\n\nQ: {demo.question}\nA: {' '.join(demo.reasoning)}"


def system_text(demos: Sequence[Demonstration]) -> str:
    examples = "\n\n\n".join(_example(demo) for demo in demos)
    return f"{SYSTEM}\n{STOP_RULE}" + (f"\n\n{EXAMPLES_HEADER}\n\n{examples}" if demos else "")


def messages(
    question: str,
    paragraphs: Sequence[Evidence],
    reasoning: Sequence[str],
    demos: Sequence[Demonstration],
    paragraph_words: int,
) -> list[BaseMessage]:
    """The reasoner's prompt; with an empty `reasoning`, the chain-of-thought reader's."""
    blocks = "\n\n".join(paragraph_block(heading(p), p["text"], paragraph_words) for p in paragraphs)
    chain = " ".join(reasoning)
    task = f"Q: {question}\nA:" + (f" {chain}" if chain else "")
    return [SystemMessage(system_text(demos)), HumanMessage(f"{blocks}\n\n{task}" if blocks else task)]


def guard(demos: Sequence[Demonstration]) -> EchoGuard:
    """The instructions and the shown examples are the prompt's own text (the answer phrase is not)."""
    examples = tuple(
        text
        for demo in demos
        for text in (demo.question, *(p.text for p in demo.paragraphs), *demo.reasoning)
    )
    return EchoGuard(own_text=(SYSTEM, _STOP_BEFORE, _STOP_AFTER, EXAMPLES_HEADER, *examples))


def chain_text(reply: str) -> str:
    """The reply's chain of thought on one line: a leading "A:" dropped, lines joined, and everything from a
    line that starts the prompt's layout again ("Q:", "Wikipedia Title:", a passage's fence) cut off."""
    lines: list[str] = []
    for line in reply.strip().splitlines():
        line = line.strip()
        if line.startswith(_LAYOUT_LINES):
            break
        if line:
            lines.append(line)
    return _CHAIN_LABEL.sub("", " ".join(lines))


def sentences(text: str, nlp: Any) -> list[str]:
    """`text` split into sentences by spaCy's parser, which keeps "Dr. Smith", "the U.S. Senate", "3.5 km"
    and "St. Louis" whole where splitting at full stops would not."""
    return [sentence.text.strip() for sentence in nlp(text).sents if sentence.text.strip()]


def next_sentence(reply: str, written: Sequence[str], nlp: Any) -> tuple[str, str | None]:
    """(the next sentence of the chain, a note on what was wrong with the reply or None).

    The next sentence is the reply's first: the model runs on after it, and the original keeps only the
    first. Malformed replies, each with its defined outcome:
    - empty, or nothing before a line that starts the prompt's layout again: no sentence;
    - restating sentences the chain already has before going on (the model starting the chain over): the
      first sentence that is new, with a note;
    - nothing but restated sentences: no sentence (with greedy decoding the model would only loop).
    """
    said = sentences(chain_text(reply), nlp)
    if not said:
        return "", "empty reply"
    known = {normalise(sentence) for sentence in written}
    restated = next((i for i, sentence in enumerate(said) if normalise(sentence) not in known), len(said))
    if restated == len(said):
        return "", "the reply only repeated sentences the chain already has"
    if restated:
        return said[restated], f"the reply restated {restated} earlier sentence(s); its first new one kept"
    return said[0], None


def says_answer(sentence: str) -> bool:
    return ANSWER_IS.search(sentence) is not None


def is_conclusion(sentence: str) -> bool:
    """A sentence that only concludes ("Thus ...", "So ...", "Therefore ..."): not a retrieval query."""
    return sentence.lower().startswith(_CONCLUDING)


def answer_in(reply: str, nlp: Any) -> str | None:
    """The answer a whole chain of thought gives: what follows "answer is" in the first sentence saying
    it, as written; None when no sentence says it, or nothing follows."""
    said = next((s for s in sentences(chain_text(reply), nlp) if says_answer(s)), "")
    match = ANSWER_IS.search(said)
    answer = match.group(1).strip() if match else ""
    return answer or None
