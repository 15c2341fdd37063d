"""``anyy resident …`` (K3) as typed, against a real Gateway process: add (with the webhook's secret shown
once), list, show, pause, resume, remove; a mistake names the field."""

from __future__ import annotations

import json
from pathlib import Path

from tests.fakes.gateways import StartGateway, run


def test_k3_resident_commands_add_list_show_pause_resume_remove(home: Path, start_gateway: StartGateway) -> None:
    start_gateway()
    added = run(home, "resident", "add", "inbox", "-i", "File what comes in.", "--every", "1800", "--webhook", "--json")
    assert added.returncode == 0, added.stderr
    created = json.loads(added.stdout)
    assert created["secret"]
    assert created["resident"]["webhook_path"] == "/hooks/inbox"
    listed = run(home, "resident", "list")
    assert listed.returncode == 0, listed.stderr
    assert "inbox  active  every 1800 s  /hooks/inbox" in listed.stdout
    shown = run(home, "resident", "show", "inbox")
    assert "instructions: File what comes in." in shown.stdout
    assert run(home, "resident", "pause", "inbox").stdout.strip() == "paused inbox"
    assert json.loads(run(home, "resident", "show", "inbox", "--json").stdout)["paused"] is True
    assert run(home, "resident", "resume", "inbox").stdout.strip() == "resumed inbox"
    assert run(home, "resident", "remove", "inbox").stdout.strip() == "removed inbox"
    assert "no residents" in run(home, "resident", "list").stdout
    bad = run(home, "resident", "add", "x", "-i", "y", "--every", "5")
    assert bad.returncode != 0
    assert "heartbeat" in bad.stderr
