"""The pending items of the session's queues, shown above the editor: steering first, then follow-ups
(the Gateway's ``session.queue.list`` order)."""

from __future__ import annotations

from textual.widgets import Static

from anyy.api.sessions import Submission
from anyy.tui.state import SessionState

LABELS = {"steering": "steering", "follow_up": "follow-up", "prompt": "queued"}
PREVIEW = 100


def _order(item: Submission) -> int:
    return 0 if item.kind == "steering" else 1


class PendingQueue(Static):
    DEFAULT_CSS = """
    PendingQueue { height: auto; max-height: 8; color: $text-muted; padding: 0 1; display: none; }
    PendingQueue.has-items { display: block; }
    """

    def __init__(self, state: SessionState) -> None:
        super().__init__("", id="pending", markup=False)
        self.items: list[Submission] = []
        state.watch("queue", self.show)

    def show(self, items: list[Submission]) -> None:
        pending = [item for item in items if item.state == "pending"]
        self.items = sorted(pending, key=_order)  # stable: queue order within each kind
        lines = []
        for item in self.items:
            text = " ".join(item.text.split())
            text = text if len(text) <= PREVIEW else text[: PREVIEW - 1] + "…"
            lines.append(f"{LABELS.get(item.kind, 'queued')}: {text}")
        if self.items:
            lines.append("Alt+Up: back into the editor")
        self.update("\n".join(lines))
        self.set_class(bool(self.items), "has-items")
