"""The test session's settings: what `settings` (conftest) builds and what a `hopgraph` command a test starts
reads from its environment."""

from __future__ import annotations

# Where the session differs from the defaults, and why. The local model evaluates prompts at 35-150
# tokens/s on CI's two cores, so what every real-model test costs is the passages it reads: chunks of 128
# tokens (default 256) halve each prompt. Whether the defaults' prompts fit is tests/test_prompt_fit.py's
# question, counted with the model's tokenizer and no LLM.
SESSION_SETTINGS = {"local_n_ctx": 4096, "chunk_size": 128, "chunk_overlap": 16}


def session_env() -> dict[str, str]:
    """SESSION_SETTINGS as the HOPGRAPH_* variables a `hopgraph` command reads: a command a test runs sees
    the settings the test's own index was built with."""
    return {f"HOPGRAPH_{name.upper()}": str(value) for name, value in SESSION_SETTINGS.items()}
