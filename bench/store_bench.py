"""Benchmark of the SQLite SessionStore against the targets of the storage issue.

    .venv/bin/python -m bench.store_bench [--sizes 1000,10000,100000] [--out bench/out/store.json]

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
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from anyy.domain import entry_ids
from anyy.domain.entries import CompactionData, EntryKind, NewEntry
from anyy.domain.sessions import NewSession
from anyy.storage.sqlite import SqliteStore
from anyy.storage.sqlite.core import PRAGMAS, connect
from bench import diskstate, workload
from bench.workload import Workload

RAW_SCHEMA = (
    "CREATE TABLE entries (id INTEGER PRIMARY KEY, parent INTEGER, run INTEGER NOT NULL, kind INTEGER NOT NULL, "
    "text TEXT, data TEXT, obj TEXT, created_at REAL NOT NULL)"
)
RAW_INSERT = "INSERT INTO entries (id, parent, run, kind, text, data, obj, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
COMPACTION_EVERY = 2_000
COMPACTION_KEEPS = 200  # entries kept before each compaction (its first_kept is ~200 entries back)
SESSIONS_FOR_LIST = 1_000
ENTRIES_PER_LISTED_SESSION = 10
DELETE_CYCLES = 3


# -- reporting -------------------------------------------------------------------------------------------
@dataclass
class Row:
    figure: str
    ours: str
    target: str
    verdict: str
    peer: str = "-"


@dataclass
class Report:
    rows: list[Row] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=dict)

    def add(self, row: Row) -> None:
        self.rows.append(row)
        print(f"  => {row.figure}: {row.ours}   target {row.target}   {row.verdict}   peer {row.peer}")


def say(text: str) -> None:
    print(text, flush=True)


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.3g} ms" if seconds < 10 else f"{seconds:.1f} s"


def rate(count: int, seconds: float) -> float:
    return count / seconds if seconds > 0 else float("inf")


def verdict_at_most(value: float, target: float) -> str:
    ratio = value / target
    return f"{ratio:.2f}x of limit: {'met' if ratio <= 1 else 'MISSED'}"


def verdict_at_least(value: float, target: float) -> str:
    ratio = value / target
    return f"{ratio:.2f}x of target: {'met' if ratio >= 1 else 'MISSED'}"


def timed(call: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    result = call()
    return time.perf_counter() - start, result


def spread(samples: Sequence[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "median": statistics.median(ordered),
        "min": ordered[0],
        "p90": ordered[min(len(ordered) - 1, int(len(ordered) * 0.9))],
        "max": ordered[-1],
        "n": len(ordered),
    }


# -- other load on the machine -----------------------------------------------------------------------------
class LoadMeter:
    """CPU time spent by everything but this process, as a fraction of the machine, since ``start``."""

    def __init__(self) -> None:
        self.tick = os.sysconf("SC_CLK_TCK")
        self.cpus = os.cpu_count() or 1
        self.start()

    @staticmethod
    def _busy_jiffies() -> int:
        with open("/proc/stat", encoding="ascii") as handle:
            fields = [int(v) for v in handle.readline().split()[1:]]
        idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
        return sum(fields[:8]) - idle

    def start(self) -> None:
        self.t0 = time.perf_counter()
        self.busy0 = self._busy_jiffies()
        times = os.times()
        self.own0 = times.user + times.system

    def other_load(self) -> float:
        elapsed = time.perf_counter() - self.t0
        busy = (self._busy_jiffies() - self.busy0) / self.tick
        times = os.times()
        own = times.user + times.system - self.own0
        return max(0.0, (busy - own) / (elapsed * self.cpus)) if elapsed > 0 else 0.0


def wait_until_quiet(limit_seconds: float, threshold: float = 0.05) -> float:
    """Sample the other load for 2 s at a time until it is under ``threshold`` or the time is up."""
    meter = LoadMeter()
    deadline = time.monotonic() + limit_seconds
    while True:
        meter.start()
        time.sleep(2)
        load = meter.other_load()
        if load < threshold or time.monotonic() >= deadline:
            return load
        say(f"  the machine is busy ({load:.0%} of its CPUs used by other processes); waiting...")


# -- stores ----------------------------------------------------------------------------------------------
class Workdir:
    """Fresh directories for the stores of one run, removed at the end unless kept."""

    def __init__(self, root: Path | None, keep: bool) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="anyy-bench-", dir=root))
        self.keep = keep
        self.counter = 0

    def fresh(self, name: str) -> Path:
        self.counter += 1
        path = self.root / f"{self.counter:02d}-{name}"
        path.mkdir()
        return path

    def remove(self, path: Path) -> None:
        if not self.keep:
            shutil.rmtree(path, ignore_errors=True)

    def close(self) -> None:
        if not self.keep:
            shutil.rmtree(self.root, ignore_errors=True)


def open_store(directory: Path) -> SqliteStore:
    return SqliteStore(directory / "state.db", objects_dir=directory / "objects", profile="bench")


def maintain_until_done(store: SqliteStore) -> tuple[float, int, int, int]:
    """(seconds, steps, indexed, collected) of ``maintain()`` with its default budget until ``more`` is False."""
    steps = indexed = collected = 0
    start = time.perf_counter()
    while True:
        step = store.maintain()
        steps += 1
        indexed += step.indexed
        collected += step.collected
        if not step.more:
            break
    return time.perf_counter() - start, steps, indexed, collected


def append_batched(store: SqliteStore, session_id: str, entries: Sequence[NewEntry], batch: int = 1_000) -> list[int]:
    """Setup only (not a measured figure): append in batches, return the ids."""
    ids: list[int] = []
    for start in range(0, len(entries), batch):
        ids.extend(e.id for e in store.append_entries(session_id, entries[start : start + batch]))
    return ids


# -- figure 1: durable appends ---------------------------------------------------------------------------
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


# -- figure 2: context -----------------------------------------------------------------------------------
class TimedConnection:
    """Stands in for the store's connection to split a call into time in SQLite (statements and their
    fetches) and time in Python. It only delegates, so it follows the store's code as that changes."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.sql_seconds = 0.0
        self.statements = 0
        self.rows = 0

    def execute(self, sql: str, params: Sequence[Any] = ()) -> TimedCursor:
        start = time.perf_counter()
        cursor = self.conn.execute(sql, params)
        self.sql_seconds += time.perf_counter() - start
        self.statements += 1
        return TimedCursor(self, cursor)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.conn, name)


