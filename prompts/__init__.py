"""Every prompt the methods use, one module per role.

Layout rule (a performance feature with llama.cpp's KV-prefix reuse and providers' prompt caches): the long,
stable part comes first (system text, then evidence in the order it was gathered), the part that varies
(the question, the instruction) last.
"""
