"""``anyy chat`` for scripts (SPEC U4): the message from stdin or a file, ``--provider``/``--model``,
``--answer``, ``--attach``, ``--tools``/``--no-tools``, a Gateway lost mid-turn, the retry line, and a
failed turn that is still told after the fact. Real processes against a real Gateway process."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path
from typing import Any

from anyy.client.sync import Client
from tests.cli.live import (
    ANYY,
    BROKEN_PROVIDER,
    TIMEOUT,
    MakeHold,
    StartGateway,
    chat_json,
    env_for,
    finish,
    run,
    start,
    start_gateway,
    wait_event,
)

__all__ = ["start_gateway"]


def run_with_input(home: Path, data: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [ANYY, *args], input=data, capture_output=True, text=True, env=env_for(home), timeout=TIMEOUT, check=False
    )


def user_entry(client: Client, session_id: str) -> dict[str, Any]:
    history = client.call("session.history", {"session_id": session_id})["items"]
    return next(e for e in history if e["kind"] == "user")


def test_u4_chat_reads_a_one_megabyte_message_from_stdin_and_from_a_file(
    start_gateway: StartGateway, home: Path, tmp_path: Path
) -> None:
    live = start_gateway()
    big = "word " * 200_000 + "END"  # 1 MB: far past what an argument may carry
    done = run_with_input(home, big, "chat", "--json", "-")
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)
    assert record["result"] == "completed"
    with live.client() as client:
        assert user_entry(client, record["session_id"])["text"] == big

    message = tmp_path / "message.txt"
    message.write_text("from a file\nwith two lines\n", encoding="utf-8")
    code, from_file, err = chat_json(home, "--file", str(message))
    assert code == 0, err
    with live.client() as client:
        assert user_entry(client, from_file["session_id"])["text"] == "from a file\nwith two lines\n"

    both = run(home, "chat", "--file", str(message), "text too")
    assert both.returncode == 2
    assert "give the message once" in both.stderr
    empty = run_with_input(home, "  \n", "chat", "-")
    assert empty.returncode == 2
    assert "the message is empty" in empty.stderr


def test_u4_provider_and_model_apply_to_the_session_and_its_failure_is_told_later(
    start_gateway: StartGateway, home: Path
) -> None:
    live = start_gateway(config_extra=BROKEN_PROVIDER, retries=False)
    code, record, _ = chat_json(home, "--provider", "broken", "--model", "m", "hello")
    assert code == 4
    session_id = record["session_id"]
    with live.client() as client:
        session = client.call("session.get", {"session_id": session_id})["session"]
        assert (session["provider"], session["model"]) == ("broken", "m")
        history = client.call("session.history", {"session_id": session_id})["items"]
    notice = history[0]  # newest first: the failure's durable notice ends the turn
    assert notice["kind"] == "notice"
    assert notice["data"]["failed_execution"] == record["execution"]["id"]
    assert notice["data"]["retryable"] is True  # nothing listens there: a transient error
    assert notice["text"].startswith("The answer failed: ")

    # Coming back to the session later (another process): the failure is said before the next message.
    again = run(home, "chat", "--session", session_id, "--provider", "offline", "--model", "offline", "again")
    assert again.returncode == 0, again.stderr
    assert "the last turn of this session failed. The answer failed: " in again.stderr
    assert "sending again may work" in again.stderr

    unknown = run(home, "chat", "--provider", "nope", "hello")
    assert unknown.returncode == 1
    assert "unknown provider 'nope'" in unknown.stderr


def test_u4_answer_answers_the_waiting_question_then_follows_the_turn(start_gateway: StartGateway, home: Path) -> None:
    start_gateway()
    asked = run(home, "chat", "can you ask me my name?")
    assert asked.returncode == 3
    session_id = asked.stderr.split()[1]
    assert f'anyy chat --session {session_id} --answer "YOUR ANSWER"' in asked.stderr
    assert f"anyy --resume {session_id}" in asked.stderr

    # A message sent meanwhile says why it would wait (it does not hang silently).
    waiting = run(home, "chat", "--session", session_id, "--timeout", "0.5", "hello?")
    assert "this session waits for your answer to:" in waiting.stderr
    assert "--answer" in waiting.stderr

    code, record, err = chat_json(home, "--session", session_id, "--answer", "Ada")
    assert code == 0, err
    assert record["result"] == "completed"
    assert record["session_id"] == session_id
    assert record["execution"]["state"] == "completed"

    nothing = run(home, "chat", "--session", session_id, "--answer", "again")
    assert nothing.returncode == 1
    assert "is not waiting for an answer" in nothing.stderr
    alone = run(home, "chat", "--answer", "Ada")
    assert alone.returncode == 2
    assert "--answer needs --session ID" in alone.stderr


def test_u4_attach_uploads_the_file_through_the_gateway(
    start_gateway: StartGateway, home: Path, tmp_path: Path
) -> None:
    live = start_gateway()
    note = tmp_path / "notes.txt"
    note.write_bytes(b"remember the milk\n")
    code, record, err = chat_json(home, "--attach", str(note), "what is in the file?")
    assert code == 0, err
    with live.client() as client:
        attachments = user_entry(client, record["session_id"])["data"]["attachments"]
    assert [(a["name"], a["media_type"], a["size"]) for a in attachments] == [("notes.txt", "text/plain", 18)]
    stored = home / "profiles" / "default" / "objects"
    assert any(p.is_file() and p.read_bytes() == b"remember the milk\n" for p in stored.rglob("*"))

    missing = run(home, "chat", "--attach", str(tmp_path / "nope.txt"), "hello")
    assert missing.returncode == 2
    assert "nope.txt" in missing.stderr


def test_u4_tools_and_no_tools_choose_a_new_sessions_tools(start_gateway: StartGateway, home: Path) -> None:
    live = start_gateway()
    code, some, err = chat_json(home, "--tools", "read_file,ask_user", "hello")
    assert code == 0, err
    code, none, err = chat_json(home, "--no-tools", "hello")
    assert code == 0, err
    with live.client() as client:
        chosen = client.call("session.get", {"session_id": some["session_id"]})["session"]["tools"]
        bare = client.call("session.get", {"session_id": none["session_id"]})["session"]["tools"]
    assert chosen["enabled"] == ["read_file", "ask_user"]
    assert bare["enabled"] == []

    with live.client() as client:
        before = len(client.call("session.list", {})["items"])
    unknown = run(home, "chat", "--tools", "read_file,teleport", "hello")
    assert unknown.returncode == 1
    assert "teleport" in unknown.stderr
    with live.client() as client:
        assert len(client.call("session.list", {})["items"]) == before  # the refused session is not left behind
    existing = run(home, "chat", "--session", some["session_id"], "--no-tools", "hello")
    assert existing.returncode == 2
    assert "a new session" in existing.stderr
    both = run(home, "chat", "--tools", "shell", "--no-tools", "hello")
    assert both.returncode == 2


def test_u4_a_gateway_lost_mid_turn_exits_8_and_keeps_the_session_id(
    start_gateway: StartGateway, home: Path, hold: MakeHold
) -> None:
    live = start_gateway()
    with live.client() as client:
        client.call("events.subscribe")
        chat = start(home, "chat", "--json", hold().command)  # held in a shell call until the Gateway dies
        started = wait_event(client, lambda e: e["type"] == "tool_started")
    os.kill(live.address.pid, signal.SIGKILL)
    code, out, err = finish(chat)
    assert code == 8, err
    record = json.loads(out)
    assert record["result"] == "unknown"
    assert record["session_id"] == started["session_id"]
    assert record["submission"]["id"]
    assert record["exit_code"] == 8
    assert "the Gateway was lost before the answer ended" in err


def test_u4_a_retry_wait_is_said_on_stderr(start_gateway: StartGateway, home: Path) -> None:
    start_gateway(config_extra=BROKEN_PROVIDER, max_retries=1)
    done = run(home, "chat", "--provider", "broken", "--model", "m", "hello")
    assert done.returncode == 4
    assert "retrying in 2 s, attempt 1 of 1" in done.stderr


def test_u4_gateway_run_says_where_it_listens(home: Path) -> None:
    assert run(home, "profile", "create", "default").returncode == 0
    process = start(home, "gateway", "run")
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line.startswith("Gateway of profile default listening at http://127.0.0.1:")
        assert "Ctrl+C stops it" in line
        status = run(home, "gateway", "status")  # it answers there (and so now takes SIGTERM as a stop)
        assert status.returncode == 0, status.stderr
        assert line.split()[5] in status.stdout
    finally:
        process.send_signal(signal.SIGTERM)
        process.communicate(timeout=TIMEOUT)
    assert process.returncode == 0


def test_u4_answer_approves_a_tool_call_then_follows_the_turn(start_gateway: StartGateway, home: Path) -> None:
    start_gateway(config_extra='\n[tools.approval]\nshell = "ask"\n')
    asked = run(home, "chat", "run: echo approved-and-ran")
    assert asked.returncode == 3
    session_id = asked.stderr.split()[1]
    assert f"anyy chat --session {session_id} --answer once" in asked.stderr
    wrong = run(home, "chat", "--session", session_id, "--answer", "sure")
    assert wrong.returncode == 1
    assert "--answer once" in wrong.stderr
    code, record, err = chat_json(home, "--session", session_id, "--answer", "once")
    assert code == 0, err
    assert record["result"] == "completed"
    assert "approved-and-ran" in record["response"]


def test_u1_chat_creates_its_session_with_the_message_or_not_at_all(start_gateway: StartGateway, home: Path) -> None:
    live = start_gateway()
    refused = run(home, "chat", "--provider", "offline", "--model", "no-such-model", "hello")
    assert refused.returncode == 1
    assert "no-such-model" in refused.stderr
    with live.client() as client:
        assert client.call("session.list", {})["items"] == []  # a refused first message makes no session
    code, record, err = chat_json(home, "--model", "offline", "hello")
    assert code == 0, err
    with live.client() as client:
        [session] = client.call("session.list", {})["items"]
        first = client.call("session.wait", {"submission_id": record["submission"]["id"], "timeout": 0})
    assert (session["id"], first["session_id"], first["position"]) == (record["session_id"], session["id"], 1)
