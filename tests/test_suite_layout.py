"""The suite's own layout under `-n 2 --dist loadgroup` (scripts/test.sh, tests/conftest.py)."""

from __future__ import annotations

import os
import threading

import pytest

from tests.conftest import NICE_BESIDE_THE_LLM, WORKER_NICENESS


@pytest.mark.skipif("PYTEST_XDIST_WORKER" not in os.environ, reason="the niceness is set under xdist only")
def test_a_test_beside_the_real_model_runs_below_it_with_every_thread_it_starts() -> None:
    started: list[int] = []
    thread = threading.Thread(target=lambda: started.append(os.getpriority(os.PRIO_PROCESS, 0)))
    thread.start()
    thread.join()
    threads = [os.getpriority(os.PRIO_PROCESS, int(tid)) for tid in os.listdir("/proc/self/task")]
    assert set(threads) == set(started) == {WORKER_NICENESS + NICE_BESIDE_THE_LLM}
