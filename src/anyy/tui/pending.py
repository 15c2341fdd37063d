"""The pending items of the session's queues, shown above the editor: steering first, then follow-ups
(the Gateway's ``session.queue.list`` order)."""

from __future__ import annotations

from typing import Any

from textual.widgets import Static

from anyy.tui.state import SessionState

LABELS = {"steering": "steering", "follow_up": "follow-up", "prompt": "queued"}
PREVIEW = 100


def _order(item: dict[str, Any]) -> int:
    return 0 if item.get("kind") == "steering" else 1


class PendingQueue(Static):
    DEFAULT_CSS = """
    PendingQueue { height: auto; max-height: 8; color: $text-muted; padding: 0 1; display: none; }
    PendingQueue.has-items { display: block; }
    """

    def __init__(self, state: SessionState) -> None:
        super().__init__("", id="pending", markup=False)
        self.items: list[dict[str, Any]] = []
        state.watch("queue", self.show)

    def show(self, items: list[dict[str, Any]]) -> None:
        pending = [item for item in items if item.get("state") == "pending"]
        self.items = sorted(pending, key=_order)  # stable: queue order within each kind
        lines = []
        for item in self.items:
            text = " ".join(str(item.get("text", "")).split())
            text = text if len(text) <= PREVIEW else text[: PREVIEW - 1] + "…"
            lines.append(f"{LABELS.get(str(item.get('kind')), 'queued')}: {text}")
        if self.items:
            lines.append("Alt+Up: back into the editor")
        self.update("\n".join(lines))
        self.set_class(bool(self.items), "has-items")