class TimedCursor:
    def __init__(self, owner: TimedConnection, cursor: sqlite3.Cursor) -> None:
        self.owner = owner
        self.cursor = cursor

    def _timed(self, call: Callable[[], Any]) -> Any:
        start = time.perf_counter()
        result = call()
        self.owner.sql_seconds += time.perf_counter() - start
        return result

    def fetchone(self) -> Any:
        row = self._timed(self.cursor.fetchone)
        self.owner.rows += row is not None
        return row

    def fetchall(self) -> list[Any]:
        rows: list[Any] = self._timed(self.cursor.fetchall)
        self.owner.rows += len(rows)
        return rows

    def __iter__(self) -> Iterator[Any]:
        return self

    def __next__(self) -> Any:
        start = time.perf_counter()
        try:
            row = next(self.cursor)
        finally:
            self.owner.sql_seconds += time.perf_counter() - start
        self.owner.rows += 1
        return row

    def __getattr__(self, name: str) -> Any:
        return getattr(self.cursor, name)


def context_breakdown(store: SqliteStore, session_id: str) -> dict[str, float]:
    """Public calls timed one by one (head lookup, ``path_runs``), then ``store.context`` with its time in
    SQLite (statements and fetches) split from its time in Python; the instrumented total is reported too."""
    t0 = time.perf_counter()
    head = store.get_session(session_id).head
    t1 = time.perf_counter()
    runs = store.path_runs(head)
    t2 = time.perf_counter()
    real = store.conn
    timed_conn = TimedConnection(real)
    store.conn = timed_conn  # type: ignore[assignment]
    try:
        t3 = time.perf_counter()
        built = store.context(session_id)
        t4 = time.perf_counter()
    finally:
        store.conn = real
    return {
        "get_session": t1 - t0,
        "path_runs": t2 - t1,
        "context_instrumented": t4 - t3,
        "context_sql": timed_conn.sql_seconds,
        "context_python": (t4 - t3) - timed_conn.sql_seconds,
        "statements": timed_conn.statements,
        "rows_fetched": timed_conn.rows,
        "runs": len(runs),
        "items": len(built.items),
    }


