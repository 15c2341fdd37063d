"""The TUI's session state (issue 11, item 6): widgets watch its fields and are called on a change only."""

from __future__ import annotations

import pytest

from anyy.api.sessions import WaitingQuestion
from anyy.tui.state import SessionState


def test_watchers_are_called_with_each_new_value_and_only_on_a_change() -> None:
    state = SessionState()
    seen: list[object] = []
    state.watch("running retrying", seen.append)
    state.running = "exe_1"
    state.running = "exe_1"  # the same: nobody is called
    state.retrying = "exe_1"
    state.forget_work()
    assert seen == ["exe_1", "exe_1", None, None]
    assert not state.busy


def test_what_the_status_line_says_follows_the_fields() -> None:
    state = SessionState()
    assert state.activity() == "connecting"
    state.link = None
    assert state.activity() == "idle"
    state.waiting = WaitingQuestion(execution_id="exe_1", entry_id=3, question="why?")
    assert state.activity() == "waiting for your answer"
    state.running = "exe_2"
    assert state.activity() == "working · Ctrl+C stops"
    state.retrying = "exe_2"
    assert state.activity() == "retry wait · Esc cancels the wait"


def test_watching_a_field_that_does_not_exist_is_refused() -> None:
    with pytest.raises(AttributeError, match="no watched field 'runing'"):
        SessionState().watch("runing", print)
