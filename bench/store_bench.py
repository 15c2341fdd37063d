"""Benchmark of the SQLite SessionStore against the targets of the storage issue.

    .venv/bin/python -m bench.store_bench [--sizes 1000,10000,100000] [--out bench/out/store.json]
    .venv/bin/python -m bench.store_bench --backend postgresql [--sizes 1000,100000] [--postgres-url URL]

``--backend postgresql`` measures the main figures on SQLite and PostgreSQL side by side, with the same
code for both (``bench/store/versus.py``); without it, the detailed SQLite figures below.

Every figure is printed beside its target and the ratio; appends also beside a raw-SQLite reference run in
the same process with the same pragmas (``anyy.storage.sqlite.core.PRAGMAS`` through its ``connect``).
Nothing is warmed on purpose: "cold" figures close the store, fsync and evict ``state.db`` and its WAL
from the OS page cache (``posix_fadvise(DONTNEED)``, checked with ``mincore``) and open a new store;
"warm" figures are medians of repeated calls. Timings use ``time.perf_counter``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sqlite3
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path

from anyy.storage.sqlite.core import PRAGMAS
from bench import diskstate, workload
from bench.store.appends import figure_appends
from bench.store.context import figure_context
from bench.store.delete import figure_delete
from bench.store.disk_bytes import figure_bytes
from bench.store.fork import figure_fork
from bench.store.listing import ENTRIES_PER_LISTED_SESSION, SESSIONS_FOR_LIST, figure_list
from bench.store.report import LoadMeter, Report, print_table, say, timed, wait_until_quiet
from bench.store.search import figure_search
from bench.store.stores import Workdir, source_state


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.store_bench", description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1000,10000,100000", help="session sizes for the append figure")
    parser.add_argument("--out", type=Path, default=Path("bench/out/store.json"))
    parser.add_argument("--workdir", type=Path, default=None, help="where the stores go (default: system temp)")
    parser.add_argument("--keep", action="store_true", help="keep the stores' files")
    parser.add_argument(
        "--wait-quiet", type=float, default=120, help="wait up to this many seconds for other CPU load to stop"
    )
    parser.add_argument("--backend", choices=("sqlite", "postgresql"), default="sqlite")
    parser.add_argument("--postgres-url", default=None, help="a server to create the bench database on")
    parser.add_argument("--appends", type=int, default=1000, help="--backend postgresql: appends per run")
    args = parser.parse_args(argv)
    sizes = sorted({int(s) for s in args.sizes.split(",")})
    if args.backend == "postgresql":
        return run_versus(args, sizes)
    big_count = max(sizes)

    report = Report()
    quiet = wait_until_quiet(args.wait_quiet)
    meter = LoadMeter()
    started = time.perf_counter()
    report.data["environment"] = {
        "python": sys.version.split()[0],
        "sqlite": sqlite3.sqlite_version,
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "pragmas": list(PRAGMAS),
        "maintain_budget": 2000,
        "date": time.strftime("%Y-%m-%d %H:%M:%S"),
        "load_average_at_start": os.getloadavg(),
        "read_ahead_kb": None,
        "other_cpu_load_before": quiet,
        **source_state(),
    }
    say(
        f"anyy SQLite store benchmark: Python {sys.version.split()[0]}, SQLite {sqlite3.sqlite_version}, "
        f"{os.cpu_count()} CPUs"
    )
    env = report.data["environment"]
    say(
        f"code: commit {env['commit']}, src modified: {env['src_modified']}, storage+domain digest "
        f"{env['src_digest']}; load average at start {env['load_average_at_start'][0]:.2f}"
    )
    say(f"pragmas (store and raw reference): {'; '.join(p.removeprefix('PRAGMA ') for p in PRAGMAS)}")

    setup, work = timed(lambda: workload.build(max(big_count, SESSIONS_FOR_LIST * ENTRIES_PER_LISTED_SESSION)))
    stats = workload.message_stats(work, big_count)
    say(
        f"data: {len(work.texts):,} texts in {setup:.1f} s; messages of mean {stats['mean_chars']:.0f} chars "
        f"({stats['min_chars']:.0f}-{stats['max_chars']:.0f}); 10% tool entries; rare words {list(work.planted)}"
    )
    report.data["workload"] = {"seed": workload.SEED, "vocabulary": workload.VOCABULARY_SIZE, **stats}

    workdir = Workdir(args.workdir, args.keep)
    report.data["environment"]["read_ahead_kb"] = diskstate.read_ahead_kb(workdir.root)
    say(
        f"stores in {workdir.root} (block device read-ahead {report.data['environment']['read_ahead_kb']} KB: "
        "what a cold page fault reads)"
    )
    try:
        kept = figure_appends(report, work, sizes, workdir)
        small = kept[min(sizes)]
        big = kept[big_count]
        figure_bytes(report, work, big, big_count)
        store = figure_search(report, work, big, big_count)
        big = (store, big[1], big[2])
        store = figure_context(report, work, big, big_count, workdir)
        big = (store, big[1], big[2])
        if min(sizes) == big_count:  # one size: the small store is the big one, reopened by the figures above
            small = big
        figure_fork(report, small, big, sizes)
        for store, _, _ in kept.values():
            store.close()
        big[0].close()
        figure_delete(report, work, big_count, workdir)
        figure_list(report, work, workdir)
    finally:
        workdir.close()

    elapsed = time.perf_counter() - started
    other = meter.other_load()
    report.data["elapsed_seconds"] = elapsed
    report.data["environment"]["other_cpu_load_during_run"] = other
    print_table(report.rows)
    say(
        f"\ntotal run time {elapsed:.0f} s; other processes used {other:.1%} of the CPUs during the run"
        f" ({quiet:.1%} just before it)"
        + ("  WARNING: not a quiet machine, figures are disturbed" if other > 0.05 else "")
    )
    report.data["table"] = [asdict(r) for r in report.rows]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report.data, indent=2, default=str) + "\n", encoding="utf-8")
    say(f"results written to {args.out}")
    return 0


def run_versus(args: argparse.Namespace, sizes: Sequence[int]) -> int:
    from bench.store.versus import PostgresBackend, SqliteBackend, figure_versus

    url = args.postgres_url or os.environ.get("ANYY_TEST_POSTGRES_URL")
    url_file = Path(__file__).resolve().parents[1] / ".cache" / "postgres-url"
    if not url:
        url = url_file.read_text().strip() if url_file.exists() else "postgresql://postgres@127.0.0.1:5432/test"
    report = Report()
    started = time.perf_counter()
    setup, work = timed(lambda: workload.build(max(sizes)))
    say(f"data: {len(work.texts):,} texts in {setup:.1f} s; load average at start {os.getloadavg()[0]:.2f}")
    workdir = Workdir(args.workdir, args.keep)
    postgres = PostgresBackend(url)
    say(
        f"PostgreSQL {postgres.version} ({', '.join(f'{k}={v}' for k, v in postgres.settings.items())}); "
        f"SQLite {sqlite3.sqlite_version}"
    )
    try:
        figure_versus(report, work, [SqliteBackend(workdir), postgres], min(sizes), max(sizes), args.appends)
    finally:
        postgres.close()
        workdir.close()
    report.data["environment"] = {"postgres": postgres.version, **postgres.settings, **source_state()}
    print_table(report.rows)
    say(f"\ntotal run time {time.perf_counter() - started:.0f} s; load average now {os.getloadavg()[0]:.2f}")
    out = args.out.with_name("store-versus.json") if args.out == Path("bench/out/store.json") else args.out
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report.data, indent=2, default=str) + "\n", encoding="utf-8")
    say(f"results written to {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
