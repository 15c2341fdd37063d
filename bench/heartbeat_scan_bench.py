"""What a Gateway's heartbeat costs the database when it keeps many sessions (issue 26, P9's first item).

    .venv/bin/python -m bench.heartbeat_scan_bench [--sessions 100000] [--rounds 30]

A fresh database on this machine's PostgreSQL gets ``--sessions`` idle sessions (one made by the store,
the rest copied by SQL); then each heartbeat scan runs ``--rounds`` times in a transaction of its own, as
the heartbeat runs it: the dead-owner check (sessions whose owner's lease ran out, or running work nobody
owns) and the wake-up claim (sessions with an item nobody started). Median and p90 per scan, in ms, with
the plan's top line. Target: the dead-owner check <= 5 ms at 100k sessions.
"""

from __future__ import annotations

import argparse
import statistics
import time

import psycopg
from tests.postgres.server import create_database, require_postgres

from anyy.domain.sessions import NewSession
from anyy.storage.postgres import PostgresStore, leases


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sessions", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args()
    require_postgres()
    database = create_database("anyy_beat")
    store = PostgresStore(database)
    first = store.create_session(NewSession())
    with psycopg.connect(database, autocommit=True) as conn:
        columns = [
            row[0]
            for row in conn.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_name = 'sessions' "
                "AND table_schema = current_schema() ORDER BY ordinal_position"
            )
        ]
        copied = ", ".join(c for c in columns if c not in ("num", "id"))
        conn.execute(
            f"INSERT INTO sessions (id, {copied}) SELECT 'ses_b' || g, {copied} FROM sessions, "
            "generate_series(2, %s) g WHERE id = %s",
            (args.sessions, first.id),
        )
        conn.execute("ANALYZE")
    store.join_service("gw-bench", lease=3.0, address="", recovery_note="bench")
    params = {"me": "gw-bench", "limit": leases.ORPHAN_BATCH}
    for name, sql in (("dead-owner check", leases._ORPHANS), ("wake-up claim", leases._WOKEN)):
        times = []
        for _ in range(args.rounds):
            started = time.perf_counter()
            with store.conn.transaction():
                store.conn.execute(sql, params).fetchall()
            times.append((time.perf_counter() - started) * 1000)
        times.sort()
        plan = store.conn.execute("EXPLAIN " + sql, params).fetchall()
        scans = [row[0].strip() for row in plan if "Scan" in row[0]]
        print(
            f"{name}: {args.sessions} sessions, median {statistics.median(times):.2f} ms, "
            f"p90 {times[int(len(times) * 0.9)]:.2f} ms; scans: {'; '.join(s.split('  (')[0] for s in scans)}"
        )
    store.close()


if __name__ == "__main__":
    main()
