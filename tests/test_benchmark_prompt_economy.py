"""The prompt-economy benchmark's floor of any prefix cache (benchmarks/prompt_economy.py)."""

from __future__ import annotations

from benchmarks.prompt_economy import prefix_cache_floor


def test_each_prompt_is_evaluated_past_its_longest_prefix_shared_with_any_earlier_prompt() -> None:
    assert prefix_cache_floor([[1, 2, 3, 4]]) == 4  # nothing cached yet
    assert prefix_cache_floor([[1, 2, 3], [1, 2, 9, 9]]) == 3 + 2
    # the earlier prompt it shares most with need not be the last one: a cache keeping every prompt
    assert prefix_cache_floor([[5, 6, 7, 8], [9, 9], [5, 6, 7, 1]]) == 4 + 2 + 1
    # a prompt wholly cached still has its last token evaluated, as llama.cpp does for the logits
    assert prefix_cache_floor([[1, 2, 3], [1, 2, 3], [1, 2]]) == 3 + 1 + 1
    assert prefix_cache_floor([]) == 0
