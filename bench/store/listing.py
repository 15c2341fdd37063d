"""Figure 5: a page of the session list among many small sessions, cold and warm."""

from __future__ import annotations

from anyy.domain.sessions import NewSession
from bench import diskstate
from bench.store.report import Report, Row, ms, say, spread, timed, verdict_at_most
from bench.store.stores import Workdir, maintain_until_done, open_store
from bench.workload import Workload

SESSIONS_FOR_LIST = 1_000
ENTRIES_PER_LISTED_SESSION = 10


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