def cold_context(store: SqliteStore, directory: Path, session_id: str) -> tuple[SqliteStore, dict[str, Any]]:
    """Close, evict, then time a new store's open and its first ``context``."""
    store.close()
    eviction = diskstate.evict(directory / "state.db")
    open_seconds, store = timed(lambda: open_store(directory))
    context_seconds, built = timed(lambda: store.context(session_id))
    return store, {
        "open": open_seconds,
        "context": context_seconds,
        "total": open_seconds + context_seconds,
        "items": len(built.items),
        "eviction": eviction,
        "evicted": diskstate.eviction_worked(eviction),
    }


def cold_breakdown(store: SqliteStore, directory: Path, session_id: str) -> tuple[SqliteStore, dict[str, Any]]:
    store.close()
    eviction = diskstate.evict(directory / "state.db")
    open_seconds, store = timed(lambda: open_store(directory))
    pieces = context_breakdown(store, session_id)
    return store, {"open": open_seconds, **pieces, "evicted": diskstate.eviction_worked(eviction)}


def describe(pieces: dict[str, Any]) -> str:
    text = ", ".join(f"{k} {ms(v)}" for k, v in pieces.items() if isinstance(v, float))
    return text + f" ({pieces['statements']} statements, {pieces['rows_fetched']:,} rows, {pieces['runs']} run(s))"


def measure_context(
    store: SqliteStore, directory: Path, session_id: str, label: str, cold_repeats: int = 3, warm_repeats: int = 7
) -> tuple[SqliteStore, dict[str, Any]]:
    colds = []
    for _ in range(cold_repeats):
        store, cold = cold_context(store, directory, session_id)
        colds.append(cold)
    store, pieces_cold = cold_breakdown(store, directory, session_id)
    warm = [timed(lambda: store.context(session_id))[0] for _ in range(warm_repeats)]
    warm_pieces = [context_breakdown(store, session_id) for _ in range(5)]
    pieces_median = {key: statistics.median(p[key] for p in warm_pieces) for key in warm_pieces[0]}
    total = statistics.median(c["total"] for c in colds)
    result = {
        "cold_runs": colds,
        "cold_total": total,
        "cold_open": statistics.median(c["open"] for c in colds),
        "cold_context": statistics.median(c["context"] for c in colds),
        "evicted_every_time": all(c["evicted"] for c in colds) and pieces_cold["evicted"],
        "cold_breakdown": pieces_cold,
        "warm": spread(warm),
        "warm_breakdown": pieces_median,
        "items": colds[0]["items"],
    }
    say(f"  {label}: {result['items']:,} context items")
    say(
        f"    page-cache eviction: {'worked' if result['evicted_every_time'] else 'DID NOT fully work'} "
        f"{colds[0]['eviction']}"
    )
    say(
        f"    cold (median of {cold_repeats}): open {ms(result['cold_open'])} + context "
        f"{ms(result['cold_context'])} = {ms(total)}"
    )
    say(f"    cold breakdown (one more cold run): {describe(pieces_cold)}")
    say(f"    warm context (median of {warm_repeats}): {ms(result['warm']['median'])}")
    say(f"    warm breakdown (median of 5): {describe(pieces_median)}")
    return store, result


RAW_CONTEXT_SQL = (
    "SELECT id, kind, text, CASE WHEN kind IN (3, 4) THEN data END FROM entries WHERE kind IN (1, 2, 3, 4, 8) "
    "ORDER BY id"
)


