"""The status line: the session's role and provider/model (effort), how full its context is and what the
last response used, the session id, and, on the right, what the session is doing.

It shows the app's :class:`SessionState` and redraws itself when a field it shows changes. The context
fill is what the model re-read for the last response on the current path (``session.get``
``context_tokens``, then each recorded answer's usage) against the compaction budget; past the budget, the
Gateway summarises older entries. ``↑`` counts the tokens the last response read (its whole prompt, with
what came from the provider's cache in brackets when it says), ``↓`` those it wrote: the Dashboard's words.
The state keeps its place at the right: the rest is cut short (the id first) on a narrow terminal."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import Static

from anyy.tui.state import SessionState


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
        state.watch("session link running retrying waiting context usage", lambda _: self._redraw())

    @property
    def state(self) -> str:
        """What the session is doing (the right of the line)."""
        return self.session_state.activity()

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
        parts.append(s.id)  # last: the first part cut short on a narrow terminal
        return " · ".join(parts)

    def describe(self) -> str:
        """The whole line as text: the session part, then the state."""
        session = self.describe_session()
        return f"{session} · {self.state}" if session else self.state

    def _redraw(self) -> None:
        session = self.describe_session()
        self._left.update(session)
        self._right.update(self.state)
