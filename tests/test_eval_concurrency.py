"""`hopgraph eval --concurrency N` against a faulty OpenAI-compatible provider: every question ends as
exactly one result line, whatever the provider did to its requests.

The provider is a stub on 127.0.0.1 (tests/openai_stub.py) that answers with the gold answer after
injecting, per question, a 429 with Retry-After, a 500, a connection dropped mid-request, or a 500 on
every attempt. The client side is the real one (ChatOpenAI over the OpenAI SDK, which retries each call
`max_retries` times with backoff and honours Retry-After), and so are the runner, the results file and
the checkpoints; only the answers are canned.
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

import openai._base_client
import pytest
import tiny_hotpot
from openai_stub import Fault, OpenAIStub, serve

from evals.runner import latest_results, read_records, results_path
from hopgraph import Settings
from hopgraph.evaluate import evaluate
from tests.turns import Arrivals

pytestmark = [pytest.mark.server, pytest.mark.timeout(600)]

QUESTIONS = [question for question, _, _ in tiny_hotpot.QUESTIONS]
# question -> the faults its first requests meet; "always" fails more often than the retries allow
FAULTS: dict[str, list[Fault]] = {
    QUESTIONS[0]: ["429"],
    QUESTIONS[1]: ["500"],
    QUESTIONS[2]: ["drop"],
    QUESTIONS[3]: ["500", "500", "500"],
}
MAX_RETRIES = 2
CONCURRENCY = 3


class FirstTogether(Arrivals):
    """Holds the provider's first `callers` requests in flight until all of them have arrived, then lets
    every request through at once: the questions are shown to run together by their requests meeting,
    not by a delay long enough for them to overlap. With fewer in flight at once the wait fails (after a
    minute, a failure's guard only) and `max_in_flight` says how many came."""

    def __call__(self, prompt: str) -> None:
        if self.came() <= self.callers:
            assert self.all_came.wait(timeout=60), "fewer requests were in flight together than asked"


class RetryWaits:
    """The `time` module as the OpenAI SDK's retry loop sees it: each wait before a retry is recorded (and
    still waited), so a test reads how long the client chose to wait instead of timing it."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)
        time.sleep(seconds)

    def __getattr__(self, name: str) -> object:
        return getattr(time, name)


def test_provider_faults_under_concurrency_never_lose_or_duplicate_a_result_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    retries = RetryWaits()
    monkeypatch.setattr(openai._base_client, "time", retries)
    healed = False  # the persistent fault ends between the two runs

    def fault(prompt: str, earlier: int) -> Fault | None:
        planned = FAULTS.get(tiny_hotpot.question_in(prompt) or "", [])
        if healed and tiny_hotpot.question_in(prompt) == QUESTIONS[3]:
            return None
        return planned[earlier] if earlier < len(planned) else None

    stub = OpenAIStub(reply=tiny_hotpot.answer, fault=fault, hold=FirstTogether(CONCURRENCY))
    data = tiny_hotpot.write(tmp_path / "tiny")
    out_dir = tmp_path / "run"
    with serve(stub):
        settings = Settings(
            data_dir=tmp_path / "data",
            llm="openai:stub",
            base_url=stub.base_url,
            max_retries=MAX_RETRIES,
            timeout=30,
        )

        def run() -> None:
            evaluate("hotpotqa", data, ["naive"], out_dir=out_dir, settings=settings, concurrency=CONCURRENCY)

        run()
        first = [r for r in read_records(results_path(out_dir)) if r["type"] == "result"]
        by_question = {r["question"]: r for r in first}
        assert len(first) == len(QUESTIONS) and set(by_question) == set(QUESTIONS)  # one line each
        for question, record in by_question.items():
            if question == QUESTIONS[3]:
                assert record["error"].startswith("ProviderError") and "500" in record["error"]
            else:
                assert record["error"] is None, record["error"]
                assert record["metrics"]["em"] == 1.0 and record["llm"]["calls"] == 1  # retried below us

        outcomes = {
            q: [r.outcome for r in stub.requests if tiny_hotpot.question_in(r.prompt) == q] for q in QUESTIONS
        }
        assert outcomes[QUESTIONS[0]] == ["429", "ok"]
        assert outcomes[QUESTIONS[1]] == ["500", "ok"]
        assert outcomes[QUESTIONS[2]] == ["drop", "ok"]
        assert outcomes[QUESTIONS[3]] == ["500"] * (1 + MAX_RETRIES)
        assert outcomes[QUESTIONS[4]] == outcomes[QUESTIONS[5]] == ["ok"]
        # one wait per retry (429, 500, drop, and the persistent 500's two), the 429's the 1 s its
        # Retry-After asked for; the others the SDK's own backoff, which starts at 0.5 s less up to a quarter
        assert len(retries.waits) == 1 + 1 + 1 + MAX_RETRIES
        assert retries.waits.count(1.0) == 1 and sum(w <= 0.5 for w in retries.waits) == 3
        assert stub.max_in_flight == CONCURRENCY  # the first three met in flight; never more at once

        healed = True
        requests_before = len(stub.requests)
        run()  # resumes: only the failed question runs again
        assert [tiny_hotpot.question_in(r.prompt) for r in stub.requests[requests_before:]] == [QUESTIONS[3]]

    records = read_records(results_path(out_dir))
    results = [r for r in records if r["type"] == "result"]
    assert len(results) == len(QUESTIONS) + 1  # the failure's line stays, its success is appended once
    successes = Counter(r["question"] for r in results if r["error"] is None)
    assert successes == Counter(QUESTIONS)
    latest = latest_results(records)
    assert len(latest) == len(QUESTIONS) and all(r["error"] is None for r in latest.values())
    assert all(r["metrics"]["em"] == 1.0 for r in latest.values())
