"""``anyy chat`` as a real process against a real Gateway (SPEC C1-C7, B3, X3)."""

from __future__ import annotations

import contextlib
import json
import os
import pty
import re
import select
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cli.live import (
    ANYY,
    BROKEN_PROVIDER,
    MakeHold,
    StartGateway,
    chat_json,
    env_for,
    finish,
    make_busy,
    run,
    start,
    start_gateway,
    wait_event,
    wait_queued,
)

__all__ = ["start_gateway"]


def test_c1_c4_chat_new_session_json(start_gateway: StartGateway, home: Path) -> None:
    start_gateway()
    code, record, _ = chat_json(home, "hello")
    assert code == 0
    assert record["result"] == "completed"
    assert record["session_id"].startswith("ses_")
    assert record["submission"]["state"] == "completed"
    assert record["execution"]["state"] == "completed"
    assert record["passes"] == 1
    assert "You said: «hello»" in record["response"]
    assert record["exit_code"] == 0
    # The turn's tokens and the context its last model call re-read (for orchestrators such as ameesh).
    usage = record["usage"]
    assert set(record) == {  # what ameesh's anyy adapter reads: the keys stay as they are
        *("session_id", "submission", "execution", "passes", "result", "response", "usage", "context_tokens"),
        "exit_code",
        "cost",  # what the turn's model calls cost (Y3)
    }
    assert set(usage) == {"input", "output", "cache_read", "cache_write"}
    assert usage["input"] > 0
    assert usage["output"] > 0
    assert record["context_tokens"] == usage["input"] + usage["cache_read"] + usage["cache_write"]


def test_c1_chat_continues_a_session(start_gateway: StartGateway, home: Path) -> None:
    live = start_gateway()
    first = run(home, "chat", "hello")
    assert first.returncode == 0, first.stderr
    assert "You said: «hello»" in first.stdout
    session_id = first.stderr.split()[1]
    assert first.stderr.startswith(f"session {session_id} (new, role default)")

    code, record, _ = chat_json(home, "--session", session_id, "and then?")
    assert code == 0
    assert record["session_id"] == session_id
    assert "«and then?»" in record["response"]
    assert "«hello»" not in record["response"]
    with live.client() as client:
        history = client.call("session.history", {"session_id": session_id})["items"]
    assert [e["kind"] for e in reversed(history)] == ["user", "assistant", "user", "assistant"]


def test_b3_chat_with_a_role_and_role_with_session_is_a_usage_error(start_gateway: StartGateway, home: Path) -> None:
    live = start_gateway()
    (home / "profiles" / "default" / "roles" / "scribe.toml").write_text('identity = "a scribe"\nsoul = "terse"\n')
    code, record, _ = chat_json(home, "--role", "scribe", "hello")
    assert code == 0
    with live.client() as client:
        assert client.call("session.get", {"session_id": record["session_id"]})["session"]["role"] == "scribe"

    both = run(home, "chat", "--role", "scribe", "--session", record["session_id"], "hi")
    assert both.returncode == 2
    assert "--role applies to a new session only" in both.stderr

    unknown = run(home, "chat", "--role", "nobody", "hi")
    assert unknown.returncode == 1
    assert "no role 'nobody'" in unknown.stderr


def test_c2_x3_chat_without_gateway_fails_fast_with_the_command(home: Path) -> None:
    assert run(home, "profile", "create", "work").returncode == 0
    began = time.monotonic()
    done = run(home, "chat", "--profile", "work", "hello")
    assert time.monotonic() - began < 30  # a bound against a hang (a connect retry loop), not a speed test
    assert done.returncode == 1
    assert done.stderr.strip() == (
        "error: no Gateway is running for profile work: start one with `anyy gateway start --profile work`"
    )


def test_c2_x3_chat_with_a_stale_address_file_fails_fast(start_gateway: StartGateway, home: Path) -> None:
    start_gateway()
    address_file = home / "profiles" / "default" / "gateway.json"
    saved = address_file.read_bytes()
    assert run(home, "gateway", "stop").returncode == 0
    address_file.write_bytes(saved)  # a Gateway killed without cleaning up
    done = run(home, "chat", "hello")
    assert done.returncode == 1
    assert "start one with `anyy gateway start --profile default`" in done.stderr


def test_c3_chat_waits_for_its_own_submission(start_gateway: StartGateway, home: Path, hold: MakeHold) -> None:
    live = start_gateway()
    with live.client() as client:
        session_id = client.call("session.create")["id"]
        client.call("events.subscribe", {"session_id": session_id})
        held = hold()
        busy = make_busy(client, session_id, held)  # another client's turn holds the session
        chat = start(home, "chat", "--session", session_id, "--json", "mine")
        queued = wait_queued(client, session_id, "mine")
        later = client.call("session.send", {"session_id": session_id, "text": "someone else's"})
        held.release()
        code, out, err = finish(chat)
        assert code == 0, err
        record = json.loads(out)
        assert record["submission"]["id"] == queued["id"]
        assert record["execution"]["id"] != busy["execution_id"]
        assert "«mine»" in record["response"]
        assert "someone else's" not in record["response"]
        assert "tools returned" not in record["response"]
        assert record["passes"] == 1
        other = client.call("session.wait", {"submission_id": later["id"], "timeout": 30})
        assert other["state"] == "completed"
        assert other["execution_id"] != record["execution"]["id"]


