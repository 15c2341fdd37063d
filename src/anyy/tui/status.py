"""The status line: the session's role and provider/model (effort), how full its context is and what the
last response used, the session id, its workspace (W1), and, on the right, what the session is doing.

It shows the app's :class:`SessionState` and redraws itself when a field it shows changes. The context
fill is what the model re-read for the last response on the current path (``session.get``
``context_tokens``, then each recorded answer's usage) against the compaction budget; past the budget, the
Gateway summarises older entries. ``↑`` counts the tokens the last response read (its whole prompt, with
what came from the provider's cache in brackets when it says), ``↓`` those it wrote: the Dashboard's words.
The state keeps its place at the right: the rest is cut short (the workspace first) on a narrow terminal."""

from __future__ import annotations

import time

from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.timer import Timer
from textual.widgets import Static

from anyy.client.workspace import shown
from anyy.domain.pricing import format_usd
from anyy.tui.state import SessionState

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
SPIN_EVERY = 0.25  # seconds between two frames of the spinner (the elapsed time changes once a second)


def elapsed(seconds: float) -> str:
    """How long the work has run: 7 s, 1 min 05 s, 1 h 02 min."""
    whole = int(seconds)
    if whole < 60:
        return f"{whole} s"
    if whole < 3600:
        return f"{whole // 60} min {whole % 60:02d} s"
    return f"{whole // 3600} h {whole % 3600 // 60:02d} min"


def tokens(count: int) -> str:
    """A token count for a narrow line: 340, 1.2k, 12.3k, 100k, 1.5M."""
    if count < 1000:
        return str(count)
    value, unit = count / 1000, "k"
    if round(value) >= 1000:
        value, unit = count / 1_000_000, "M"
    text = f"{value:.1f}" if value < 100 else f"{value:.0f}"
    return text.removesuffix(".0") + unit


class StatusLine(Horizontal):
    DEFAULT_CSS = """
    StatusLine { height: 1; background: $panel; color: $text; padding: 0 1; }
    StatusLine > #status-session { width: 1fr; height: 1; text-wrap: nowrap; text-overflow: ellipsis; }
    StatusLine > #status-state { width: auto; height: 1; padding: 0 0 0 2; text-wrap: nowrap; text-style: bold; }
    """

    def __init__(self, state: SessionState) -> None:
        super().__init__(id="status")
        self.session_state = state
        self._left = Static("", id="status-session", markup=False)
        self._right = Static("connecting…", id="status-state", markup=False)
        self.working_since: float | None = None  # monotonic time the running work was first seen
        self._frame = 0
        self._timer: Timer | None = None
        state.watch("session link running retrying waiting context usage spend", lambda _: self._redraw())
        state.watch("running", self._work_changed)

    @property
    def state(self) -> str:
        """What the session is doing (the right of the line): while it works, a spinner and for how long."""
        activity = self.session_state.activity()
        if self.working_since is None or self.session_state.running is None or self.session_state.link is not None:
            return activity
        spent = elapsed(time.monotonic() - self.working_since)
        return f"{SPINNER[self._frame % len(SPINNER)]} {activity.replace('working', f'working {spent}', 1)}"

    def _work_changed(self, running: str | None) -> None:
        """The spinner turns while an execution runs (U3); a new one starts its clock again."""
        if running is None:
            self.working_since = None
            if self._timer is not None:
                self._timer.stop()
                self._timer = None
            return
        self.working_since = time.monotonic()
        if self._timer is None and self.is_attached:
            self._timer = self.set_interval(SPIN_EVERY, self._spin)

    def _spin(self) -> None:
        self._frame += 1
        self._right.update(self.state)

    def compose(self) -> ComposeResult:
        yield self._left
        yield self._right

    def fill(self) -> str:
        """``ctx 12.3k/100k (12%) · ↑1.2k ↓340``, or what of it is known."""
        parts = []
        context, usage = self.session_state.context, self.session_state.usage
        if context.budget > 0:
            if context.tokens is None:
                parts.append(f"ctx ?/{tokens(context.budget)}")
            else:
                percent = round(100 * context.tokens / context.budget)
                parts.append(f"ctx {tokens(context.tokens)}/{tokens(context.budget)} ({percent}%)")
        if usage is not None:
            cached = usage.cache_read
            flow = f"↑{tokens(usage.context_tokens)}" + (f" ({tokens(cached)} cached)" if cached else "")
            parts.append(f"{flow} ↓{tokens(usage.output)}")
        spend = self.session_state.spend
        if spend.calls > spend.unpriced:  # Y3: once something is priced: the session and its last answer
            total = format_usd(spend.total if spend.calls > spend.unpriced else None, unpriced=spend.unpriced)
            last = format_usd(spend.last) if spend.last is not None else "unpriced"
            parts.append(f"{total} (last {last})")
        return " · ".join(parts)

    def describe_session(self) -> str:
        s = self.session_state.session
        if s is None:
            return ""
        model = f"{s.provider}/{s.model}"
        if s.effort:
            model += f" ({s.effort})"
        parts = [f"role {s.role}", model]
        fill = self.fill()
        if fill:
            parts.append(fill)
        parts.append(s.id or "new session")
        parts.append(shown(s.workspace))  # last: the first part cut short on a narrow terminal (W1)
        return " · ".join(parts)

    def describe(self) -> str:
        """The whole line as text: the session part, then the state."""
        session = self.describe_session()
        return f"{session} · {self.state}" if session else self.state

    def _redraw(self) -> None:
        session = self.describe_session()
        self._left.update(session)
        self._right.update(self.state)
