"""The pending items of the session's queues, shown above the editor: steering first, then follow-ups
(the Gateway's ``session.queue.list`` order). Items left waiting on an idle session (after a stop or a
failure nothing starts by itself) say so, with what to do: ``/continue`` runs them, ``/clear`` removes
them."""

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
        self.session_state = state
        state.watch("queue", self.show)
        state.watch("running waiting", lambda _: self.show(state.queue))

    @property
    def stale(self) -> bool:
        """Items wait while nothing runs nor asks: they start only when told to."""
        return bool(self.items) and self.session_state.running is None and self.session_state.waiting is None

    def show(self, items: list[Submission]) -> None:
        pending = [item for item in items if item.state == "pending"]
        self.items = sorted(pending, key=_order)  # stable: queue order within each kind
        lines = []
        for item in self.items:
            text = " ".join(item.text.split())
            text = text if len(text) <= PREVIEW else text[: PREVIEW - 1] + "…"
            lines.append(f"{LABELS.get(item.kind, 'queued')}: {text}")
        if self.stale:
            lines.insert(0, "Waiting since the response stopped: /continue runs them · /clear removes them")
        if self.items:
            lines.append("Alt+Up: back into the editor")
        self.update("\n".join(lines))
        self.set_class(bool(self.items), "has-items")
