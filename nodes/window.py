"""How many tokens a prompt takes, for sizing a prompt to its model's context window.

A prompt that grows with the evidence (ChainRAG's CxtInt reads every sentence its sub-questions gathered)
must stop where it would no longer fit the reader's window: past it, llama.cpp refuses the call, an
OpenAI-compatible server answers with an error, and some (Ollama) silently drop the prompt's start. The
window comes from the settings, and so does how a prompt is counted (hopgraph.providers puts both on every
RoleModel): its messages' texts in the model's tokens, plus an allowance for the chat template's markers
around each message and for what a template adds once (the assistant's opening, a default system text).

The texts are counted by the model's own tokenizer where hopgraph has it: a local GGUF's vocabulary, loaded
without the weights (hopgraph.local_model). A provider's tokenizer is on its server, so there they are
estimated without one, on the high side (`estimated_text_tokens`). Characters / 4, the usual estimate,
undercounts what matters: Qwen2.5's tokenizer (the embedded model's) writes every digit as a token, splits
a rare name or a word of another language into pieces of two or three letters ("Farrukhzad" is five tokens;
Finnish, Polish and Indonesian prose run at 2.5 to 3.5 characters a token) and takes about a token a
character of Chinese. The estimate is never below that tokenizer's count on any of these, on figures, code,
URLs, symbols or emoji, nor on any prompt of any method (tests/test_prompt_fit.py checks each against the
GGUF's own count); the price is English at about 1.8 to 1.9 times its count (HotpotQA's and MultiHop-RAG's
passages, the sample's prompts), likely more against a larger vocabulary such as OpenAI's. Set
`provider_n_ctx` to the server's real window: a provider's is usually large enough that the margin costs
nothing.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from langchain_core.messages import BaseMessage

# The chat template's markers around each message (Qwen2.5's "<|im_start|>user\n ... <|im_end|>\n": 5)
MESSAGE_TOKENS = 8
# What a template adds once: the assistant's opening (3 in Qwen2.5's), and the default system text some
# templates put before a prompt without one (about 20 in Qwen2.5's)
PROMPT_TOKENS = 32
# A run of letters, of digits or of whitespace, or any one other character
_PIECE = re.compile(r"[^\W\d_]+|\d+|\s+|.", re.DOTALL)


def prompt_tokens(messages: Sequence[BaseMessage], text_tokens: Callable[[str], int]) -> int:
    """The tokens `messages` take as a chat prompt, their texts counted by `text_tokens`, with the
    template's allowances."""
    return PROMPT_TOKENS + sum(MESSAGE_TOKENS + text_tokens(str(message.content)) for message in messages)


def estimated_tokens(messages: Sequence[BaseMessage]) -> int:
    """The tokens `messages` take as a chat prompt, estimated without a tokenizer, on the high side."""
    return prompt_tokens(messages, estimated_text_tokens)


def estimated_text_tokens(text: str) -> int:
    """Tokens of `text`, estimated piece by piece on the high side: a word of ASCII letters one per two
    letters (at least one); a number one a digit and one for the space before it; other letters, and
    symbols outside ASCII, one per two UTF-8 bytes; punctuation one each; a single space none (it joins the
    next word), any other whitespace one."""
    total = 0
    for piece in _PIECE.findall(text):
        if piece.isspace():
            total += piece != " "
        elif piece.isdigit():
            total += len(piece) + 1
        elif piece.isascii():
            total += max(1, len(piece) // 2) if piece.isalpha() else 1
        else:
            total += (len(piece.encode("utf-8")) + 1) // 2
    return total
