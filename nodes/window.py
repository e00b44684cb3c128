"""How many tokens a prompt takes, estimated from its text alone, on the high side.

A prompt that grows with the evidence (ChainRAG's CxtInt reads every sentence its sub-questions gathered)
must stop where it would no longer fit the reader's context window: past it, llama.cpp refuses the call,
an OpenAI-compatible server answers with an error, and some (Ollama) silently drop the prompt's start. The
window is known from the settings (hopgraph.providers puts it on every RoleModel), the tokenizer is not: a
provider's runs on its server, and the embedded model's lives inside llama.cpp with the weights. So a
prompt is estimated, without a tokenizer, so as to be at least what the model will count.

Characters / 4 is the usual estimate and it undercounts what matters here: Qwen2.5's tokenizer (the
embedded model's) writes every digit as a token of its own, splits a rare name into pieces of two or three
letters ("Farrukhzad" is five tokens) and takes about one token per character of Chinese or Cyrillic. Over
the passages of HotpotQA, 2Wiki, MuSiQue and MultiHop-RAG it averages 3.8 to 4.4 characters a token, but a
paragraph of dates and names goes down to 2.3, and a page of figures to about 1. The estimate below counts
the pieces a tokenizer never merges across (words, digits, punctuation) and costs each on the high side;
on those four datasets it is 1.24 to 1.37 times the embedded model's count, and it stays above it on
figures, URLs, code, symbols, accented names, Cyrillic, Chinese and emoji (tests/test_prompt_fit.py
checks it against the GGUF's own tokenizer, on every prompt of every method and on such texts). Other
tokenizers with a vocabulary as large or larger (OpenAI's, Llama 3's) count fewer tokens for the same text.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from langchain_core.messages import BaseMessage

# The chat template's markers around each message (Qwen2.5's "<|im_start|>user\n ... <|im_end|>\n": 5)
MESSAGE_TOKENS = 8
# A run of letters, of digits or of whitespace, or any one other character
_PIECE = re.compile(r"[^\W\d_]+|\d+|\s+|.", re.DOTALL)


def estimated_tokens(messages: Sequence[BaseMessage]) -> int:
    """The tokens `messages` take as a chat prompt, estimated on the high side (module docstring)."""
    return sum(MESSAGE_TOKENS + text_tokens(str(message.content)) for message in messages)


def text_tokens(text: str) -> int:
    """Tokens of `text`, estimated piece by piece: an ASCII word one token and one more for every five
    letters (a common word is one, a rare name several); a number one a digit and one for the space before
    it; other letters, and symbols outside ASCII, one per two UTF-8 bytes; punctuation one each; a single
    space none (it joins the next word), any other whitespace one."""
    total = 0
    for piece in _PIECE.findall(text):
        if piece.isspace():
            total += piece != " "
        elif piece.isdigit():
            total += len(piece) + 1
        elif piece.isascii():
            total += 1 + len(piece) // 5 if piece.isalpha() else 1
        else:
            total += (len(piece.encode("utf-8")) + 1) // 2
    return total
