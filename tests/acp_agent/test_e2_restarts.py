"""E2: the editor (the ``anyy acp`` process) and the Gateway killed in either order after ten turns; a new
``anyy acp`` loads the session whole and in order, and the prompt accepted before the kill runs once."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
from pathlib import Path

import pytest
from acp import text_block

from tests.acp_agent.editor import TIMEOUT, Editor, anyy_acp
from tests.fakes.gateways import MakeHold, StartGateway, wait_queued

TURNS = 10
LATE = "the prompt accepted before the kill"


def _turn_text(i: int) -> str:
    return "read notes.txt" if i % 2 else f"message number {i}"


async def _gone(host: str, port: int) -> None:
    """Until nothing listens at the killed Gateway's address (the kernel closes it as the process dies)."""
    while True:
        try:
            with socket.create_connection((host, port), timeout=1.0):
                pass
        except OSError:
            return
        await asyncio.sleep(0.05)  # polling a condition, not timing: each round checks the socket again


@pytest.mark.parametrize("order", ["editor_first", "gateway_first"])
async def test_e2_session_reloads_whole_after_editor_and_gateway_are_killed(
    start_gateway: StartGateway, home: Path, tmp_path: Path, hold: MakeHold, order: str
) -> None:
    live = start_gateway()
    project = tmp_path / "project"
    project.mkdir()
    (project / "notes.txt").write_text("notes kept in the project\n")
    held = hold()
    first = Editor()
    async with anyy_acp(home, first) as (conn, bridge):
        sid = (await conn.new_session(cwd=str(project), mcp_servers=[])).session_id
        for i in range(TURNS):
            done = await asyncio.wait_for(conn.prompt(session_id=sid, prompt=[text_block(_turn_text(i))]), TIMEOUT)
            assert done.stop_reason == "end_turn"
        running = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=[text_block(held.command)]))
        await first.wait_for(lambda u: u.session_update.startswith("tool_call") and u.status == "in_progress")
        late = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=[text_block(LATE)]))

        def queued() -> None:
            with live.client() as client:
                client.call("events.subscribe", {"session_id": sid})  # wait_queued waits on queue_changed
                wait_queued(client, sid, LATE)  # accepted: durable in the Gateway's queue

        await asyncio.to_thread(queued)  # the test's loop goes on carrying the editor's messages
        address = live.address
        if order == "editor_first":
            bridge.kill()
        os.kill(address.pid, signal.SIGKILL)
        if order == "gateway_first":
            await _gone(address.host, address.port)
            bridge.kill()
        await bridge.wait()
        for future in (running, late):
            future.cancel()
            with contextlib.suppress(BaseException):
                await future
    await _gone(address.host, address.port)

    second = Editor()
    async with anyy_acp(home, second) as (conn, bridge):  # starts the Gateway again
        loaded = await asyncio.wait_for(conn.load_session(session_id=sid, cwd=str(project), mcp_servers=[]), TIMEOUT)
        assert {o.category for o in loaded.config_options} == {"model", "thought_level"}
        replayed = list(second.updates)
        users = [u.content.text for _, u in replayed if u.session_update == "user_message_chunk"]
        assert users[: TURNS + 1] == [*(_turn_text(i) for i in range(TURNS)), held.command]
        calls = [u for _, u in replayed if u.session_update == "tool_call"]
        ends = [u for _, u in replayed if u.session_update == "tool_call_update"]
        with live.client() as client:  # the head path as the Gateway keeps it, oldest first
            path = list(reversed(client.call("session.history", {"session_id": sid, "limit": 500})["items"]))
        recorded_calls = [e["data"]["call_id"] for e in path if e["kind"] == "tool_call"]
        assert [c.tool_call_id for c in calls] == recorded_calls  # every call, in order, with its result
        assert [e.tool_call_id for e in ends] == recorded_calls
        assert len(recorded_calls) >= TURNS // 2
        assert all("notes kept in the project" in e.content[0].content.text for e in ends[: TURNS // 2])
        assert sum(u.session_update == "agent_message_chunk" for _, u in replayed) >= TURNS

        # the accepted prompt runs now, once, and its answer reaches the reloaded editor
        await second.wait_text(f"You said: «{LATE}»")
        with live.client() as client:
            history = client.call("session.history", {"session_id": sid, "limit": 200})["items"]
            assert client.call("session.queue.list", {"session_id": sid}) == []
        texts = [e["text"] for e in reversed(history) if e["kind"] == "user"]
        assert texts.count(LATE) == 1
        assert texts[-1] == LATE
