"""The store figures on SQLite and PostgreSQL side by side, measured by the same code through the protocol.

    .venv/bin/python -m bench.store_bench --backend postgresql [--sizes 1000,100000] [--postgres-url URL]

For each backend: durable appends (one entry per call) beside a raw insert of the same row shape on the same
database (SQLite: BEGIN IMMEDIATE + INSERT + COMMIT with the store's pragmas; PostgreSQL: one autocommit
INSERT through psycopg), reopen + context of the big session, fork at the small and the big size, the delete
call and the upkeep that reclaims, a rare-word search, and the bytes per ~400-character message with the
search index. PostgreSQL runs in a database of its own, created for the run and dropped after it.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

import psycopg

from anyy.domain import entry_ids
from anyy.domain.sessions import NewSession
from anyy.storage.postgres import PostgresStore
from anyy.storage.protocol import SessionStore
from anyy.storage.sqlite import SqliteStore
from anyy.storage.sqlite.core import connect as sqlite_connect
from bench import diskstate, workload
from bench.store.appends import RAW_INSERT, RAW_SCHEMA
from bench.store.report import Report, Row, ms, rate, say, timed, verdict_at_most
from bench.store.stores import Workdir
from bench.workload import Workload

APPEND_BATCH = 1_000  # setup of the big session: entries per call (not a measured figure)
RAW_TABLE_PG = (
    RAW_SCHEMA.replace("INTEGER", "BIGINT")
    .replace("REAL", "DOUBLE PRECISION")
    .replace("CREATE TABLE entries", "CREATE TABLE raw_entries")
)


class Backend(Protocol):
    name: str

    def open(self, place: str) -> SessionStore: ...
    def raw_appends(self, rows: Sequence[tuple[Any, ...]], place: str) -> float: ...
    def size_bytes(self, place: str) -> int: ...
    def close(self) -> None: ...


class SqliteBackend:
    name = "sqlite"

    def __init__(self, workdir: Workdir) -> None:
        self.workdir = workdir
        self.dirs: dict[str, Path] = {}

    def _dir(self, place: str) -> Path:
        if place not in self.dirs:
            self.dirs[place] = self.workdir.fresh(f"sqlite-{place}")
        return self.dirs[place]

    def open(self, place: str) -> SessionStore:
        directory = self._dir(place)
        return SqliteStore(directory / "state.db", objects_dir=directory / "objects", profile="bench")

    def raw_appends(self, rows: Sequence[tuple[Any, ...]], place: str) -> float:
        conn = sqlite_connect(self._dir(place) / "raw.db")
        conn.execute(RAW_SCHEMA)
        execute = conn.execute
        start = time.perf_counter()
        for row in rows:
            execute("BEGIN IMMEDIATE")
            execute(RAW_INSERT, row)
            execute("COMMIT")
        seconds = time.perf_counter() - start
        conn.close()
        return seconds

    def size_bytes(self, place: str) -> int:
        return int(diskstate.checkpoint_and_measure(self._dir(place) / "state.db")["total_bytes"])

    def close(self) -> None:
        pass


class PostgresBackend:
    name = "postgresql"

    def __init__(self, server_url: str) -> None:
        self.server_url = server_url
        self.dbname = f"anyy_bench_{os.getpid()}"
        with psycopg.connect(server_url, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{self.dbname}"')
        base, _, _ = server_url.rpartition("/")
        self.url = f"{base}/{self.dbname}"
        with psycopg.connect(self.url, autocommit=True) as conn:
            self.version = str(conn.execute("SHOW server_version").fetchone()[0])  # type: ignore[index]
            self.settings = {
                name: str(conn.execute(f"SHOW {name}").fetchone()[0])  # type: ignore[index]
                for name in ("synchronous_commit", "fsync", "wal_sync_method", "shared_buffers")
            }

    def open(self, place: str) -> SessionStore:
        return PostgresStore(self.url, schema=f"bench_{place}", profile="bench")

    def raw_appends(self, rows: Sequence[tuple[Any, ...]], place: str) -> float:
        with psycopg.connect(self.url, autocommit=True, options=f"-c search_path=raw_{place}") as conn:
            conn.execute(f"CREATE SCHEMA raw_{place}")
            conn.execute(RAW_TABLE_PG)
            insert = RAW_INSERT.replace("entries", "raw_entries").replace("?", "%s")
            execute = conn.execute
            start = time.perf_counter()
            for row in rows:
                execute(insert, row)
            return time.perf_counter() - start

    def size_bytes(self, place: str) -> int:
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute("CHECKPOINT")
            found = conn.execute(
                "SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c "
                "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %s AND c.relkind IN ('r', 'm')",
                (f"bench_{place}",),
            ).fetchone()
        return int(found[0]) if found and found[0] else 0

    def close(self) -> None:
        with psycopg.connect(self.server_url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{self.dbname}" WITH (FORCE)')


def _raw_rows(work: Workload, count: int) -> list[tuple[Any, ...]]:
    now = time.time()
    rows: list[tuple[Any, ...]] = []
    parent: int | None = None
    first = entry_ids.make_entry_id(1, 1)
    for index in range(count):
        entry_id = entry_ids.make_entry_id(1, index + 1)
        kind, text, data = work.raw_row(index)
        rows.append((entry_id, parent, first, kind, text, data, None, now))
        parent = entry_id
    return rows


def _drain(store: SessionStore) -> float:
    start = time.perf_counter()
    while store.maintain().more:
        pass
    return time.perf_counter() - start


def _median(call: Callable[[], Any], times: int) -> float:
    return statistics.median(timed(call)[0] for _ in range(times))


def measure(backend: Backend, work: Workload, small: int, big: int, appends: int) -> dict[str, float]:
    """The six figures for one backend."""
    out: dict[str, float] = {}
    say(f"\n== {backend.name}")
    # 1. durable appends against the raw insert of the same rows, alternating, median of 3.
    store_rates, raw_rates = [], []
    for rep in range(3):
        store = backend.open(f"append{rep}")
        session_id = store.create_session(NewSession(title="append")).id
        entries = work.entries(0, appends)
        start = time.perf_counter()
        for entry in entries:
            store.append_entries(session_id, [entry])
        store_rates.append(rate(appends, time.perf_counter() - start))
        store.close()
        raw_rates.append(rate(appends, backend.raw_appends(_raw_rows(work, appends), f"append{rep}")))
    out["append_per_s"] = statistics.median(store_rates)
    out["raw_per_s"] = statistics.median(raw_rates)
    say(f"  [1] append 1/tx: store {out['append_per_s']:,.0f}/s, raw {out['raw_per_s']:,.0f}/s")

    # The big session (setup in batches), indexed.
    store = backend.open("big")
    big_id = store.create_session(NewSession(title="big")).id
    for start_index in range(0, big, APPEND_BATCH):
        store.append_entries(big_id, work.entries(start_index, min(big, start_index + APPEND_BATCH)))
    out["index_seconds"] = _drain(store)
    small_store = backend.open("small")
    small_id = small_store.create_session(NewSession(title="small")).id
    small_store.append_entries(small_id, work.entries(0, small))

    # 7. bytes per message with the search index.
    stats = workload.message_stats(work, big)
    out["bytes_per_message"] = backend.size_bytes("big") / stats["messages"]
    say(f"  [7] bytes per ~{stats['mean_chars']:.0f}-char message, with the index: {out['bytes_per_message']:,.0f} B")

    # 6. rare-word search over the big session.
    words = [w for w, spots in work.planted.items() if spots and max(spots) < big]
    if words:
        timed(lambda: store.search(words[0]))
        out["search_seconds"] = statistics.median(_median(lambda w=w: store.search(w), 5) for w in words)  # type: ignore[misc]
        say(f"  [6] rare-word search over {big:,}: {ms(out['search_seconds'])} (median over {len(words)} words)")

    # 2. reopen + context of the big session.
    store.close()
    reopen_seconds, store = timed(lambda: backend.open("big"))
    context_seconds, context = timed(lambda: store.context(big_id))
    out["reopen_context_seconds"] = reopen_seconds + context_seconds
    out["context_warm_seconds"] = _median(lambda: store.context(big_id), 3)
    say(
        f"  [2] reopen + context of {big:,} entries: {ms(out['reopen_context_seconds'])} (open {ms(reopen_seconds)}, "
        f"context {ms(context_seconds)}, {len(context.items):,} items); warm context {ms(out['context_warm_seconds'])}"
    )

    # 3. fork at the head of the small and the big session.
    forks: dict[int, float] = {}
    for size, owner, session_id in ((small, small_store, small_id), (big, store, big_id)):
        forks[size] = _median(lambda o=owner, s=session_id: o.fork_session(s), 7)  # type: ignore[misc]
    out["fork_small_seconds"], out["fork_big_seconds"] = forks[small], forks[big]
    say(f"  [3] fork: {ms(forks[small])} at {small:,}, {ms(forks[big])} at {big:,}")

    # 4. delete the big session (the call), then the upkeep that reclaims it (forks keep nothing of their own
    # here: each was forked at the head and never appended to, so the whole path stays reachable from them;
    # the measured reclaim is of a second big session without forks).
    doomed = store.create_session(NewSession(title="doomed")).id
    for start_index in range(0, big, APPEND_BATCH):
        store.append_entries(doomed, work.entries(start_index, min(big, start_index + APPEND_BATCH)))
    _drain(store)
    out["delete_seconds"], _ = timed(lambda: store.delete_session(doomed))
    out["reclaim_seconds"] = _drain(store)
    say(
        f"  [4] delete call on {big:,} entries: {ms(out['delete_seconds'])}; "
        f"reclaimed by upkeep in {ms(out['reclaim_seconds'])}"
    )
    store.close()
    small_store.close()
    return out


def figure_versus(
    report: Report, work: Workload, backends: Sequence[Backend], small: int, big: int, appends: int
) -> None:
    results = {backend.name: measure(backend, work, small, big, appends) for backend in backends}
    report.data["versus"] = results
    for name, got in results.items():
        ratio = got["append_per_s"] / got["raw_per_s"]
        report.add(
            Row(
                f"{name}: append 1/tx ({appends:,})",
                f"{got['append_per_s']:,.0f}/s (raw {got['raw_per_s']:,.0f}/s)",
                ">= 0.70 x raw",
                f"{ratio:.2f} x raw: {'met' if ratio >= 0.7 else 'MISSED'}",
            )
        )
        report.add(
            Row(
                f"{name}: reopen + context {big:,}",
                ms(got["reopen_context_seconds"]),
                "<= 300 ms",
                verdict_at_most(got["reopen_context_seconds"], 0.3),
            )
        )
        flat = got["fork_big_seconds"] / max(got["fork_small_seconds"], 1e-9)
        report.add(
            Row(
                f"{name}: fork at {small:,} / {big:,}",
                f"{ms(got['fork_small_seconds'])} / {ms(got['fork_big_seconds'])} ({flat:.2f}x)",
                "<= 5 ms, flat",
                verdict_at_most(max(got["fork_small_seconds"], got["fork_big_seconds"]), 0.005),
            )
        )
        report.add(
            Row(
                f"{name}: delete call {big:,}",
                f"{ms(got['delete_seconds'])} (reclaim {ms(got['reclaim_seconds'])})",
                "<= 50 ms",
                verdict_at_most(got["delete_seconds"], 0.05),
            )
        )
        if "search_seconds" in got:
            report.add(
                Row(
                    f"{name}: rare-word search {big:,}",
                    ms(got["search_seconds"]),
                    "<= 20 ms",
                    verdict_at_most(got["search_seconds"], 0.02),
                )
            )
        report.add(
            Row(
                f"{name}: bytes per 400-char message",
                f"{got['bytes_per_message']:,.0f} B",
                "<= 1,500 B",
                verdict_at_most(got["bytes_per_message"], 1500),
            )
        )
    if len(results) == 2:
        say("  (both backends measured by this same code, in this run)")