def raw_context_reference(directory: Path, repeats: int = 5) -> dict[str, float]:
    """The floor: the same rows (the store holds this one session only) fetched by one plain SELECT through
    a fresh connection with the same pragmas; cold (after eviction, connect included) and warm."""
    db = directory / "state.db"
    diskstate.evict(db)
    start = time.perf_counter()
    conn = connect(db)
    rows = conn.execute(RAW_CONTEXT_SQL).fetchall()
    cold = time.perf_counter() - start
    warm = [timed(lambda: conn.execute(RAW_CONTEXT_SQL).fetchall())[0] for _ in range(repeats)]
    conn.close()
    return {"cold": cold, "warm": statistics.median(warm), "rows": len(rows)}


def build_compacted(work: Workload, count: int, directory: Path) -> tuple[SqliteStore, str, int]:
    """A session of ``count`` messages with a compaction entry after every ~2,000 (setup, batched)."""
    store = open_store(directory)
    session_id = store.create_session(NewSession(title="compacted")).id
    ids: list[int] = []
    compactions = 0
    for start in range(0, count, COMPACTION_EVERY):
        ids.extend(append_batched(store, session_id, work.entries(start, min(start + COMPACTION_EVERY, count))))
        if start + COMPACTION_EVERY >= count:
            break
        keep_from = len(ids) - COMPACTION_KEEPS
        while work.kind_at(keep_from) != EntryKind.USER:
            keep_from -= 1
        summary = " ".join(work.texts[start : start + 5])  # a ~2,000-character summary
        store.append_entries(
            session_id,
            [
                NewEntry(
                    kind=EntryKind.COMPACTION,
                    text=summary,
                    data=CompactionData(first_kept=ids[keep_from], tokens_before=150_000),
                )
            ],
        )
        compactions += 1
    return store, session_id, compactions


def figure_context(
    report: Report, work: Workload, big: tuple[SqliteStore, str, Path], count: int, workdir: Workdir
) -> SqliteStore:
    say(f"\n[2] Reopen + model context of a {count:,}-entry session (close, evict, open, store.context)")
    store, session_id, directory = big
    store, plain = measure_context(store, directory, session_id, f"{count:,} entries, no compaction")
    store.close()
    raw = raw_context_reference(directory)
    store = open_store(directory)
    plain["raw_reference"] = raw
    say(
        f"    raw-SQLite reference, the same {raw['rows']:,} rows by one plain SELECT ... fetchall: "
        f"cold {ms(raw['cold'])} (connect included), warm {ms(raw['warm'])}"
    )
    report.add(
        Row(
            f"2. reopen + context, {count:,} (cold)",
            f"{ms(plain['cold_total'])} (raw fetch {ms(raw['cold'])})",
            "<= 100 ms",
            verdict_at_most(plain["cold_total"], 0.1),
            "1,040 ms / 1,546 ms",
        )
    )
    report.add(
        Row(
            f"2w. context, {count:,} (warm, median)",
            f"{ms(plain['warm']['median'])} (raw fetch {ms(raw['warm'])})",
            "<= 100 ms",
            verdict_at_most(plain["warm"]["median"], 0.1),
        )
    )
    directory_c = workdir.fresh("compacted")
    setup, (cstore, csession, compactions) = timed(lambda: build_compacted(work, count, directory_c))
    say(f"  (additional figure) building a {count:,}-message session with {compactions} compactions took {setup:.1f} s")
    cstore, compacted = measure_context(
        cstore, directory_c, csession, f"{count:,} messages + a compaction every {COMPACTION_EVERY:,} (ADDITIONAL)"
    )
    compacted["compactions"] = compactions
    cstore.close()
    workdir.remove(directory_c)
    report.add(
        Row(
            f"2c. ADDITIONAL: compacted {count:,} (cold)",
            f"{ms(compacted['cold_total'])} ({compacted['items']:,} items)",
            "<= 100 ms",
            verdict_at_most(compacted["cold_total"], 0.1),
        )
    )
    report.data["context"] = {"plain": plain, "compacted_additional": compacted}
    return store


