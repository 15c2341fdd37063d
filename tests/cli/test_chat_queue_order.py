"""``anyy chat`` streams (or, with ``--json``, reports) the execution that took its own message, even when
another client's prompt was queued ahead of it and so runs first after the send (C3). A real Gateway
process; the turn that keeps the session busy is held on a named pipe (tests/fakes/gateways.py), never by
a sleep."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.gateways import MakeHold, StartGateway, finish, make_busy, start, wait_queued

Check = Callable[[str, dict[str, Any], dict[str, Any]], None]  # the output, my submission, theirs waited


def _streamed(out: str, mine: dict[str, Any], other: dict[str, Any]) -> None:
    assert "«mine»" in out
    assert "theirs" not in out
    assert out.count("You said") == 1


def _reported(out: str, mine: dict[str, Any], other: dict[str, Any]) -> None:
    record = json.loads(out)
    assert record["submission"]["id"] == mine["id"]
    assert record["execution"]["id"] != other["execution_id"]
    assert "«mine»" in record["response"]
    assert "theirs" not in record["response"]


@pytest.mark.parametrize(("flag", "check"), [("--stream", _streamed), ("--json", _reported)], ids=["stream", "json"])
def test_c3_chat_follows_its_own_execution_not_the_one_queued_ahead(
    start_gateway: StartGateway, home: Path, hold: MakeHold, flag: str, check: Check
) -> None:
    live = start_gateway()
    with live.client() as client:
        session_id = client.call("session.create")["id"]
        client.call("events.subscribe", {"session_id": session_id})
        held = hold()
        make_busy(client, session_id, held)
        theirs = client.call("session.send", {"session_id": session_id, "text": "theirs, queued first"})
        wait_queued(client, session_id, "theirs, queued first")
        chat = start(home, "chat", "--session", session_id, flag, "mine")
        mine = wait_queued(client, session_id, "mine")
        held.release()  # now theirs runs, then mine
        code, out, err = finish(chat)
        assert code == 0, err
        other = client.call("session.wait", {"submission_id": theirs["id"], "timeout": 30})
    assert other["state"] == "completed"
    check(out, mine, other)
