"""Benchmark of money (Y2, Y3): the budget check before a model call, and `usage.report` over many calls.

    .venv/bin/python -m bench.money_bench [--calls 1000000] [--checks 2000] [--postgres]

1. A SQLite store (PostgreSQL with ``--postgres``: this machine's test server) holding ``--calls`` priced
   model calls spread over 200 sessions and 30 days (rows written through the store's own append path in
   large batches, so that the benchmark measures reads, not the filling). Then ``--checks`` budget checks
   as the runtime makes them (``list_budgets`` + ``hold_budget`` over the profile's day and month budgets
   and the session's, then ``release_budget`` once the call is recorded): median and p90 per call
   (targets: <= 0.2 ms on SQLite, <= 1 ms on PostgreSQL).
2. ``usage_report`` by day, session and model over every call: the time of each (target: <= 500 ms over
   1M priced calls).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from anyy.domain.budgets import scopes_for, spend_keys
from anyy.domain.sessions import NewSession
from anyy.storage.protocol import SessionStore

DAY = 86_400.0
NOW = 1_796_000_000.0  # a fixed clock: the figures do not depend on today's date


def _fill(store: SessionStore, calls: int, conn: object, *, postgres: bool) -> list[str]:
    """``calls`` rows in ``model_calls`` for 200 sessions over 30 days (bulk inserted: the append path
    writes one row per call, measured by the runtime benchmarks, not here)."""
    sessions = [store.create_session(NewSession(title=f"s{i}")).id for i in range(200)]
    mark = "%s" if postgres else "?"
    insert = (
        "INSERT INTO model_calls (entry_id, session_id, created_at, day, provider, model, input, output, "
        f"cache_read, cache_write, reasoning, cost) VALUES ({', '.join([mark] * 12)})"
    )
    batch: list[tuple[object, ...]] = []
    for i in range(calls):
        at = NOW - (i % 30) * DAY - (i % 997)
        day = time.strftime("%Y-%m-%d", time.gmtime(at))
        cost = None if i % 50 == 0 else 1000 + i % 7919
        batch.append((i + 1, sessions[i % 200], at, day, "gpt", f"m{i % 5}", 1000, 200, 50, 0, 0, cost))
        if len(batch) == 50_000:
            _write(conn, insert, batch, postgres=postgres)
            batch = []
    if batch:
        _write(conn, insert, batch, postgres=postgres)
    # The running totals the store keeps with each call, for the same rows.
    totals: dict[tuple[str, str], int] = {}
    for i in range(calls):
        cost = None if i % 50 == 0 else 1000 + i % 7919
        for key in spend_keys(sessions[i % 200], None, NOW - (i % 30) * DAY - (i % 997)):
            totals[key] = totals.get(key, 0) + (cost or 0)
    add = f"INSERT INTO budget_spend (scope, period, spent) VALUES ({mark}, {mark}, {mark})"
    _write(conn, add, [(s, p, v) for (s, p), v in totals.items()], postgres=postgres)
    return sessions


def _write(conn: object, insert: str, rows: list[tuple[object, ...]], *, postgres: bool) -> None:
    if postgres:
        with conn.cursor() as cur:  # type: ignore[attr-defined]
            cur.executemany(insert, rows)
        conn.commit()  # type: ignore[attr-defined]
    else:
        conn.execute("BEGIN")  # type: ignore[attr-defined]
        conn.executemany(insert, rows)  # type: ignore[attr-defined]
        conn.execute("COMMIT")  # type: ignore[attr-defined]


def _checks(store: SessionStore, session_id: str, checks: int) -> list[float]:
    session = store.get_session(session_id)
    defaults = {"day": 1e6, "month": 1e7, "session": 1e6}
    took = []
    for i in range(checks):
        start = time.perf_counter()
        scopes = scopes_for(session, defaults, store.list_budgets(), NOW)
        assert store.hold_budget(f"exe_{i}", scopes, 40_960_000) is None
        store.release_budget(f"exe_{i}")
        took.append(time.perf_counter() - start)
    return took


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=1_000_000)
    parser.add_argument("--checks", type=int, default=2000)
    parser.add_argument("--postgres", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        if args.postgres:
            from tests.postgres.server import run_database_url

            from anyy.storage.postgres import PostgresStore

            store: SessionStore = PostgresStore(run_database_url(), schema="bench_money", profile="bench")
            conn = store.conn  # type: ignore[attr-defined]
            conn.execute("DELETE FROM model_calls")
            conn.commit()
        else:
            from anyy.storage.sqlite import SqliteStore

            store = SqliteStore(Path(folder) / "state.db", objects_dir=Path(folder) / "objects", profile="bench")
            conn = store.conn
        store.clock = lambda: NOW  # type: ignore[attr-defined]
        start = time.perf_counter()
        sessions = _fill(store, args.calls, conn, postgres=args.postgres)
        print(f"filled {args.calls:,} calls in {time.perf_counter() - start:.1f} s")
        took = sorted(_checks(store, sessions[0], args.checks))
        median, p90 = statistics.median(took) * 1000, took[int(len(took) * 0.9)] * 1000
        target = 1.0 if args.postgres else 0.2
        backend = "PostgreSQL" if args.postgres else "SQLite"
        print(
            f"budget check ({backend}, day+month+session): median {median:.3f} ms, p90 {p90:.3f} ms "
            f"(target <= {target} ms: {median / target:.2f}x)"
        )
        for by in ("day", "session", "model"):
            start = time.perf_counter()
            lines = store.usage_report(by)
            ms = (time.perf_counter() - start) * 1000
            print(
                f"usage_report by {by} over {args.calls:,} calls: {ms:.0f} ms, {len(lines)} lines "
                f"(target <= 500 ms: {ms / 500:.2f}x)"
            )
        if args.postgres:
            conn.execute("DROP SCHEMA bench_money CASCADE")
            conn.commit()
        store.close()


if __name__ == "__main__":
    main()
