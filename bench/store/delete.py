"""Figure 4: delete a big session and its fork, reclaim with maintain(), over several cycles; file growth."""

from __future__ import annotations

import sqlite3
import statistics
from functools import partial
from pathlib import Path
from typing import Any

from anyy.domain.sessions import NewSession
from bench import diskstate
from bench.store.report import Report, Row, ms, rate, say, timed, verdict_at_most
from bench.store.stores import Workdir, append_batched, maintain_until_done, open_store
from bench.workload import Workload

DELETE_CYCLES = 3


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