def test_c3_streams_only_its_own_execution(start_gateway: StartGateway, home: Path, hold: MakeHold) -> None:
    live = start_gateway()
    with live.client() as client:
        session_id = client.call("session.create")["id"]
        client.call("events.subscribe", {"session_id": session_id})
        held = hold()
        make_busy(client, session_id, held)
        chat = start(home, "chat", "--session", session_id, "--stream", "mine")
        wait_queued(client, session_id, "mine")
        client.call("session.send", {"session_id": session_id, "text": "someone else's"})
        held.release()
        code, out, err = finish(chat)
    assert code == 0, err
    assert "«mine»" in out
    assert "tools returned" not in out  # the turn that ran before it streamed too, to other clients
    assert "someone else's" not in out
    assert out.count("You said") == 1


def test_c1_chat_streams_on_a_terminal(start_gateway: StartGateway, home: Path) -> None:
    start_gateway()
    leader, follower = pty.openpty()
    process = subprocess.Popen(
        [ANYY, "chat", "hello"], stdout=follower, stderr=subprocess.PIPE, env=env_for(home), text=True
    )
    os.close(follower)
    seen = b""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        ready, _, _ = select.select([leader], [], [], deadline - time.monotonic())
        if not ready:
            break
        try:
            chunk = os.read(leader, 4096)
        except OSError:  # the terminal closed: the process is done with it
            break
        if not chunk:
            break
        seen += chunk
    os.close(leader)
    assert process.wait(timeout=60) == 0
    assert "You said: «hello»" in seen.decode()


def test_c5_a_later_success_never_overwrites_an_earlier_failure(start_gateway: StartGateway, home: Path) -> None:
    live = start_gateway(config_extra=BROKEN_PROVIDER, retries=False)
    with live.client() as client:
        session_id = client.call("session.create")["id"]
        client.call("session.settings", {"session_id": session_id, "provider": "broken", "model": "m"})
        code, failed, _ = chat_json(home, "--session", session_id, "first")
        assert code == 4
        assert failed["result"] == "failed"
        assert failed["error"]
        client.call("session.settings", {"session_id": session_id, "provider": "offline", "model": "offline"})
        code, succeeded, _ = chat_json(home, "--session", session_id, "second")
        assert code == 0
        again = client.call("session.wait", {"submission_id": failed["submission"]["id"], "timeout": 0})
    assert again["state"] == "failed"
    assert again["error"] == failed["error"]
    assert "«second»" in succeeded["response"]


def test_c6_exit_code_for_each_outcome(start_gateway: StartGateway, home: Path, hold: MakeHold) -> None:
    live = start_gateway(config_extra=BROKEN_PROVIDER, retries=False)
    completed = run(home, "chat", "hello")
    assert completed.returncode == 0

    suspended = run(home, "chat", "can you ask me my name?")
    assert suspended.returncode == 3
    assert "What is your answer?" in suspended.stdout
    assert "session.answer" in suspended.stderr
    code, record, _ = chat_json(home, "could you ask me my age?")
    assert (code, record["result"], record["execution"]["state"]) == (3, "suspended", "suspended")
    assert record["question"]

    with live.client() as client:
        session_id = client.call("session.create")["id"]
        client.call("session.settings", {"session_id": session_id, "provider": "broken", "model": "m"})
    failed = run(home, "chat", "--session", session_id, "hello")
    assert failed.returncode == 4
    assert failed.stderr.startswith("error: the answer failed: ")

    timed_out = run(home, "chat", "--timeout", "0.2", hold().command)  # held until teardown
    assert timed_out.returncode == 7
    assert "the work goes on in the Gateway" in timed_out.stderr

    gone = run(home, "chat", "--session", "ses_nope", "hello")
    assert gone.returncode == 1
    empty = run(home, "chat", "  ")
    assert empty.returncode == 2


def test_c6_interrupted_exit_code(start_gateway: StartGateway, home: Path, hold: MakeHold) -> None:
    live = start_gateway()
    with live.client() as client:
        session_id = client.call("session.create")["id"]
        client.call("events.subscribe", {"session_id": session_id})
        chat = start(home, "chat", "--session", session_id, "--json", hold().command)  # never released
        started = wait_event(client, lambda e: e["type"] == "tool_started" and e["session_id"] == session_id)
        assert client.call("session.stop", {"session_id": session_id, "execution_id": started["execution_id"]})[
            "stopped"
        ]
        code, out, err = finish(chat)
    assert code == 5, err
    record = json.loads(out)
    assert record["result"] == "interrupted"
    assert record["execution"] == {"id": started["execution_id"], "state": "interrupted"}


