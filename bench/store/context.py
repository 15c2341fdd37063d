"""Figure 2: reopen + model context of a big session, cold and warm, its SQL/Python breakdown, a raw-SQLite
reference, and the additional compacted session."""

from __future__ import annotations

import statistics
import time
from pathlib import Path
from typing import Any

from anyy.domain.entries import CompactionData, EntryKind, NewEntry
from anyy.domain.sessions import NewSession
from anyy.storage.sqlite import SqliteStore
from anyy.storage.sqlite.core import connect
from bench import diskstate
from bench.store.report import Report, Row, ms, say, spread, timed, verdict_at_most
from bench.store.sql_timing import TimedConnection
from bench.store.stores import Workdir, append_batched, open_store
from bench.workload import Workload

COMPACTION_EVERY = 2_000
COMPACTION_KEEPS = 200  # entries kept before each compaction (its first_kept is ~200 entries back)


def context_breakdown(store: SqliteStore, session_id: str) -> dict[str, float]:
    """Public calls timed one by one (head lookup, ``path_runs``), then ``store.context`` with its time in
    SQLite (statements and fetches) split from its time in Python; the instrumented total is reported too."""
    t0 = time.perf_counter()
    head = store.get_session(session_id).head
    t1 = time.perf_counter()
    runs = store._path_runs(head)
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
