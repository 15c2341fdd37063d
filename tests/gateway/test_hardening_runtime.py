"""Issue 17, the runtime's letters: D1 (a full disk never wedges a session: the end of an execution that
could not be written blocks the session visibly and is written once space returns), D4 (streamed text
kept at a bounded cost across a kill and a graceful stop), D3 (a tool's processes do not outlive a
crash, and the call is recorded with what it printed), D12 (navigating restores the model that applied
there). Real Gateways on real (tiny) filesystems; nothing sleeps to synchronise: waits are on gates,
events, or state re-read with a deadline."""

from __future__ import annotations

import contextlib
import functools
import json
import os
import queue
import socket
import sqlite3
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from anyy.domain.entries import EntryKind, NewEntry
from anyy.domain.errors import StorageFull
from anyy.domain.model_io import INTERRUPTED_NOTE, TextDelta
from anyy.domain.sessions import NewSession
from anyy.profiles import create_profile, get_profile
from anyy.profiles.gateway_address import Address, read_address, write_address
from anyy.providers.gates import Gate
from anyy.runtime import stream_keeper
from anyy.runtime.host import RECOVERY_NOTE
from anyy.storage.protocol import SessionStore
from anyy.tools.process import process_start_ticks
from commons import jsonrpc
from tests.fakes.disks import fill, small_disk
from tests.fakes.gateways import MakeHold, StartGateway, run, start
from tests.fakes.model_server import FakeModelServer, Reply, ToolCall
from tests.gateway.live import LiveGateway, WsClient, error_code, is_state, wait_gate
from tests.killtest.gateway_process import GatewayProcess, RpcClient

DEADLINE = 30.0


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[Path]:
    with small_disk(tmp_path / "disk", "4m") as mounted:
        yield mounted


def _fill_up(live: LiveGateway, disk: Path) -> None:
    """Fill the filesystem, then the store's own slack (its log), until a write is refused."""
    assert live.gateway is not None
    gateway = live.gateway
    scratch = live.run(gateway.store(lambda s: s.create_session(NewSession(title="scratch"))))
    fill(disk / "filler")

    def append(store: SessionStore, i: int) -> None:
        store.append_entries(scratch.id, [NewEntry(kind=EntryKind.USER, text=f"filler {i} " + "x" * 500)])

    for i in range(100_000):
        try:
            live.run(gateway.store(functools.partial(append, i=i)))
        except StorageFull:
            return
    raise AssertionError("the disk never filled up")


def _held_turn(live: LiveGateway, client: WsClient) -> tuple[str, str, Gate]:
    session = client.call("session.create")
    client.call("events.subscribe", {"session_id": session["id"]})
    gate = Gate("held before the end")
    live.model.enqueue([TextDelta(text="half of it, "), gate, TextDelta(text="and the rest " + "y" * 300_000)])
    client.call("session.send", {"session_id": session["id"], "text": "answer at length"})
    wait_gate(gate)
    running = client.call("session.get", {"session_id": session["id"]})["running_execution"]
    assert running is not None
    return session["id"], running, gate


def _wedge(live: LiveGateway, client: WsClient, disk: Path) -> tuple[str, str]:
    """A turn whose pass and whose end both meet a full disk: the session is blocked on that end."""
    session_id, execution_id, gate = _held_turn(live, client)
    _fill_up(live, disk)
    gate.open()
    notice = client.event(lambda e: e.get("type") == "notice" and e.get("level") == "error", DEADLINE)
    assert "could not be recorded" in notice["text"]
    assert "no space left" in notice["text"]
    return session_id, execution_id


def _is_blocked(view: dict[str, Any], execution_id: str) -> None:
    assert view["running_execution"] is None
    blocked = view["blocked"]
    assert blocked is not None, view
    assert blocked["execution_id"] == execution_id
    assert blocked["state"] == "failed"
    assert "no space left" in blocked["error"]


