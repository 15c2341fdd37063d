"""E1: ``anyy acp`` is an ACP agent over stdio, bridged to the profile's Gateway. Each test drives the real
command with the ACP SDK's client side, against a real Gateway process on the offline model."""

from __future__ import annotations

import asyncio
from pathlib import Path

import acp
import pytest
from acp import text_block

from tests.acp_agent.editor import TIMEOUT, Editor, anyy_acp
from tests.fakes.gateways import MakeHold, StartGateway, run


def _is(kind: str):
    return lambda u: u.session_update == kind


async def test_e1_new_session_in_cwd_streams_the_answer_and_tool_calls(
    start_gateway: StartGateway, home: Path, tmp_path: Path
) -> None:
    live = start_gateway()
    project = tmp_path / "project"
    project.mkdir()
    (project / "notes.txt").write_text("the notes of the project\n")
    editor = Editor()
    async with anyy_acp(home, editor) as (conn, _):
        caps = conn.init.agent_capabilities
        assert caps.load_session is True
        assert caps.session_capabilities.resume is not None
        assert conn.init.agent_info.name == "anyy"
        opened = await conn.new_session(cwd=str(project), mcp_servers=[])
        sid = opened.session_id
        assert {o.category for o in opened.config_options} == {"model", "thought_level"}
        with live.client() as client:  # every ACP session is an anyy session, in the ACP cwd
            session = client.call("session.get", {"session_id": sid})["session"]
        assert session["workspace"] == str(project.resolve())

        answered = await asyncio.wait_for(conn.prompt(session_id=sid, prompt=[text_block("hello there")]), TIMEOUT)
        assert answered.stop_reason == "end_turn"
        assert "(offline model)" in editor.text()
        assert "user_message_chunk" not in editor.kinds()  # the editor shows its own prompt

        editor.clear()
        done = await asyncio.wait_for(conn.prompt(session_id=sid, prompt=[text_block("read notes.txt")]), TIMEOUT)
        assert done.stop_reason == "end_turn"
        start = await editor.wait_for(_is("tool_call"))
        assert start.kind == "read"
        assert start.raw_input == {"path": "notes.txt"}
        ended = await editor.wait_for(lambda u: u.session_update == "tool_call_update" and u.status == "completed")
        assert ended.tool_call_id == start.tool_call_id
        assert "the notes of the project" in ended.content[0].content.text
        kinds = editor.kinds(sid)
        assert kinds.index("tool_call") < kinds.index("tool_call_update") < kinds.index("agent_message_chunk")

        listed = await conn.list_sessions(cwd=str(project.resolve()))
        assert [(s.session_id, s.cwd) for s in listed.sessions] == [(sid, str(project.resolve()))]
        editor.clear()
        resumed = await conn.resume_session(session_id=sid, cwd=str(project), mcp_servers=[])
        assert resumed.config_options
        assert editor.updates == []  # resume replays nothing: the editor has the conversation


async def test_e1_starts_the_gateway_and_says_so_on_stderr_only(home: Path) -> None:
    created = run(home, "profile", "create", "default")
    assert created.returncode == 0, created.stderr
    editor = Editor()
    try:
        async with anyy_acp(home, editor) as (conn, process):
            opened = await conn.new_session(cwd=str(home), mcp_servers=[])
            answered = await conn.prompt(session_id=opened.session_id, prompt=[text_block("hello")])
            assert answered.stop_reason == "end_turn"
            process.terminate()
            err = (await asyncio.wait_for(process.stderr.read(), TIMEOUT)).decode()
        assert "Started the Gateway of profile default" in err  # the protocol's stdout carried only the protocol
    finally:
        run(home, "gateway", "stop")


