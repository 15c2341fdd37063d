"""The countdown of a retry wait (SPEC R3, S4), shown above the editor while the execution waits to try
the model again: "retrying in 3 s (attempt 1 of 3) · Esc cancels the wait".

The seconds are counted from the ``retry_wait`` event's ``delay`` with a Textual timer (the number is
worked out from a deadline at each tick, so a late tick never makes it drift). It shows the session
state's ``retry``: gone as soon as the execution leaves the wait (running again, stopped, failed)."""

from __future__ import annotations

import math
import time

from textual.timer import Timer
from textual.widgets import Static

from anyy.tui.state import RetryWait, SessionState

TICK = 0.25  # seconds between looks at the clock: the shown number changes once a second


class RetryCountdown(Static):
    DEFAULT_CSS = """
    RetryCountdown { height: auto; color: $warning; padding: 0 1; display: none; }
    RetryCountdown.waiting { display: block; }
    """

    def __init__(self, state: SessionState) -> None:
        super().__init__("", id="retry", markup=False)
        self.execution: str | None = None
        self.attempt = 0
        self.of = 0
        self.error = ""
        self.seconds_left: int | None = None
        self._deadline = 0.0
        self._timer: Timer | None = None
        state.watch("retry", self.show)

    def show(self, wait: RetryWait | None) -> None:
        self.stop()
        if wait is not None:
            self.start(wait)

    def start(self, wait: RetryWait) -> None:
        self.execution, self.attempt, self.of, self.error = wait.execution_id, wait.attempt, wait.of, wait.error
        self._deadline = time.monotonic() + max(wait.seconds_left, 0.0)
        self._timer = self.set_interval(TICK, self._tick)
        self.add_class("waiting")
        self._tick()

    def stop(self) -> None:
        """Hide it: the execution left the wait (or another session is shown)."""
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        if self.execution is None:
            return
        self.execution, self.seconds_left = None, None
        self.remove_class("waiting")
        self.update("")

    def describe(self) -> str:
        if self.execution is None:
            return ""
        when = "now" if not self.seconds_left else f"in {self.seconds_left} s"
        error = f"{self.error} — " if self.error else ""
        return f"{error}retrying {when} (attempt {self.attempt} of {self.of}) · Esc cancels the wait"

    def _tick(self) -> None:
        left = max(0, math.ceil(self._deadline - time.monotonic()))
        if left == self.seconds_left:
            return
        self.seconds_left = left
        self.update(self.describe())
        if left == 0 and self._timer is not None:
            self._timer.stop()
            self._timer = None