def test_d1_end_unwritable_on_full_disk_blocks_visibly_then_next_request_runs(disk: Path) -> None:
    with LiveGateway(disk) as live, live.ws() as client:
        session_id, execution_id = _wedge(live, client, disk)
        _is_blocked(client.call("session.get", {"session_id": session_id}), execution_id)
        # Nothing is lost and nothing pretends: the store still says running, the queue is empty, a new
        # prompt is refused with the disk-full error while the disk is full.
        code = error_code(lambda: client.call("session.send", {"session_id": session_id, "text": "too soon"}))
        assert code == jsonrpc.STORAGE_FULL
        assert client.call("session.queue.list", {"session_id": session_id}) == []
        (disk / "filler").unlink()  # space returns
        live.model.enqueue([TextDelta(text="answered after the disk was freed")])
        sent = client.call("session.send", {"session_id": session_id, "text": "and now?"})
        ended = client.event(is_state("failed", execution_id), DEADLINE)
        assert "no space left" in ended["error"]
        client.event(lambda e: is_state("completed")(e) and sent["id"] in e["submission_ids"], DEADLINE)
        view = client.call("session.get", {"session_id": session_id})
        assert view["blocked"] is None
        done = client.call("session.execution", {"session_id": session_id, "execution_id": execution_id})
        assert done["state"] == "failed"
        texts = [e["text"] for e in client.call("session.history", {"session_id": session_id})["items"]]
        assert texts[0] == "answered after the disk was freed"


def test_d1_blocked_end_is_written_on_its_own_when_space_returns(disk: Path) -> None:
    with LiveGateway(disk) as live, live.ws() as client:
        session_id, execution_id = _wedge(live, client, disk)
        # A stop of that execution cannot stop anything (it ended), and says so; a tool change waits.
        assert client.call("session.stop", {"session_id": session_id, "execution_id": execution_id}) == {
            "stopped": False
        }
        _is_blocked(client.call("session.get", {"session_id": session_id}), execution_id)
        (disk / "filler").unlink()
        client.event(is_state("failed", execution_id), DEADLINE)  # no request needed
        assert client.call("session.get", {"session_id": session_id})["blocked"] is None
        submission = client.call("session.queue.list", {"session_id": session_id})
        assert submission == []


def _held_actors(client: WsClient) -> int:
    return int(client.call("gateway.status")["held"]["actors"])


def test_d1_a_waiting_client_hears_that_the_end_could_not_be_written(disk: Path) -> None:
    with LiveGateway(disk) as live, live.ws() as client:
        session_id, execution_id, gate = _held_turn(live, client)
        submission_id = _submission_of(client, session_id)
        waiting = client.request("session.wait", {"submission_id": submission_id, "timeout": 600})
        _fill_up(live, disk)
        gate.open()
        # The wait ends when the end cannot be written (not at its timeout), and says why: the state stays
        # what is on disk.
        heard = jsonrpc.result_of(client.reply_to(waiting, DEADLINE))
        assert (heard["id"], heard["state"]) == (submission_id, "taken")
        blocked = heard["blocked"]
        assert (blocked["execution_id"], blocked["state"]) == (execution_id, "failed")
        assert "no space left" in blocked["error"]
        # Asked again, it says the same (a wait that begins blocked waits as usual: a client never spins).
        again = client.call("session.wait", {"submission_id": heard["id"], "timeout": 0})
        assert again["blocked"]["execution_id"] == execution_id
        assert _held_actors(client) == 1  # the blocked session's worker stays (D13 lets only idle ones go)
        (disk / "filler").unlink()
        done = client.call("session.wait", {"submission_id": heard["id"], "timeout": DEADLINE})
        assert (done["state"], done["blocked"]) == ("failed", None)
        assert _until(lambda: _held_actors(client) == 0, "the worker let go once the end was written")


def _submission_of(client: WsClient, session_id: str) -> str:
    view = client.call("session.get", {"session_id": session_id})
    execution = client.call("session.execution", {"session_id": session_id, "execution_id": view["running_execution"]})
    return str(execution["submission_ids"][0])


