"""A checkpoint row runs no code (issue 40 item 2): LangGraph's default serializer rebuilds any importable
type a row names, so a row planted in a shared checkpoint database (or a copied data folder) ran its
command on `hopgraph history THREAD`. hopgraph's savers revive only LangGraph's built-in safe types, and
refuse a row naming any other in one line."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import ormsgpack
import pytest
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.serde.jsonplus import EXT_CONSTRUCTOR_POS_ARGS, JsonPlusSerializer

from hopgraph.api import UnsafeCheckpointError, checkpointer_for
from hopgraph.settings import Settings
from tests.test_bad_values import hopgraph

THREAD = "planted"


def plant(database: Path, marker: Path) -> None:
    """Overwrite the thread's checkpoint with one whose question is `os.system("touch MARKER")`."""
    with sqlite3.connect(database) as db:
        [(blob,)] = db.execute("SELECT checkpoint FROM checkpoints WHERE thread_id = ?", (THREAD,)).fetchall()
        checkpoint = ormsgpack.unpackb(blob)
        command = ormsgpack.packb(["os", "system", [f"touch {marker}"]])
        checkpoint["channel_values"]["question"] = ormsgpack.Ext(EXT_CONSTRUCTOR_POS_ARGS, command)
        db.execute(
            "UPDATE checkpoints SET checkpoint = ? WHERE thread_id = ?", (ormsgpack.packb(checkpoint), THREAD)
        )


def test_a_planted_checkpoint_row_runs_nothing_and_history_refuses_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("HOPGRAPH_CONFIG", "")
    settings = Settings(data_dir=tmp_path / "data")
    saver = checkpointer_for(settings)
    config = {"configurable": {"thread_id": THREAD, "checkpoint_ns": ""}}
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = {"question": "Where was Marie Curie born?"}
    saver.put(config, checkpoint, {"source": "input", "step": -1}, {})
    database = tmp_path / "data" / "checkpoints.sqlite"
    marker = tmp_path / "ran"
    plant(database, marker)

    # the row is hostile: LangGraph's default serializer runs its command
    default = JsonPlusSerializer()
    with sqlite3.connect(database) as db:
        [(blob,)] = db.execute("SELECT checkpoint FROM checkpoints WHERE thread_id = ?", (THREAD,)).fetchall()
    default.loads_typed(("msgpack", blob))
    assert marker.exists()
    marker.unlink()

    # hopgraph's saver refuses it, and `history` says so in one line, running nothing
    with pytest.raises(UnsafeCheckpointError, match=r"names os\.system, a type hopgraph never writes"):
        saver.get_tuple(config)
    monkeypatch.setenv("HOPGRAPH_DATA_DIR", str(settings.data_dir))
    code, out, err = hopgraph(["history", THREAD], capsys)
    assert code == 2 and out == "" and not marker.exists()
    assert err.splitlines() == [
        "error: A saved checkpoint names os.system, a type hopgraph never writes: it was planted or written "
        "by other software, and is not read. Use another thread id, or another checkpointer."
    ]


def test_a_planted_postgres_row_runs_nothing_either(postgres_url: str, tmp_path: Path) -> None:
    """The Postgres saver keeps each non-scalar channel value in its own row of checkpoint_blobs (a list of
    passages, here), serialized by the same serializer: a value planted there is refused the same way."""
    import psycopg

    saver = checkpointer_for(Settings(data_dir=tmp_path / "data", checkpointer=postgres_url))
    thread = f"{THREAD}-postgres"
    config = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = {
        "evidence": [{"id": "curie#0", "text": "Marie Curie was born in Warsaw."}]
    }
    checkpoint["channel_versions"] = {"evidence": "1"}
    saver.put(config, checkpoint, {"source": "input", "step": -1}, {"evidence": "1"})
    marker = tmp_path / "ran"
    command = ormsgpack.Ext(EXT_CONSTRUCTOR_POS_ARGS, ormsgpack.packb(["os", "system", [f"touch {marker}"]]))
    with psycopg.connect(postgres_url, autocommit=True) as db:
        planted = db.execute(
            "UPDATE checkpoint_blobs SET type = 'msgpack', blob = %s WHERE thread_id = %s",
            (ormsgpack.packb([command]), thread),
        )
        assert planted.rowcount == 1
        [(blob,)] = db.execute("SELECT blob FROM checkpoint_blobs WHERE thread_id = %s", (thread,)).fetchall()
    JsonPlusSerializer().loads_typed(("msgpack", blob))  # LangGraph's default serializer runs the command
    assert marker.exists()
    marker.unlink()
    with pytest.raises(UnsafeCheckpointError, match=r"names os\.system, a type hopgraph never writes"):
        saver.get_tuple(config)
    assert not marker.exists()


@pytest.mark.parametrize(
    "envelope",
    [
        # LangChain's own loader would build this one: an allowed namespace
        {"lc": 1, "type": "constructor", "id": ["langchain_core", "messages", "HumanMessage"], "kwargs": {}},
        {"lc": 2, "type": "constructor", "id": ["os", "system"], "args": ["touch ran"]},
        {"lc": 1, "type": "secret", "id": ["OPENAI_API_KEY"]},
    ],
    ids=["langchain", "os.system", "secret"],
)
def test_a_json_row_with_a_langchain_envelope_is_refused(tmp_path: Path, envelope: dict) -> None:
    """hopgraph writes msgpack rows; a JSON row is read through LangChain's reviver, which builds the objects
    its envelopes name: any envelope there was not written by hopgraph and is refused by its name."""
    saver = checkpointer_for(Settings(data_dir=tmp_path / "data"))
    config = {"configurable": {"thread_id": THREAD, "checkpoint_ns": ""}}
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = {"question": "Where was Marie Curie born?"}
    saver.put(config, checkpoint, {"source": "input", "step": -1}, {})
    checkpoint["channel_values"] = {"question": envelope}
    with sqlite3.connect(tmp_path / "data" / "checkpoints.sqlite") as db:
        db.execute(
            "UPDATE checkpoints SET type = 'json', checkpoint = ? WHERE thread_id = ?",
            (json.dumps(checkpoint).encode(), THREAD),
        )
    name = ".".join(envelope["id"])
    with pytest.raises(UnsafeCheckpointError, match=rf"names {name}, a type hopgraph never writes"):
        saver.get_tuple(config)


def test_a_json_row_of_plain_values_is_read(tmp_path: Path) -> None:
    """The refusal is of envelopes only: a JSON row holding plain values (as older savers wrote) reads."""
    saver = checkpointer_for(Settings(data_dir=tmp_path / "data"))
    config = {"configurable": {"thread_id": THREAD, "checkpoint_ns": ""}}
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = {"question": "Where was Marie Curie born?", "hops": [1, 2]}
    saver.put(config, checkpoint, {"source": "input", "step": -1}, {})
    with sqlite3.connect(tmp_path / "data" / "checkpoints.sqlite") as db:
        db.execute(
            "UPDATE checkpoints SET type = 'json', checkpoint = ? WHERE thread_id = ?",
            (json.dumps(checkpoint).encode(), THREAD),
        )
    read = saver.get_tuple(config)
    assert read is not None and read.checkpoint["channel_values"]["hops"] == [1, 2]
