"""Figure 3: fork at the head of a small and a big session."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from anyy.storage.sqlite import SqliteStore
from bench.store.report import Report, Row, ms, say, spread, timed, verdict_at_most


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
