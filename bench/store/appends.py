"""Figure 1: durable appends, one entry per transaction, beside a raw-SQLite reference with the same pragmas."""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from anyy.domain import entry_ids
from anyy.domain.sessions import NewSession
from anyy.storage.sqlite import SqliteStore
from anyy.storage.sqlite.core import connect
from bench.store.report import Report, Row, rate, say, verdict_at_least
from bench.store.stores import Workdir, maintain_until_done, open_store
from bench.workload import Workload

RAW_SCHEMA = (
    "CREATE TABLE entries (id INTEGER PRIMARY KEY, parent INTEGER, run INTEGER NOT NULL, kind INTEGER NOT NULL, "
    "text TEXT, data TEXT, obj TEXT, created_at REAL NOT NULL)"
)
RAW_INSERT = "INSERT INTO entries (id, parent, run, kind, text, data, obj, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"


@dataclass
class AppendRun:
    store_seconds: float
    tail_seconds: float  # the last 10% of the appends
    tail_count: int
    maintain_seconds: float
    maintain_steps: int
    indexed: int


def run_store_appends(work: Workload, count: int, directory: Path) -> tuple[AppendRun, SqliteStore, str]:
    store = open_store(directory)
    session_id = store.create_session(NewSession(title=f"bench {count}")).id
    entries = work.entries(0, count)  # built before the clock starts; encoding them is the store's work
    append = store.append_entries
    tail_start = count - max(count // 10, 1)
    start = time.perf_counter()
    for entry in entries[:tail_start]:
        append(session_id, [entry])
    tail = time.perf_counter()
    for entry in entries[tail_start:]:
        append(session_id, [entry])
    end = time.perf_counter()
    maintain_seconds, steps, indexed, _ = maintain_until_done(store)
    run = AppendRun(end - start, end - tail, count - tail_start, maintain_seconds, steps, indexed)
    return run, store, session_id


def run_raw_appends(work: Workload, count: int, directory: Path) -> float:
    """The reference: a plain entries-shaped table, BEGIN IMMEDIATE + INSERT + COMMIT per row, same pragmas."""
    conn = connect(directory / "raw.db")
    conn.execute(RAW_SCHEMA)
    now = time.time()
    rows: list[tuple[Any, ...]] = []
    parent: int | None = None
    first = entry_ids.make_entry_id(1, 1)
    for index in range(count):
        entry_id = entry_ids.make_entry_id(1, index + 1)
        kind, text, data = work.raw_row(index)
        rows.append((entry_id, parent, first, kind, text, data, None, now))
        parent = entry_id
    execute = conn.execute
    start = time.perf_counter()
    for row in rows:
        execute("BEGIN IMMEDIATE")
        execute(RAW_INSERT, row)
        execute("COMMIT")
    seconds = time.perf_counter() - start
    conn.close()
    return seconds


def figure_appends(
    report: Report, work: Workload, sizes: Sequence[int], workdir: Workdir
) -> dict[int, tuple[SqliteStore, str, Path]]:
    say("\n[1] Durable append, one entry per transaction (store.append_entries with one NewEntry per call)")
    kept: dict[int, tuple[SqliteStore, str, Path]] = {}
    results: dict[str, Any] = {}
    for count in sizes:
        repeats = 7 if count <= 1_000 else 5 if count <= 10_000 else 3
        store_runs: list[AppendRun] = []
        raw_seconds: list[float] = []
        for rep in range(repeats):
            order = ("store", "raw") if rep % 2 == 0 else ("raw", "store")
            for which in order:
                directory = workdir.fresh(f"append-{which}-{count}")
                if which == "raw":
                    raw_seconds.append(run_raw_appends(work, count, directory))
                    workdir.remove(directory)
                    continue
                run, store, session_id = run_store_appends(work, count, directory)
                store_runs.append(run)
                if rep == repeats - 1:
                    if count in kept:
                        kept[count][0].close()
                    kept[count] = (store, session_id, directory)
                else:
                    store.close()
                    workdir.remove(directory)
        store_rate = statistics.median(rate(count, r.store_seconds) for r in store_runs)
        raw_rate = statistics.median(rate(count, s) for s in raw_seconds)
        tail_rate = statistics.median(rate(r.tail_count, r.tail_seconds) for r in store_runs)
        index_rate = statistics.median(rate(count, r.maintain_seconds) for r in store_runs)
        amortised = statistics.median(rate(count, r.store_seconds + r.maintain_seconds) for r in store_runs)
        results[str(count)] = {
            "repeats": repeats,
            "store_entries_per_s": store_rate,
            "raw_entries_per_s": raw_rate,
            "ratio_to_raw": store_rate / raw_rate,
            "store_tail_entries_per_s": tail_rate,
            "maintain_entries_per_s": index_rate,
            "maintain_seconds": statistics.median(r.maintain_seconds for r in store_runs),
            "maintain_steps": store_runs[-1].maintain_steps,
            "indexed": store_runs[-1].indexed,
            "append_with_indexing_entries_per_s": amortised,
            "store_runs": [asdict(r) for r in store_runs],
            "raw_seconds": raw_seconds,
        }
        say(
            f"  {count:>7,} entries ({repeats} run(s), median): store {store_rate:>8,.0f}/s   "
            f"raw {raw_rate:>8,.0f}/s   ratio {store_rate / raw_rate:.2f}   (last 10%: {tail_rate:,.0f}/s)"
        )
        say(
            f"          deferred search indexing, maintain() until done: {index_rate:,.0f} entries/s "
            f"({results[str(count)]['maintain_seconds']:.2f} s, {store_runs[-1].maintain_steps} steps)"
        )
        say(f"          append rate INCLUDING the deferred indexing, amortised: {amortised:,.0f} entries/s")
        report.add(
            Row(
                f"1. append 1/tx, {count:,} entries",
                f"{store_rate:,.0f}/s (raw {raw_rate:,.0f}/s)",
                ">= 0.70 x raw",
                f"{store_rate / raw_rate:.2f} x raw: {'met' if store_rate / raw_rate >= 0.7 else 'MISSED'}",
            )
        )
        report.add(
            Row(
                f"1b. append + indexing amortised, {count:,}",
                f"{amortised:,.0f}/s (index {index_rate:,.0f}/s)",
                "(info)",
                f"{amortised / raw_rate:.2f} x raw",
            )
        )
    small, big = str(min(sizes)), str(max(sizes))
    if small != big:
        keep = results[big]["store_entries_per_s"] / results[small]["store_entries_per_s"]
        tail_keep = results[big]["store_tail_entries_per_s"] / results[small]["store_entries_per_s"]
        results["rate_big_over_small"] = keep
        results["tail_rate_big_over_small"] = tail_keep
        say(
            f"  rate at {int(big):,} / rate at {int(small):,}: {keep:.2f} (whole run), "
            f"{tail_keep:.2f} (last 10% of the big run)"
        )
        report.add(
            Row(
                f"1c. append rate {int(big):,} vs {int(small):,}",
                f"{keep:.2f} (last 10%: {tail_keep:.2f})",
                ">= 0.80",
                verdict_at_least(keep, 0.8),
            )
        )
    report.data["append"] = results
    return kept