# -- figure 3: fork --------------------------------------------------------------------------------------
def fork_times(store: SqliteStore, session_id: str, repeats: int = 50) -> list[float]:
    return [timed(lambda: store.fork_session(session_id))[0] for _ in range(repeats)]


def figure_fork(
    report: Report, small: tuple[SqliteStore, str, Path], big: tuple[SqliteStore, str, Path], sizes: Sequence[int]
) -> None:
    say("\n[3] Fork at the head (store.fork_session, 50 forks each, median)")
    small_times = fork_times(small[0], small[1])
    big_times = fork_times(big[0], big[1])
    s, b = spread(small_times), spread(big_times)
    say(
        f"  {min(sizes):,}: median {ms(s['median'])}, p90 {ms(s['p90'])}, first {ms(small_times[0])}   "
        f"{max(sizes):,}: median {ms(b['median'])}, p90 {ms(b['p90'])}, first {ms(big_times[0])}   "
        f"ratio big/small {b['median'] / s['median']:.2f}"
    )
    report.add(
        Row(
            f"3. fork at head, {max(sizes):,}",
            f"{ms(b['median'])} (first {ms(big_times[0])})",
            "<= 2 ms",
            verdict_at_most(b["median"], 0.002),
            "334 s / 1.35 s",
        )
    )
    report.add(
        Row(
            f"3b. fork {max(sizes):,} vs {min(sizes):,}",
            f"{b['median'] / s['median']:.2f}x",
            "<= 2x",
            verdict_at_most(b["median"] / s["median"], 2.0),
        )
    )
    report.data["fork"] = {"small": s, "big": b, "small_first": small_times[0], "big_first": big_times[0]}


# -- figure 4: delete and reclaim ------------------------------------------------------------------------
def table_counts(db_path: Path) -> dict[str, int]:
    conn = sqlite3.connect(db_path)
    try:
        return {
            table: conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
            for table in ("entries", "sessions", "cross_links", "entries_fts_docsize", "gc_queue")
        }
    finally:
        conn.close()


