"""Figure 7: bytes on disk per ~400-character message, and by table."""

from __future__ import annotations

from pathlib import Path

from anyy.storage.sqlite import SqliteStore
from bench import diskstate, workload
from bench.store.report import Report, Row, say, verdict_at_most
from bench.workload import Workload


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
