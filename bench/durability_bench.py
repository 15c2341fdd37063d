"""D10: what ``[store] durability = "power"`` costs, in acknowledged appends per second.

    .venv/bin/python -m bench.durability_bench [--appends 2000] [--postgres-url URL] [--workdir DIR]

Each append is one ``append_entries`` call of one small message: one transaction, committed (and, with
"power", synced to the disk) before it returns, as the Gateway's writes are. SQLite runs on the work
folder's disk (default: the system temp folder; a tmpfs there would make syncs free: the bench says
which file system it measured). PostgreSQL, when a server is named (``--postgres-url`` or
``ANYY_TEST_POSTGRES_URL``), in a database created for the run and dropped after it.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from anyy.domain.durability import DURABILITIES, Durability
from anyy.domain.entries import EntryKind, NewEntry
from anyy.domain.sessions import NewSession
from anyy.storage.protocol import SessionStore
from anyy.storage.sqlite import SqliteStore

Opener = Callable[[Durability, str], SessionStore]


def appends_per_second(store: SessionStore, count: int) -> float:
    session = store.create_session(NewSession(title="durability bench"))
    entry = [NewEntry(kind=EntryKind.USER, text="a short message, as a prompt is " * 3)]
    for _ in range(20):  # the first appends create the pages; not what is measured
        store.append_entries(session.id, entry)
    start = time.perf_counter()
    for _ in range(count):
        store.append_entries(session.id, entry)
    return count / (time.perf_counter() - start)


def measure(name: str, opener: Opener, count: int, rounds: int) -> dict[Durability, float]:
    """The median of ``rounds`` runs per setting, the settings interleaved (a busy neighbour hits both)."""
    runs: dict[Durability, list[float]] = {d: [] for d in DURABILITIES}
    for round_ in range(rounds):
        for durability in DURABILITIES:
            store = opener(durability, f"{name}_{durability}_{round_}")
            try:
                runs[durability].append(appends_per_second(store, count))
            finally:
                store.close()
    return {d: sorted(v)[len(v) // 2] for d, v in runs.items()}


def _file_system(path: Path) -> str:
    done = subprocess.run(["df", "--output=fstype", str(path)], capture_output=True, text=True, check=False)
    return done.stdout.split()[-1] if done.returncode == 0 and done.stdout.split() else "unknown"


def _postgres(server_url: str) -> tuple[Opener, Callable[[], None]]:
    import psycopg

    from anyy.storage.postgres import PostgresStore

    dbname = f"anyy_bench_durability_{os.getpid()}"
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{dbname}"')
        default = conn.execute("SHOW synchronous_commit").fetchone()
    print(f"postgresql: server default synchronous_commit = {default[0] if default else '?'}")
    url = f"{server_url.rpartition('/')[0]}/{dbname}"

    def open_pg(durability: Durability, place: str) -> SessionStore:
        return PostgresStore(url, schema=f"s_{place}", profile="bench", durability=durability)

    def drop() -> None:
        with psycopg.connect(server_url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{dbname}" WITH (FORCE)')

    return open_pg, drop


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.durability_bench", description=__doc__.split("\n")[0])
    parser.add_argument("--appends", type=int, default=2000, help="appends per run")
    parser.add_argument("--rounds", type=int, default=3, help="runs per setting (the median is printed)")
    parser.add_argument("--workdir", type=Path, default=None, help="where the SQLite stores go")
    parser.add_argument("--postgres-url", default=os.environ.get("ANYY_TEST_POSTGRES_URL"))
    args = parser.parse_args(argv)
    results: dict[str, dict[Durability, float]] = {}
    with tempfile.TemporaryDirectory(prefix="anyy-durability-", dir=args.workdir) as root:
        print(f"sqlite: {root} on {_file_system(Path(root))}")

        def open_sqlite(durability: Durability, place: str) -> SessionStore:
            return SqliteStore(Path(root) / f"{place}.db", profile="bench", durability=durability)

        results["sqlite"] = measure("sqlite", open_sqlite, args.appends, args.rounds)
    if args.postgres_url:
        open_pg, drop = _postgres(args.postgres_url)
        try:
            results["postgresql"] = measure("pg", open_pg, args.appends, args.rounds)
        finally:
            drop()
    print(f"{'backend':<12}{'process (appends/s)':>22}{'power (appends/s)':>20}{'power / process':>18}")
    for backend, figures in results.items():
        ratio = figures["power"] / figures["process"]
        print(f"{backend:<12}{figures['process']:>22,.0f}{figures['power']:>20,.0f}{ratio:>18.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