def test_d1_a_waiting_anyy_chat_shows_that_the_disk_is_full(disk: Path) -> None:
    with LiveGateway(disk) as live, live.ws() as client:
        write_address(
            live.profile,
            Address(
                profile=live.profile.name,
                pid=os.getpid(),
                host="127.0.0.1",
                port=live.port,
                token=live.token,
                started_at=time.time(),
            ),
        )
        session_id = client.call("session.create", {"title": "chat on a full disk"})["id"]
        client.call("events.subscribe", {"session_id": session_id})
        gate = Gate("held before the end")
        live.model.enqueue([TextDelta(text="half of it, "), gate, TextDelta(text="and the rest " + "y" * 300_000)])
        chat = start(live.home, "chat", "--session", session_id, "answer at length")
        try:
            wait_gate(gate)
            _fill_up(live, disk)
            gate.open()
            said = _stderr_lines(chat)
            line = _next_matching(said, "could not be recorded")
            assert "no space left" in line
            assert "free some space" in line
            assert chat.poll() is None  # still waiting for the outcome
            (disk / "filler").unlink()
            assert chat.wait(DEADLINE) == 4  # failed: the end it reached, written once space returned
        finally:
            if chat.poll() is None:
                chat.kill()
                chat.wait()


def _stderr_lines(process: subprocess.Popen[str]) -> queue.Queue[str]:
    """The process's stderr, line by line, as it comes (read on a thread)."""
    lines: queue.Queue[str] = queue.Queue()

    def read() -> None:
        assert process.stderr is not None
        for line in process.stderr:
            lines.put(line)

    threading.Thread(target=read, daemon=True).start()
    return lines


def _next_matching(lines: queue.Queue[str], text: str) -> str:
    deadline = time.monotonic() + DEADLINE
    while True:
        line = lines.get(timeout=max(deadline - time.monotonic(), 0.01))
        if text in line:
            return line


# -- D4 ------------------------------------------------------------------------------------------------
PIECES = [f"piece {i:02d} of a long answer. " for i in range(20)]
HELD_AT = 12  # pieces sent before the model holds its stream


@pytest.fixture
def model_server() -> Iterator[FakeModelServer]:
    server = FakeModelServer()
    server.start()
    yield server
    server.stop()


def _streaming_gateway(tmp_path: Path, server: FakeModelServer, extra: str = "") -> GatewayProcess:
    """A Gateway process whose sessions talk to the fake model server (OpenAI Chat Completions); ``extra``
    is added to its configuration."""
    home = tmp_path / "home"
    profile = create_profile(home, "d4")
    config = profile.config_path.read_text().replace(
        'provider = "offline"\nmodel = "offline"', 'provider = "fake"\nmodel = "m1"'
    )
    config += f'\n[providers.fake]\nkind = "openai"\nbase_url = "{server.openai_url}"\napi_key_env = ""\n'
    config += extra
    profile.config_path.write_text(config)
    (tmp_path / "work").mkdir(exist_ok=True)
    return GatewayProcess(home, "d4", cwd=tmp_path / "work", log=tmp_path / "stderr.log")


def _state_db(gateway: GatewayProcess) -> Path:
    return gateway.home / "profiles" / gateway.profile / "state.db"


def _kept(gateway: GatewayProcess, execution_id: str, kind: str = "text") -> str:
    """The streamed text (or thinking) the store holds for a running execution (read-only, beside the Gateway)."""
    conn = sqlite3.connect(f"file:{_state_db(gateway)}?mode=ro", uri=True)
    try:
        rows = conn.execute(
            "SELECT s.text FROM stream_texts s JOIN executions e ON e.num = s.exe_num WHERE e.id = ? AND s.kind = ? "
            "ORDER BY s.seq",
            (execution_id, kind),
        ).fetchall()
    finally:
        conn.close()
    return "".join(row[0] for row in rows)


def _until(check: Any, what: str) -> Any:
    """Wait (re-reading state, with a deadline) until ``check()`` is truthy."""
    deadline = time.monotonic() + DEADLINE
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.05)
    raise AssertionError(f"never happened: {what}")


