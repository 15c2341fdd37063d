"""The status line: session, role, provider/model/effort, and what the session is doing."""

from __future__ import annotations

from typing import Any

from textual.widgets import Static


class StatusLine(Static):
    DEFAULT_CSS = "StatusLine { height: 1; background: $panel; color: $text; padding: 0 1; }"

    def __init__(self) -> None:
        super().__init__("connecting…", id="status", markup=False)
        self.state = "connecting"
        self.session: dict[str, Any] = {}

    def show(self, session: dict[str, Any] | None = None, state: str | None = None) -> None:
        if session is not None:
            self.session = session
        if state is not None:
            self.state = state
        self.update(self.describe())

    def describe(self) -> str:
        s = self.session
        if not s:
            return self.state
        model = f"{s.get('provider', '')}/{s.get('model', '')}"
        if s.get("effort"):
            model += f" ({s['effort']})"
        return f"{s.get('id', '')} · role {s.get('role', '')} · {model} · {self.state}"
