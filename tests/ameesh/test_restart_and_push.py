"""H4, H7, H8, H13, H14: a failed summary at a lot change, restart without a brief or with a summary, a
brief labelled as one, alerts pushed to the user's command, attach ending what the harness left."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from ameesh.runner import OPENING_LABELS
from tests.ameesh.conftest import Ameesh


def _prompts(ameesh: Ameesh) -> list[str]:
    return [c["prompt"] for c in ameesh.calls()]


def test_h13_a_failed_summary_at_a_lot_change_opens_the_new_lot_on_its_message_alone(ameesh: Ameesh) -> None:
    ameesh.script({"match": "resume summary", "fail": "overloaded"})
    ameesh.add("bob")
    ameesh("send", "bob", "--lot", "L1", "lot one")
    ameesh("send", "bob", "--lot", "L2", "lot two")
    ameesh("run")
    one, two = ameesh.json("sessions", "bob")
    assert (one["lot"], two["lot"]) == ("L1", "L2")
    assert one["close_reason"] == "lot L1 → L2; summary failed"
    assert ameesh.answers("bob") == ["FRESH: lot one", "FRESH: lot two"]  # never in L1's session
    assert _prompts(ameesh)[-1] == "lot two"  # the brief alone: no summary, nothing of the summary prompt
    assert ameesh.calls()[-1]["session_id"] == two["session_id"]
    (alert,) = ameesh.json("alerts", "bob")
    assert alert["kind"] == "summary_failed"
    assert "overloaded" in alert["message"]


def test_h7_restart_without_a_brief_opens_a_fresh_session_on_the_message_alone(ameesh: Ameesh) -> None:
    ameesh.add("bob")
    ameesh("send", "bob", "one")
    ameesh("run")
    out = ameesh("restart", "bob").output
    assert "on its message alone" in out
    ameesh("send", "bob", "two")
    ameesh("run")
    assert ameesh.answers("bob") == ["FRESH: one", "FRESH: two"]
    assert _prompts(ameesh)[-1] == "two"
    old, new = ameesh.json("sessions", "bob")
    assert old["close_reason"] == "restart"
    assert new["closed_at"] is None


def test_h7_a_restart_brief_reaches_the_model_labelled_as_a_brief(ameesh: Ameesh, tmp_path: Path) -> None:
    ameesh.add("bob")
    ameesh("send", "bob", "one")
    ameesh("run")
    brief = tmp_path / "brief.md"
    brief.write_text("You are on lot 9: fix the parser.", encoding="utf-8")
    ameesh("restart", "bob", "--brief", str(brief))
    ameesh("send", "bob", "go")
    ameesh("run")
    opening = _prompts(ameesh)[-1]
    assert opening.startswith(OPENING_LABELS["brief"])
    assert "Resume summary" not in opening
    assert "You are on lot 9: fix the parser." in opening
    assert opening.endswith("go")


def test_h8_restart_with_summary_rotates_now(ameesh: Ameesh) -> None:
    ameesh.script({"match": "resume summary", "answer": "SUMMARY: one was done"})
    ameesh.add("bob")
    ameesh("send", "bob", "one")
    ameesh("run")
    out = ameesh("restart", "bob", "--summary").output
    assert "closed with a summary" in out
    old = ameesh.json("sessions", "bob")[0]
    assert old["closed_at"] is not None
    assert old["summary"] == "SUMMARY: one was done"
    ameesh("send", "bob", "two")
    ameesh("run")
    opening = _prompts(ameesh)[-1]
    assert opening.startswith(OPENING_LABELS["summary"])
    assert "SUMMARY: one was done" in opening
    assert ameesh("restart", "bob", "--summary", "--brief", "-", ok=False).exit_code == 2


def test_h8_restart_with_a_failed_summary_keeps_the_session(ameesh: Ameesh) -> None:
    ameesh.script({"match": "resume summary", "fail": "overloaded"})
    ameesh.add("bob")
    ameesh("send", "bob", "one")
    ameesh("run")
    failed = ameesh("restart", "bob", "--summary", ok=False)
    assert "failed" in failed.output
    (session,) = ameesh.json("sessions", "bob")
    assert session["closed_at"] is None


def _canon_with_push(ameesh: Ameesh, command: str, timeout: float = 30) -> None:
    canon = ameesh.work / "canon.toml"
    canon.write_text(f"[alerts]\ncommand = {json.dumps(command)}\ntimeout = {timeout}\n", encoding="utf-8")
    ameesh.monkeypatch.setenv("AMEESH_CANON", str(canon))


def test_h14_alerts_are_pushed_to_the_users_command_as_json(ameesh: Ameesh, tmp_path: Path) -> None:
    received = tmp_path / "pushed.jsonl"
    _canon_with_push(ameesh, f"cat >> {received}; echo >> {received}")
    ameesh.monkeypatch.setenv("AMEESH_SESSION_MAX_ATTEMPTS", "1")
    ameesh.script({"fail": "refused by the model"})
    ameesh.add("bob")
    ameesh("send", "bob", "one")
    assert ameesh("run", ok=False).exit_code == 4
    (pushed,) = [json.loads(line) for line in received.read_text().splitlines() if line.strip()]
    assert pushed["agent"] == "bob"
    assert pushed["kind"] == "harness_failing"
    assert "refused by the model" in pushed["message"]
    assert pushed["num"] == ameesh.json("alerts")[0]["num"]


def test_h14_a_failing_or_hanging_push_is_logged_and_never_blocks_the_runner(ameesh: Ameesh) -> None:
    _canon_with_push(ameesh, "echo no route to the phone >&2; exit 3")
    ameesh.monkeypatch.setenv("AMEESH_SESSION_MAX_ATTEMPTS", "1")
    ameesh.script({"match": "one", "fail": "refused"})
    ameesh.add("bob")
    ameesh("send", "bob", "one")
    ameesh("send", "bob", "two")
    assert ameesh("run", ok=False).exit_code == 4
    assert ameesh.answers("bob") == ["FRESH: two"]  # the runner went on
    (note,) = [i["text"] for i in ameesh.json("thread", "bob") if i["kind"] == "push"]
    assert "exit 3" in note
    assert "no route to the phone" in note

    _canon_with_push(ameesh, "exec sleep 600", timeout=0.2)  # hangs: killed at its timeout
    ameesh.script({"match": "three", "fail": "refused"})
    ameesh("send", "bob", "three")
    ameesh("run", ok=False)
    notes = [i["text"] for i in ameesh.json("thread", "bob") if i["kind"] == "push"]
    assert "no end within 0.2 s (killed)" in notes[-1]


def test_h3_attach_ends_the_processes_the_harness_left_running(ameesh: Ameesh, tmp_path: Path) -> None:
    ameesh.add("bob")
    ameesh("send", "bob", "one")
    ameesh("run")
    left = tmp_path / "left.pid"
    ameesh.script({"match": "", "times": 1, "spawn": str(left), "answer": "attached"})
    done = subprocess.run(
        [sys.executable, "-c", "from ameesh.cli import main; main()", "attach", "bob", "--exec"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "ended 1 process(es) the harness left running" in done.stderr
    pid = int(left.read_text())
    stat = Path(f"/proc/{pid}/stat")
    assert not stat.exists() or stat.read_text().split(") ")[1].startswith("Z")