def test_c6_cleared_from_the_queue_exit_code(start_gateway: StartGateway, home: Path, hold: MakeHold) -> None:
    live = start_gateway()
    with live.client() as client:
        session_id = client.call("session.create")["id"]
        client.call("events.subscribe", {"session_id": session_id})
        make_busy(client, session_id, hold())  # released at teardown
        chat = start(home, "chat", "--session", session_id, "mine")
        wait_queued(client, session_id, "mine")
        removed = client.call("session.queue.clear", {"session_id": session_id})
        assert [item["text"] for item in removed] == ["mine"]
        code, _, err = finish(chat)
    assert code == 6
    assert "removed from the session's queue (cleared)" in err


def test_c7_timeout_stops_only_the_waiting(start_gateway: StartGateway, home: Path, hold: MakeHold) -> None:
    live = start_gateway()
    held = hold()
    code, record, err = chat_json(home, "--timeout", "0.3", held.command)
    assert code == 7
    assert record["result"] == "timeout"
    assert record["submission"]["state"] in ("pending", "taken")
    assert "the work goes on in the Gateway" in err
    held.release()
    with live.client() as client:
        later = client.call("session.wait", {"submission_id": record["submission"]["id"], "timeout": 30})
    assert later["state"] == "completed"


def test_c7_ctrl_c_stops_only_the_waiting(start_gateway: StartGateway, home: Path, hold: MakeHold) -> None:
    live = start_gateway()
    with live.client() as client:
        session_id = client.call("session.create")["id"]
        client.call("events.subscribe", {"session_id": session_id})
        held = hold()  # the turn cannot end before the Ctrl+C, however slow the machine
        chat = start(home, "chat", "--session", session_id, held.command)  # SIGINT at its default (start)
        started = wait_event(client, lambda e: e["type"] == "tool_started" and e["session_id"] == session_id)
        chat.send_signal(signal.SIGINT)
        code, _, err = finish(chat)
        assert code == 130, err
        # Even when the tool started before the CLI read the send's reply, it asks again with the message's
        # key and knows: one line, naming the submission taken.
        ref = {"session_id": session_id, "execution_id": started["execution_id"]}
        (submission,) = client.call("session.execution", ref)["submission_ids"]
        assert err.count("stopped") == 1, err
        assert f"stopped waiting (Ctrl+C): your message goes on in the Gateway (submission {submission} " in err
        held.release()
        ended = wait_event(
            client,
            lambda e: (
                e["type"] == "execution_state"
                and e["execution_id"] == started["execution_id"]
                and e["state"] != "running"
            ),
        )
    assert ended["state"] == "completed"


class _CtrlCDuringSend:
    """A real client on which Ctrl+C comes while ``session.send`` is in flight: after its request went out
    (``sent``: the Gateway takes it, the reply is never read) or just before (it never left)."""

    def __init__(self, client: Any, *, sent: bool) -> None:
        self.client, self.sent = client, sent

    def __getattr__(self, name: str) -> Any:
        return getattr(self.client, name)

    def call(self, method: Any, params: Any = None, **options: Any) -> Any:
        if getattr(method, "name", method) != "session.send":
            return self.client.call(method, params, **options)
        if self.sent:
            self.client.request(method, params)
        raise KeyboardInterrupt


@pytest.mark.parametrize("sent", [True, False], ids=["after-the-request", "before-the-request"])
def test_c7_ctrl_c_before_the_sends_reply_asks_again_with_its_key_and_says_one_true_thing(
    start_gateway: StartGateway, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], sent: bool
) -> None:
    from anyy.cli.chat_command import EXIT_CTRL_C, run_chat
    from anyy.client import sync
    from anyy.profiles.profile import get_profile

    live = start_gateway()
    profile = get_profile(live.home, live.profile)
    with live.client() as client:
        session_id = client.call("session.create")["id"]
    real = sync.profile_client
    connections = []

    @contextlib.contextmanager
    def interrupted_first(profile: Any, **options: Any) -> Iterator[Any]:
        with real(profile, **options) as client:
            connections.append(client)
            yield _CtrlCDuringSend(client, sent=sent) if len(connections) == 1 else client

    monkeypatch.setattr(sync, "profile_client", interrupted_first)
    code = run_chat(profile, "hello", session_id=session_id, role=None, as_json=False, timeout=None, stream=False)
    assert code == EXIT_CTRL_C
    assert len(connections) == 2  # asked again, on a connection of its own
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err  # exactly one line
    said = re.fullmatch(
        r"stopped waiting \(Ctrl\+C\): your message goes on in the Gateway \(submission (\S+) .*\n", err
    )
    assert said is not None, err
    with live.client() as client:
        done = client.call("session.wait", {"submission_id": said.group(1), "timeout": 60})
        history = client.call("session.history", {"session_id": session_id})["items"]
    assert done["state"] == "completed"
    assert [entry["text"] for entry in history if entry["kind"] == "user"] == ["hello"]  # taken once (D8)