async def test_e1_approval_becomes_a_permission_request(start_gateway: StartGateway, home: Path) -> None:
    start_gateway(config_extra='\n[tools.approval]\nshell = "ask"\n')
    editor = Editor(decision="once")
    async with anyy_acp(home, editor) as (conn, _):
        sid = (await conn.new_session(cwd=str(home), mcp_servers=[])).session_id
        done = await asyncio.wait_for(conn.prompt(session_id=sid, prompt=[text_block("run: echo ran-once")]), TIMEOUT)
        assert done.stop_reason == "end_turn"
        [asked] = editor.permissions
        assert asked.raw_input == {"command": "echo ran-once"}
        assert "echo ran-once" in asked.title
        ended = await editor.wait_for(
            lambda u: u.session_update == "tool_call_update" and u.status is not None and u.status != "in_progress"
        )
        assert ended.status == "completed"
        assert "ran-once" in ended.content[0].content.text

        editor.decision = "deny"
        editor.clear()
        done = await asyncio.wait_for(conn.prompt(session_id=sid, prompt=[text_block("run: echo never-ran")]), TIMEOUT)
        assert done.stop_reason == "end_turn"
        assert len(editor.permissions) == 2
        refused = await editor.wait_for(
            lambda u: u.session_update == "tool_call_update" and u.status is not None and u.status != "in_progress"
        )
        assert refused.status == "failed"
        assert "never-ran" not in refused.content[0].content.text.replace("echo never-ran", "")


async def test_e1_question_is_shown_and_the_next_prompt_answers_it(start_gateway: StartGateway, home: Path) -> None:
    live = start_gateway()
    editor = Editor()
    async with anyy_acp(home, editor) as (conn, _):
        sid = (await conn.new_session(cwd=str(home), mcp_servers=[])).session_id
        asked = await asyncio.wait_for(
            conn.prompt(session_id=sid, prompt=[text_block("which colour, ask me?")]), TIMEOUT
        )
        assert asked.stop_reason == "end_turn"
        assert "which colour, ask me?" in editor.text()
        answered = await asyncio.wait_for(conn.prompt(session_id=sid, prompt=[text_block("blue")]), TIMEOUT)
        assert answered.stop_reason == "end_turn"
    with live.client() as client:
        kinds = [e["kind"] for e in client.call("session.history", {"session_id": sid})["items"]]
        view = client.call("session.get", {"session_id": sid})
    assert view["waiting_question"] is None
    assert "answer" in kinds
    assert kinds.count("user") == 1  # the answer was not sent as a second prompt


async def test_e1_cancel_stops_the_running_turn(start_gateway: StartGateway, home: Path, hold: MakeHold) -> None:
    live = start_gateway()
    held = hold()
    editor = Editor()
    async with anyy_acp(home, editor) as (conn, _):
        sid = (await conn.new_session(cwd=str(home), mcp_servers=[])).session_id
        turn = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=[text_block(held.command)]))
        await editor.wait_for(lambda u: u.session_update.startswith("tool_call") and u.status == "in_progress")
        await conn.cancel(session_id=sid)
        stopped = await asyncio.wait_for(turn, TIMEOUT)
        assert stopped.stop_reason == "cancelled"
        with live.client() as client:
            assert client.call("session.get", {"session_id": sid})["running_execution"] is None
        again = await asyncio.wait_for(conn.prompt(session_id=sid, prompt=[text_block("still there?")]), TIMEOUT)
        assert again.stop_reason == "end_turn"


async def test_e1_unknown_and_other_profiles_sessions_are_clear_errors(start_gateway: StartGateway, home: Path) -> None:
    start_gateway()
    other = start_gateway("other")
    with other.client() as client:
        theirs = client.call("session.create", {})["id"]
    editor = Editor()
    async with anyy_acp(home, editor) as (conn, _):
        for wrong in ("no-such-session", theirs):
            with pytest.raises(acp.RequestError) as refused:
                await conn.load_session(session_id=wrong, cwd=str(home), mcp_servers=[])
            assert refused.value.code == -32002
            assert f"no session {wrong!r} in this profile" in str(refused.value)
            assert "--profile" in str(refused.value)
            with pytest.raises(acp.RequestError):
                await conn.prompt(session_id=wrong, prompt=[text_block("hello")])
        with pytest.raises(acp.RequestError) as empty:
            await conn.prompt(session_id=theirs, prompt=[text_block("   ")])
        assert "empty" in str(empty.value)
        mine = (await conn.new_session(cwd=str(home), mcp_servers=[])).session_id
        with pytest.raises(acp.RequestError) as bad_option:
            await conn.set_config_option(config_id="colour", session_id=mine, value="blue")
        assert "model" in str(bad_option.value)
        assert editor.updates == []
        still = await conn.prompt(session_id=mine, prompt=[text_block("hello")])  # the bridge goes on
        assert still.stop_reason == "end_turn"
