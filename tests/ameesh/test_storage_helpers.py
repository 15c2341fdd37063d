"""The registry's storage (issue 11, item 7): commons.sqlite's numbered migrations and transactions, and a
registry of the first schema opened by this version (its agents kept, typed, their state still theirs)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from ameesh import paths
from ameesh.registry import MIGRATIONS, Registry
from commons import sqlite
from tests.ameesh.conftest import Ameesh


def test_h11_migrations_apply_once_in_order_and_a_failed_transaction_leaves_nothing(tmp_path: Path) -> None:
    steps = ((2, "ALTER TABLE t ADD COLUMN b TEXT"), (1, "CREATE TABLE t (a TEXT)"))
    conn = sqlite.connect(tmp_path / "db" / "x.db", migrations=steps)
    assert sqlite.schema_versions(conn) == [1, 2]
    assert sqlite.migrate(conn, steps) == []  # nothing left to apply
    assert conn.execute("PRAGMA journal_mode").fetchone() == {"journal_mode": "wal"}
    with sqlite.transaction(conn):
        conn.execute("INSERT INTO t VALUES ('kept', NULL)")

    def failing() -> None:
        with sqlite.transaction(conn):
            conn.execute("INSERT INTO t VALUES ('outer', NULL)")
            with sqlite.transaction(conn):  # joins the outer one: rolled back with it
                conn.execute("INSERT INTO t VALUES ('inner', NULL)")
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        failing()
    assert [row["a"] for row in conn.execute("SELECT a FROM t")] == ["kept"]
    conn.close()


def test_h2_a_registry_of_the_first_schema_is_upgraded_and_its_agents_keep_their_sessions(ameesh: Ameesh) -> None:
    path = paths.registry_path(ameesh.root)
    old = sqlite.connect(path, migrations=MIGRATIONS[:1])
    old.execute(
        "INSERT INTO agents (name, harness, role, workdir, created_at) VALUES ('bob', 'fake', 'build', ?, ?)",
        (str(ameesh.work), time.time()),
    )
    old.close()
    paths.write_session_file(ameesh.root, "bob", "sess-before-upgrade", None)  # no agent.json then
    with Registry(path) as reg:
        assert reg.schema_versions() == [number for number, _ in MIGRATIONS]
        agent = reg.agent("bob")
        assert (agent.uid, agent.failures, agent.circuit_open) == (None, 0, 0)
    ameesh("send", "bob", "hello")
    ameesh("run")
    assert [i["text"] for i in ameesh.json("thread", "bob") if i["kind"] == "recovered"] == [
        "session sess-before-upgrade recovered from the state file"
    ]