def figure_delete(report: Report, work: Workload, count: int, workdir: Workdir) -> None:
    say(f"\n[4] Delete a {count:,}-entry session; reclaim with maintain(); {DELETE_CYCLES} fork-and-delete cycles")
    directory = workdir.fresh("delete")
    db = directory / "state.db"
    store = open_store(directory)
    entries = work.entries(0, count)
    cycles: list[dict[str, Any]] = []
    for cycle in range(1, DELETE_CYCLES + 1):
        session_id = store.create_session(NewSession(title=f"cycle {cycle}")).id
        build_seconds, _ = timed(partial(append_batched, store, session_id, entries))
        index_seconds = maintain_until_done(store)[0]
        built = diskstate.checkpoint_and_measure(db)
        fork_seconds, fork = timed(partial(store.fork_session, session_id))
        delete_original, _ = timed(partial(store.delete_session, session_id))
        delete_fork, _ = timed(partial(store.delete_session, fork.id))
        reclaim_seconds, steps, _, collected = maintain_until_done(store)
        after = diskstate.checkpoint_and_measure(db)
        counts = table_counts(db)
        tables = diskstate.space_by_table(db)
        fts_bytes = sum(size for name, size in tables.items() if name.startswith("entries_fts"))
        cycles.append(
            {
                "cycle": cycle,
                "build_seconds_batched_setup": build_seconds,
                "index_seconds": index_seconds,
                "after_build": built,
                "fork_seconds": fork_seconds,
                "delete_original_seconds": delete_original,
                "delete_fork_seconds": delete_fork,
                "reclaim_seconds": reclaim_seconds,
                "reclaim_steps": steps,
                "collected": collected,
                "after_reclaim": after,
                "rows_left": counts,
                "fts_bytes_after_reclaim": fts_bytes,
                "by_table_after_reclaim": tables,
            }
        )
        say(
            f"  cycle {cycle}: delete_session {ms(delete_original)} (original, fork alive), {ms(delete_fork)} (fork); "
            f"maintain reclaim {reclaim_seconds:.2f} s ({steps} steps, {collected:,} entries, "
            f"{rate(collected, reclaim_seconds):,.0f}/s)"
        )
        say(
            f"           after build: db {built['db_bytes']:,} B, wal {built['wal_bytes']:,} B, "
            f"freelist {built['freelist_pages']:,} pages | after reclaim: db {after['db_bytes']:,} B, "
            f"wal {after['wal_bytes']:,} B, freelist {after['freelist_pages']:,} pages "
            f"({after['freelist_bytes']:,} B) | rows left {counts}; FTS tables still hold {fts_bytes:,} B"
        )
    store.close()
    workdir.remove(directory)
    first = cycles[0]
    grew_build = max(c["after_build"]["total_bytes"] for c in cycles) - first["after_build"]["total_bytes"]
    grew_reclaim = max(c["after_reclaim"]["total_bytes"] for c in cycles) - first["after_reclaim"]["total_bytes"]
    worst_delete = max(max(c["delete_original_seconds"], c["delete_fork_seconds"]) for c in cycles)
    reclaim = statistics.median(c["reclaim_seconds"] for c in cycles)
    fully = all(
        c["rows_left"]["entries"] == 0
        and c["rows_left"]["sessions"] == 0
        and c["rows_left"]["entries_fts_docsize"] == 0
        for c in cycles
    )
    say(
        f"  growth over cycles: {grew_build:+,} B after build, {grew_reclaim:+,} B after reclaim; "
        f"fully reclaimed: {fully}"
    )
    report.add(
        Row(f"4. delete_session call, {count:,}", ms(worst_delete), "<= 50 ms", verdict_at_most(worst_delete, 0.05))
    )
    report.add(
        Row(
            f"4b. maintain() reclaim, {count:,}",
            f"{reclaim:.2f} s ({rate(count, reclaim):,.0f} entries/s)",
            "(report)",
            "fully reclaimed" if fully else "ROWS LEFT",
        )
    )
    report.add(
        Row(
            f"4c. file growth over {DELETE_CYCLES} cycles",
            f"{grew_reclaim / 1e6:+,.1f} MB ({grew_reclaim / first['after_reclaim']['total_bytes']:+.0%})",
            "no growth",
            "met" if grew_build <= 0 and grew_reclaim <= 0 else "MISSED",
        )
    )
    report.data["delete"] = {"cycles": cycles, "growth_after_build": grew_build, "growth_after_reclaim": grew_reclaim}