def _held_stream(gateway: GatewayProcess, server: FakeModelServer) -> tuple[RpcClient, str, str, str]:
    """A turn whose answer streamed HELD_AT pieces, then holds; returns once the store kept them."""
    server.enqueue(Reply(text=PIECES, hold_at=1 + HELD_AT))  # the first event is the role's
    rpc = gateway.client()
    session_id = rpc.call("session.create")["id"]
    sent = rpc.call("session.send", session_id=session_id, text="tell me at length")
    running = _until(lambda: rpc.call("session.get", session_id=session_id)["running_execution"], "a running turn")
    streamed = "".join(PIECES[:HELD_AT])
    _until(lambda: _kept(gateway, running) == streamed, "the streamed text saved")
    return rpc, session_id, running, sent["id"]


def test_d4_streamed_text_survives_a_kill_and_goes_to_the_model_marked_interrupted(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    gateway = _streaming_gateway(tmp_path, model_server)
    gateway.start()
    try:
        rpc, session_id, execution_id, submission_id = _held_stream(gateway, model_server)
        gateway.kill()
        gateway.start()
        rpc = gateway.client()
        streamed = "".join(PIECES[:HELD_AT])
        recovered = rpc.call("session.execution", session_id=session_id, execution_id=execution_id)
        assert recovered["state"] == "interrupted"
        assert recovered["note"].startswith(RECOVERY_NOTE)
        assert f"Kept: the first {len(streamed):,} characters of its answer" in recovered["note"]
        notice, answer, question = rpc.call("session.history", session_id=session_id, limit=3)["items"]
        assert (notice["kind"], notice["text"]) == ("notice", recovered["note"])
        assert (answer["kind"], answer["text"]) == ("assistant", streamed)
        assert answer["data"]["interrupted"] is True
        assert question["text"] == "tell me at length"
        assert rpc.call("session.wait", submission_id=submission_id, timeout=0)["state"] == "interrupted"
        model_server.enqueue(Reply(text=["Going on from there."]))
        again = rpc.call("session.send", session_id=session_id, text="go on")
        assert rpc.call("session.wait", submission_id=again["id"], timeout=DEADLINE)["state"] == "completed"
        messages = model_server.received[-1].body["messages"]
        said = [m for m in messages if m["role"] == "assistant"]
        assert said[-1]["content"] == streamed + INTERRUPTED_NOTE
    finally:
        gateway.stop()


def test_d4_graceful_stop_settles_running_work_as_interrupted_with_its_text(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    gateway = _streaming_gateway(tmp_path, model_server)
    gateway.start()
    try:
        _rpc, session_id, execution_id, submission_id = _held_stream(gateway, model_server)
        gateway.stop()  # SIGTERM, as `anyy gateway stop`
        conn = sqlite3.connect(f"file:{_state_db(gateway)}?mode=ro", uri=True)
        try:
            state, note = conn.execute("SELECT state, note FROM executions WHERE id = ?", (execution_id,)).fetchone()
            (sub_state,) = conn.execute("SELECT state FROM submissions WHERE id = ?", (submission_id,)).fetchone()
        finally:
            conn.close()
        assert (state, sub_state) == ("interrupted", "interrupted")  # settled before the exit, not at the next start
        assert "the Gateway was stopped" in note
        gateway.start()
        rpc = gateway.client()
        answer = rpc.call("session.history", session_id=session_id, limit=1)["items"][0]
        assert (answer["kind"], answer["text"]) == ("assistant", "".join(PIECES[:HELD_AT]))
        assert answer["data"]["interrupted"] is True
    finally:
        gateway.stop()


def test_d4_four_kilobytes_waiting_are_written_without_the_timer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The size trigger of the streamed-text keeping, alone: the 1 s timer is put out of reach."""
    monkeypatch.setattr(stream_keeper, "SAVE_EVERY", 3600.0)
    pieces = [f"piece {i}: " + "z" * 990 for i in range(5)]  # the fifth crosses SAVE_BYTES (4,096)
    assert sum(map(len, pieces[:4])) < stream_keeper.SAVE_BYTES <= sum(map(len, pieces))
    live = LiveGateway(tmp_path)
    with live, live.ws() as client:
        session_id = client.call("session.create")["id"]
        gate = Gate("held after five pieces")
        live.model.enqueue([*(TextDelta(text=piece) for piece in pieces), gate, TextDelta(text=" the end")])
        client.call("session.send", {"session_id": session_id, "text": "answer at length"})
        wait_gate(gate)
        execution_id = client.call("session.get", {"session_id": session_id})["running_execution"]

        def rows() -> list[str]:
            conn = sqlite3.connect(f"file:{live.profile.db_path}?mode=ro", uri=True)
            try:
                found = conn.execute(
                    "SELECT s.text FROM stream_texts s JOIN executions e ON e.num = s.exe_num "
                    "WHERE e.id = ? AND s.kind = 'text' ORDER BY s.seq",
                    (execution_id,),
                ).fetchall()
            finally:
                conn.close()
            return [row[0] for row in found]

        kept = _until(rows, "the 4 KB write")
        assert kept == ["".join(pieces)]  # one write, made when the fifth piece crossed the size
        gate.open()


THOUGHTS = [f"thought {i:02d}, weighed. " for i in range(6)]


def test_d4_streamed_thinking_survives_a_kill_kept_as_thinking(tmp_path: Path, model_server: FakeModelServer) -> None:
    gateway = _streaming_gateway(tmp_path, model_server)
    gateway.start()
    try:
        # The thinking, then 3 pieces of the answer, then the model holds its stream.
        model_server.enqueue(Reply(thinking=THOUGHTS, text=PIECES, hold_at=1 + len(THOUGHTS) + 3))
        rpc = gateway.client()
        session_id = rpc.call("session.create")["id"]
        rpc.call("session.send", session_id=session_id, text="think first")
        running = _until(lambda: rpc.call("session.get", session_id=session_id)["running_execution"], "a turn")
        thought, said = "".join(THOUGHTS), "".join(PIECES[:3])
        _until(lambda: _kept(gateway, running, "thinking") == thought and _kept(gateway, running) == said, "kept")
        gateway.kill()
        gateway.start()
        rpc = gateway.client()
        recovered = rpc.call("session.execution", session_id=session_id, execution_id=running)
        assert recovered["state"] == "interrupted"
        assert (
            f"Kept: the first {len(thought):,} characters of its thinking and the first {len(said):,} characters "
            "of its answer" in recovered["note"]
        )
        notice, answer, _question = rpc.call("session.history", session_id=session_id, limit=3)["items"]
        assert (notice["kind"], notice["text"]) == ("notice", recovered["note"])
        assert (answer["kind"], answer["text"]) == ("assistant", said)
        assert (answer["data"]["thinking"], answer["data"]["interrupted"]) == (thought, True)
    finally:
        gateway.stop()


# -- D12 -----------------------------------------------------------------------------------------------
def _turn(live: LiveGateway, client: WsClient, session_id: str, text: str) -> None:
    live.model.enqueue([TextDelta(text=f"answer to {text}")])
    sent = client.call("session.send", {"session_id": session_id, "text": text})
    client.event(lambda e: is_state("completed")(e) and sent["id"] in e["submission_ids"], DEADLINE)


def test_d12_navigating_restores_the_model_that_applied_at_the_new_position(tmp_path: Path) -> None:
    live = LiveGateway(tmp_path)
    config = live.profile.config_path
    config.write_text(config.read_text() + '\n[providers.spare]\nkind = "offline"\n')
    with live, live.ws() as client:
        session_id = client.call("session.create")["id"]
        client.call("events.subscribe", {"session_id": session_id})
        _turn(live, client, session_id, "first")
        client.call(
            "session.settings", {"session_id": session_id, "provider": "spare", "model": "offline", "effort": "high"}
        )
        _turn(live, client, session_id, "second")
        path = client.call("session.history", {"session_id": session_id})["items"]
        first_user = next(e for e in path if e["text"] == "first")
        second_user = next(e for e in path if e["text"] == "second")
        last_answer = path[0]

        def selection() -> tuple[str, str]:
            session = client.call("session.get", {"session_id": session_id})["session"]
            return session["provider"], session["effort"]

        moved = client.call(
            "session.navigate", {"session_id": session_id, "entry_id": second_user["id"], "before": True}
        )
        assert (moved["session"]["provider"], selection()) == ("spare", ("spare", "high"))  # changed there
        moved = client.call(
            "session.navigate", {"session_id": session_id, "entry_id": first_user["id"], "before": True}
        )
        assert (moved["session"]["provider"], selection()) == ("offline", ("offline", ""))  # before any change
        client.call("session.navigate", {"session_id": session_id, "entry_id": last_answer["id"]})
        assert selection() == ("spare", "high")  # back where the change applies


# -- D3 ------------------------------------------------------------------------------------------------
def _tool_run(gateway: GatewayProcess) -> tuple[int, int, str] | None:
    """pid, start time and output kept of the one tool call the store holds for a running pass."""
    conn = sqlite3.connect(f"file:{_state_db(gateway)}?mode=ro", uri=True)
    try:
        row = conn.execute("SELECT pid, started, output FROM tool_runs WHERE pid IS NOT NULL").fetchone()
    finally:
        conn.close()
    return None if row is None else (int(row[0]), int(row[1]), str(row[2]))


@pytest.mark.parametrize("sandbox", ["sandboxed", "not_sandboxed"])
def test_d3_a_tool_running_at_a_kill_is_ended_on_recovery_and_recorded_with_its_output(
    tmp_path: Path, hold: MakeHold, sandbox: str
) -> None:
    """Sandboxed, the program dies with the Gateway (bubblewrap's --die-with-parent); not sandboxed, it
    outlives it until recovery ends its process group."""
    home = tmp_path / "home"
    profile = create_profile(home, "d3")
    if sandbox == "not_sandboxed":
        profile.config_path.write_text(profile.config_path.read_text() + "\n[tools.sandbox]\nenabled = false\n")
    (tmp_path / "work").mkdir()
    gateway = GatewayProcess(home, "d3", cwd=tmp_path / "work", log=tmp_path / "stderr.log")
    held = hold()
    gateway.start()
    try:
        rpc = gateway.client()
        session_id = rpc.call("session.create")["id"]
        command = f"run: echo printed before the kill; read line < {held.path}; echo too late > late.txt"
        sent = rpc.call("session.send", session_id=session_id, text=command)
        pid, started, _ = _until(
            lambda: (found := _tool_run(gateway)) is not None and "printed before the kill" in found[2] and found,
            "the tool's process and output recorded",
        )
        gateway.kill()
        survived = process_start_ticks(pid) == started
        gateway.start()
        _until(lambda: process_start_ticks(pid) != started, "the tool's processes ended")
        if sandbox == "not_sandboxed":
            assert survived, "the program should have outlived the Gateway: recovery had nothing to end"
        held.release()  # had it survived, it would now write late.txt
        rpc = gateway.client()
        assert rpc.call("session.wait", submission_id=sent["id"], timeout=0)["state"] == "interrupted"
        notice, result, call, *_ = rpc.call("session.history", session_id=session_id, limit=5)["items"]
        assert (call["kind"], call["data"]["name"]) == ("tool_call", "shell")
        assert call["data"]["arguments"]["command"].startswith("echo printed before the kill")
        assert result["kind"] == "tool_result"
        assert result["data"]["call_id"] == call["data"]["call_id"]
        assert result["data"]["is_error"] is True
        assert result["text"].startswith("Interrupted: the Gateway stopped while this call ran")
        assert "printed before the kill" in result["text"]
        assert notice["kind"] == "notice"
        assert "Tool calls stopped and recorded as interrupted, with what they printed: shell." in notice["text"]
        model_sees = rpc.call("session.send", session_id=session_id, text="what happened?")
        rpc.call("session.wait", submission_id=model_sees["id"], timeout=DEADLINE)
        assert not (tmp_path / "work" / "late.txt").exists()
    finally:
        gateway.stop()


def test_d3_a_pid_that_now_names_another_process_is_left_alone(tmp_path: Path, hold: MakeHold) -> None:
    """Recovery ends a leftover only if its pid still names the process that was recorded: here the record
    says it started at another time (as when the pid was reused after a reboot), and the process lives."""
    home = tmp_path / "home"
    profile = create_profile(home, "d3")
    profile.config_path.write_text(profile.config_path.read_text() + "\n[tools.sandbox]\nenabled = false\n")
    (tmp_path / "work").mkdir()
    gateway = GatewayProcess(home, "d3", cwd=tmp_path / "work", log=tmp_path / "stderr.log")
    held = hold()
    gateway.start()
    pid = 0
    try:
        rpc = gateway.client()
        session_id = rpc.call("session.create")["id"]
        sent = rpc.call("session.send", session_id=session_id, text=f"run: echo up; read line < {held.path}")
        pid, started, _ = _until(
            lambda: (found := _tool_run(gateway)) is not None and "up" in found[2] and found, "the tool recorded"
        )
        gateway.kill()
        assert process_start_ticks(pid) == started  # unsandboxed, it outlived the Gateway
        conn = sqlite3.connect(_state_db(gateway))
        try:
            conn.execute("UPDATE tool_runs SET started = started + 1 WHERE pid = ?", (pid,))
            conn.commit()
        finally:
            conn.close()
        gateway.start()
        rpc = gateway.client()
        assert rpc.call("session.wait", submission_id=sent["id"], timeout=0)["state"] == "interrupted"  # recovered
        assert process_start_ticks(pid) == started, "recovery killed a process the record does not name"
    finally:
        if pid and process_start_ticks(pid) is not None:
            os.killpg(pid, 9)
        held.release()
        gateway.stop()


def _inner_run(gateway: GatewayProcess) -> tuple[int, int, str] | None:
    """pid, start time and output kept of a Codemode script's inner call that runs a program."""
    conn = sqlite3.connect(f"file:{_state_db(gateway)}?mode=ro", uri=True)
    try:
        row = conn.execute(
            "SELECT pid, started, output FROM tool_runs WHERE parent != '' AND pid IS NOT NULL"
        ).fetchone()
    finally:
        conn.close()
    return None if row is None else (int(row[0]), int(row[1]), str(row[2]))


def test_d3_a_scripts_inner_call_running_at_a_kill_is_ended_and_recorded_in_the_scripts_result(
    tmp_path: Path, hold: MakeHold, model_server: FakeModelServer
) -> None:
    """A Codemode script's inner ``shell`` runs in a process group of its own, started by the Gateway: it
    is recorded before it starts like a call of the model's, so recovery ends it and records it."""
    gateway = _streaming_gateway(tmp_path, model_server, "\n[tools.sandbox]\nenabled = false\n")
    held = hold()
    command = f"echo inner printed; read line < {held.path}; echo too late > late.txt"
    script = f"print('script began', flush=True)\ntools.shell(command={command!r})\n"
    model_server.enqueue(Reply(tool_calls=[ToolCall(name="run_script", arguments={"script": script})]))
    gateway.start()
    try:
        rpc = gateway.client()
        session_id = rpc.call("session.create")["id"]
        rpc.call("session.tools.configure", session_id=session_id, enabled=["shell"], codemode=True)
        sent = rpc.call("session.send", session_id=session_id, text="script it")
        pid, started, _ = _until(
            lambda: (found := _inner_run(gateway)) is not None and "inner printed" in found[2] and found,
            "the inner call's process and output recorded",
        )
        gateway.kill()
        assert process_start_ticks(pid) == started, "the inner program should have outlived the Gateway"
        gateway.start()
        _until(lambda: process_start_ticks(pid) != started, "the inner call's processes ended")
        held.release()  # had it survived, it would now write late.txt
        rpc = gateway.client()
        assert rpc.call("session.wait", submission_id=sent["id"], timeout=0)["state"] == "interrupted"
        notice, result, call, *_ = rpc.call("session.history", session_id=session_id, limit=5)["items"]
        assert (call["kind"], call["data"]["name"]) == ("tool_call", "run_script")
        assert (result["kind"], result["data"]["call_id"]) == ("tool_result", call["data"]["call_id"])
        (inner,) = result["data"]["inner_calls"]
        assert (inner["name"], inner["arguments"], inner["is_error"]) == ("shell", {"command": command}, True)
        assert "inner printed" in inner["result"]
        assert "run_script, shell (in run_script)." in notice["text"]
        assert not (tmp_path / "work" / "late.txt").exists()
    finally:
        gateway.stop()


# -- D8 ------------------------------------------------------------------------------------------------
class DropAfterSend:
    """A TCP proxy to the Gateway that, on its first connection, drops the client as soon as the Gateway
    says anything of a submission (the send's reply, or the queue event before it): the send arrived and
    was handled, its reply is lost."""

    def __init__(self, port: int) -> None:
        self.upstream_port = port
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.connections = 0
        self.kept: list[socket.socket] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            self.connections += 1
            upstream = socket.create_connection(("127.0.0.1", self.upstream_port))
            self.kept += [client, upstream]
            marker = b'"sub_' if self.connections == 1 else None
            threading.Thread(target=self._pump, args=(upstream, client, marker), daemon=True).start()
            threading.Thread(target=self._pump, args=(client, upstream, None), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket, drop_on: bytes | None) -> None:
        with contextlib.suppress(OSError):
            while data := source.recv(65536):
                if drop_on is not None and drop_on in data:
                    sink.shutdown(socket.SHUT_RDWR)  # the client's connection only: the Gateway goes on
                    sink.close()
                    return
                sink.sendall(data)

    def close(self) -> None:
        self.listener.close()
        for each in self.kept:
            each.close()


def test_d8_chat_says_whether_a_send_whose_reply_was_lost_was_accepted(start_gateway: StartGateway) -> None:
    gateway = start_gateway()
    home = gateway.home
    with gateway.client() as client:
        session_id = client.call("session.create")["id"]
    profile = get_profile(home, gateway.profile)
    real = read_address(profile)
    assert real is not None
    proxy = DropAfterSend(real.port)
    try:
        write_address(profile, msgspec.structs.replace(real, port=proxy.port))
        done = run(home, "chat", "--json", "--session", session_id, "sent once, whatever the network does")
    finally:
        write_address(profile, real)
        proxy.close()
    assert done.returncode == 8, done.stderr  # the outcome of the turn is unknown
    assert proxy.connections == 2  # the one dropped, the one that asked again with the same key
    asked = json.loads(done.stdout)["submission"]
    assert asked is not None
    assert f"your message was accepted (submission {asked['id']})" in done.stderr
    with gateway.client() as client:
        texts = [
            s["text"]
            for s in client.call("session.queue.list", {"session_id": session_id})
            + client.call("session.history", {"session_id": session_id})["items"]
        ]
    assert texts.count("sent once, whatever the network does") == 1


def test_d12_with_several_changes_on_the_path_the_newest_before_the_position_applies(tmp_path: Path) -> None:
    live = LiveGateway(tmp_path)
    config = live.profile.config_path
    config.write_text(
        config.read_text() + '\n[providers.spare]\nkind = "offline"\n[providers.third]\nkind = "offline"\n'
    )
    with live, live.ws() as client:
        session_id = client.call("session.create")["id"]
        client.call("events.subscribe", {"session_id": session_id})
        _turn(live, client, session_id, "first")
        client.call(
            "session.settings", {"session_id": session_id, "provider": "spare", "model": "offline", "effort": "high"}
        )
        _turn(live, client, session_id, "second")
        client.call(
            "session.settings", {"session_id": session_id, "provider": "third", "model": "offline", "effort": "low"}
        )
        _turn(live, client, session_id, "third")
        path = client.call("session.history", {"session_id": session_id})["items"]
        by_text = {e["text"]: e for e in path if e["kind"] == "user"}

        def at(entry_id: int, *, before: bool = False) -> tuple[str, str]:
            client.call("session.navigate", {"session_id": session_id, "entry_id": entry_id, "before": before})
            session = client.call("session.get", {"session_id": session_id})["session"]
            return session["provider"], session["effort"]

        assert at(by_text["third"]["id"]) == ("third", "low")  # both changes on the path: the newer
        assert at(by_text["second"]["id"]) == ("spare", "high")  # only the first change before it
        assert at(by_text["third"]["id"], before=True) == ("third", "low")  # the second change is its parent
        assert at(by_text["first"]["id"]) == ("offline", "")  # before any change: the first selection
        assert at(path[0]["id"]) == ("third", "low")  # the head again