# -- figure 5: session list pages ------------------------------------------------------------------------
def figure_list(report: Report, work: Workload, workdir: Workdir) -> None:
    say(f"\n[5] A page of 50 sessions among {SESSIONS_FOR_LIST:,} of {ENTRIES_PER_LISTED_SESSION} entries each")
    directory = workdir.fresh("list")
    store = open_store(directory)
    for index in range(SESSIONS_FOR_LIST):
        session_id = store.create_session(NewSession(title=f"session {index}")).id
        start = index * ENTRIES_PER_LISTED_SESSION % max(len(work.texts) - ENTRIES_PER_LISTED_SESSION, 1)
        start -= start % 2  # begin on a user message
        store.append_entries(session_id, work.entries(start, start + ENTRIES_PER_LISTED_SESSION))
    maintain_until_done(store)
    store.close()
    eviction = diskstate.evict(directory / "state.db")
    store = open_store(directory)
    cold_first, page = timed(lambda: store.list_sessions(limit=50))
    cursors: list[str | None] = [None]
    while page.next_cursor is not None:
        cursors.append(page.next_cursor)
        page = store.list_sessions(limit=50, cursor=page.next_cursor)
    middle_cursor = cursors[len(cursors) // 2]
    first = [timed(lambda: store.list_sessions(limit=50))[0] for _ in range(200)]
    middle = [timed(lambda: store.list_sessions(limit=50, cursor=middle_cursor))[0] for _ in range(200)]
    f, m = spread(first), spread(middle)
    say(
        f"  pages: {len(cursors)}; first page cold (after evict {diskstate.eviction_worked(eviction)}) "
        f"{ms(cold_first)}; warm median: first {ms(f['median'])} (p90 {ms(f['p90'])}), "
        f"page {len(cursors) // 2 + 1} {ms(m['median'])} (p90 {ms(m['p90'])})"
    )
    store.close()
    workdir.remove(directory)
    worst = max(f["median"], m["median"])
    report.add(
        Row(
            f"5. list page of 50 / {SESSIONS_FOR_LIST:,}",
            f"first {ms(f['median'])}, middle {ms(m['median'])} (cold {ms(cold_first)})",
            "<= 2 ms",
            verdict_at_most(worst, 0.002),
        )
    )
    report.data["list"] = {"pages": len(cursors), "cold_first": cold_first, "first": f, "middle": m}


# -- figure 6: search ------------------------------------------------------------------------------------
def figure_search(report: Report, work: Workload, big: tuple[SqliteStore, str, Path], count: int) -> SqliteStore:
    say(f"\n[6] Full-text search for a rare word over {count:,} entries (store.search)")
    store, _session_id, directory = big
    words = [w for w, spots in work.planted.items() if spots and max(spots) < count]

    def expected(word: str) -> int:
        return sum(1 for spot in work.planted[word] if spot < count)

    # The first search after the appends' maintain(), in the same process (the index was just written).
    first_seconds, hits = timed(lambda: store.search(words[0]))
    samples = []
    correct = len(hits) == expected(words[0])
    for word in words:
        for _ in range(10):
            seconds, found = timed(partial(store.search, word))
            samples.append(seconds)
        correct = correct and len(found) == expected(word)
    s = spread(samples)
    # The first search of a new process, the file evicted from the page cache.
    store.close()
    eviction = diskstate.evict(directory / "state.db")
    store = open_store(directory)
    cold_seconds, cold_hits = timed(lambda: store.search(words[-1]))
    correct = correct and len(cold_hits) == expected(words[-1])
    say(
        f"  first search after maintain: {ms(first_seconds)} ({len(hits)} hits, expected {expected(words[0])}); "
        f"median of {len(samples)} over {len(words)} rare words {ms(s['median'])} (p90 {ms(s['p90'])}, "
        f"max {ms(s['max'])}); hit counts right: {correct}"
    )
    say(f"  first search of a new process, cache evicted ({diskstate.eviction_worked(eviction)}): {ms(cold_seconds)}")
    common = work.vocabulary[20]
    containing = work.messages_with(common, count)
    common_samples = [timed(partial(store.search, common))[0] for _ in range(5)]
    c = spread(common_samples)
    say(
        f"  (info) a common word, {common!r} in {containing:,} messages, limit 20: median {ms(c['median'])} "
        f"(first {ms(common_samples[0])})"
    )
    report.add(
        Row(
            f"6. search rare word, {count:,}",
            f"{ms(s['median'])} (first after maintain {ms(first_seconds)})",
            "<= 20 ms",
            verdict_at_most(max(s["median"], first_seconds), 0.02),
            "627 ms",
        )
    )
    report.add(
        Row(
            "6a. same, new process, evicted cache",
            ms(cold_seconds),
            "<= 20 ms",
            verdict_at_most(cold_seconds, 0.02),
        )
    )
    report.add(
        Row(
            f"6b. (info) common word, {containing:,} hits",
            ms(c["median"]),
            "(info)",
            verdict_at_most(c["median"], 0.02),
        )
    )
    report.data["search"] = {
        "first_after_maintain": first_seconds,
        "samples": s,
        "first_new_process_evicted": cold_seconds,
        "eviction": eviction,
        "hits_right": correct,
        "words": words,
        "common_word": {"word": common, "messages": containing, "samples": c},
    }
    return store


# -- figure 7: bytes on disk -----------------------------------------------------------------------------
def figure_bytes(report: Report, work: Workload, big: tuple[SqliteStore, str, Path], count: int) -> None:
    say(f"\n[7] Bytes on disk per ~400-character message ({count:,} entries, after maintain + checkpoint)")
    _store, _session_id, directory = big
    db = directory / "state.db"
    sizes = diskstate.checkpoint_and_measure(db)
    tables = diskstate.space_by_table(db)
    stats = workload.message_stats(work, count)
    messages = int(stats["messages"])
    per_message = sizes["total_bytes"] / messages
    per_entry = sizes["total_bytes"] / count
    text_bytes = sum(len(work.texts[i].encode()) for i in range(count) if work.is_message(i))
    say(
        f"  state.db {sizes['db_bytes']:,} B + wal {sizes['wal_bytes']:,} B, freelist {sizes['freelist_pages']} pages; "
        f"{messages:,} messages of mean {stats['mean_chars']:.0f} chars (+{count - messages:,} tool calls)"
    )
    say(f"  per message {per_message:,.0f} B, per entry {per_entry:,.0f} B, raw text {text_bytes / messages:,.0f} B")
    shown = {name: size for name, size in tables.items() if size >= sizes["total_bytes"] * 0.005}
    other = sum(tables.values()) - sum(shown.values())
    say(
        "  by table (dbstat): "
        + ", ".join(f"{name} {size / messages:,.0f} B/msg" for name, size in shown.items())
        + f", the {len(tables) - len(shown)} other tables and indexes {other / messages:,.1f} B/msg"
    )
    report.add(
        Row(
            "7. bytes per 400-char message",
            f"{per_message:,.0f} B (per entry {per_entry:,.0f})",
            "<= 1,200 B",
            verdict_at_most(per_message, 1200),
            "2,781 B",
        )
    )
    report.data["bytes"] = {
        **sizes,
        "messages": messages,
        "entries": count,
        "per_message": per_message,
        "per_entry": per_entry,
        "text_bytes_per_message": text_bytes / messages,
        "by_table": tables,
        "message_stats": stats,
    }


def source_state() -> dict[str, str]:
    """Which code was measured: the commit, and a digest of the storage and domain sources as they are."""
    import hashlib
    import subprocess

    root = Path(__file__).resolve().parent.parent
    digest = hashlib.sha256()
    for path in sorted((root / "src" / "anyy").glob("**/*")):
        if path.is_file() and path.suffix in (".py", ".sql") and path.parts[-2] in ("domain", "sqlite", "migrations"):
            digest.update(path.read_bytes())
    try:
        commit = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--", "src"], capture_output=True, text=True, check=False
        ).stdout.strip()
    except OSError:
        commit, dirty = "?", ""
    return {"commit": commit, "src_modified": "yes" if dirty else "no", "src_digest": digest.hexdigest()[:12]}


# -- main ------------------------------------------------------------------------------------------------
def print_table(rows: Sequence[Row]) -> None:
    headers = ("figure", "ours", "target", "ratio/verdict", "peer")
    cells = [headers, *((r.figure, r.ours, r.target, r.verdict, r.peer) for r in rows)]
    widths = [max(len(c[i]) for c in cells) for i in range(len(headers))]
    line = "-+-".join("-" * w for w in widths)
    print()
    print(" | ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)))
    print(line)
    for cell in cells[1:]:
        print(" | ".join(c.ljust(w) for c, w in zip(cell, widths, strict=True)))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.store_bench", description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1000,10000,100000", help="session sizes for the append figure")
    parser.add_argument("--out", type=Path, default=Path("bench/out/store.json"))
    parser.add_argument("--workdir", type=Path, default=None, help="where the stores go (default: system temp)")
    parser.add_argument("--keep", action="store_true", help="keep the stores' files")
    parser.add_argument(
        "--wait-quiet", type=float, default=120, help="wait up to this many seconds for other CPU load to stop"
    )
    args = parser.parse_args(argv)
    sizes = sorted({int(s) for s in args.sizes.split(",")})
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


if __name__ == "__main__":
    raise SystemExit(main())
