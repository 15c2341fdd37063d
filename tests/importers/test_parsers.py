"""The parsers on hostile and odd input (I1-I3): they are pure, so these need no CLI and no store."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from anyy.domain.entries import EntryKind
from anyy.domain.imports import claude_code, codex, pi
from anyy.domain.imports.model import SourceError
from tests.cli.conftest import Run


def _claude(*records: dict[str, object]) -> list[str]:
    return [json.dumps(r) for r in records]


def _user(uuid: str, parent: str | None, content: object, **more: object) -> dict[str, object]:
    return {
        "type": "user",
        "uuid": uuid,
        "parentUuid": parent,
        "sessionId": "S",
        "message": {"role": "user", "content": content},
        **more,
    }


def _assistant(uuid: str, parent: str | None, msg_id: str, content: list[dict[str, object]]) -> dict[str, object]:
    return {
        "type": "assistant",
        "uuid": uuid,
        "parentUuid": parent,
        "sessionId": "S",
        "message": {"id": msg_id, "model": "m", "content": content},
    }


def _data(entry: Any) -> Any:
    """An entry's payload, as the parser built it (a struct of its kind)."""
    return entry.data


def _entries(session: object) -> list[tuple[str, str]]:
    return [(e.kind.label, e.text) for s in session.steps for e in s.entries]  # type: ignore[attr-defined]


def test_i3_escape_codes_never_reach_a_title() -> None:
    lines = _claude(_user("u1", None, "\x1b]0;pwned\x07\x1b[2J hello\r\nworld\x9b31m" + "x" * 500))
    session = claude_code.parse(lines, "f.jsonl")
    assert "\x1b" not in session.title
    assert "\x07" not in session.title
    assert "\x9b" not in session.title
    assert session.title.startswith("hello world xxx")  # the sequences go whole, not only their ESC
    assert len(session.title) <= 120


def test_i1_unknown_record_kinds_are_counted_in_a_notice_never_dropped() -> None:
    lines = _claude(
        _user("u1", None, "hi"),
        {"type": "brand-new-kind", "uuid": "x1"},
        {"type": "brand-new-kind", "uuid": "x2"},
        {**_user("s1", "u1", "sub-agent work"), "isSidechain": True},
    )
    session = claude_code.parse(lines, "f.jsonl")
    assert session.unknown == {"brand-new-kind": 2, "sidechain": 1}
    notices = [text for kind, text in _entries(session) if kind == "notice"]
    assert notices == ["records of kinds this import does not read, left out: brand-new-kind: 2, sidechain: 1"]


def test_i2_one_response_in_several_records_is_one_answer_with_its_calls() -> None:
    lines = _claude(
        _user("u1", None, "go"),
        _assistant("a1", "u1", "msg1", [{"type": "thinking", "thinking": "hmm", "signature": "s"}]),
        _assistant("a2", "a1", "msg1", [{"type": "text", "text": "running"}]),
        _assistant("a3", "a2", "msg1", [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}}]),
        _assistant("a4", "a3", "msg1", [{"type": "tool_use", "id": "t2", "name": "Read", "input": {"path": "x"}}]),
        _user("r1", "a4", [{"type": "tool_result", "tool_use_id": "t1", "content": "x"}]),
        _user("r2", "r1", [{"type": "tool_result", "tool_use_id": "t2", "content": [{"type": "text", "text": "y"}]}]),
    )
    session = claude_code.parse(lines, "f.jsonl")
    kinds = [kind for kind, _ in _entries(session)]
    assert kinds == ["user", "assistant", "tool_call", "tool_call", "tool_result", "tool_result"]
    answer = session.steps[1].entries[0]
    assert answer.text == "running"
    assert _data(answer).thinking == "hmm"


def test_i2_unanswered_calls_get_a_synthetic_result_and_orphan_results_become_notices() -> None:
    lines = _claude(
        _user("u1", None, "go"),
        _assistant("a1", "u1", "m1", [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {}}]),
        _user("u2", "a1", "never mind"),  # the turn was interrupted: no result
        _user("r9", "u2", [{"type": "tool_result", "tool_use_id": "nope", "content": "stray"}]),
    )
    session = claude_code.parse(lines, "f.jsonl")
    kinds = [kind for kind, _ in _entries(session)]
    assert kinds == ["user", "assistant", "tool_call", "tool_result", "user", "notice"]
    synthetic = session.steps[2].entries[0]
    assert _data(synthetic).synthetic
    assert _data(synthetic).call_id == "t1"


def test_i3_malformed_records_name_file_and_line() -> None:
    with pytest.raises(SourceError, match=r"f.jsonl, line 2: not a JSON record"):
        claude_code.parse(['{"type": "user"}', '{"type": "us'], "f.jsonl")
    with pytest.raises(SourceError, match=r"line 1: a JSON list, not a record"):
        codex.parse(["[1, 2]"], "f.jsonl")
    deep = "[" * 100_000 + "]" * 100_000
    with pytest.raises(SourceError, match=r"line 1"):
        codex.parse([deep], "f.jsonl")
    with pytest.raises(SourceError, match=r"line 1: a message record where pi's session header belongs"):
        pi.parse(['{"type": "message", "id": "a"}'], "f.jsonl")
    header = '{"type": "session", "id": "S"}'
    with pytest.raises(SourceError, match=r"line 2: record b follows zz, which the file does not hold"):
        pi.parse([header, '{"type": "message", "id": "b", "parentId": "zz", "message": {"role": "user"}}'], "f.jsonl")


def test_i1_codex_rollout_keeps_calls_reasoning_and_model() -> None:
    records = [
        {"type": "session_meta", "payload": {"id": "T1", "cwd": "/w"}},
        {"type": "turn_context", "payload": {"model": "gpt-x"}},
        {"type": "response_item", "payload": {"type": "message", "role": "developer", "content": []}},
        {
            "type": "response_item",
            "payload": {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "<environment_context>…"}],
            },
        },
        {
            "type": "response_item",
            "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "fix it"}]},
        },
        {
            "type": "response_item",
            "payload": {"type": "reasoning", "summary": [{"type": "summary_text", "text": "think"}]},
        },
        {
            "type": "response_item",
            "payload": {"type": "function_call", "name": "exec_command", "arguments": '{"cmd": "ls"}', "call_id": "c1"},
        },
        {
            "type": "response_item",
            "payload": {"type": "function_call", "name": "exec_command", "arguments": "not json", "call_id": "c2"},
        },
        {"type": "response_item", "payload": {"type": "function_call_output", "call_id": "c1", "output": "a"}},
        {"type": "response_item", "payload": {"type": "function_call_output", "call_id": "c2", "output": "b"}},
        {
            "type": "response_item",
            "payload": {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "done"}]},
        },
    ]
    session = codex.parse([json.dumps(r) for r in records], "r.jsonl")
    assert (session.source_id, session.cwd) == ("T1", "/w")
    kinds = [kind for kind, _ in _entries(session)]
    assert kinds == [
        "notice",
        "user",
        "assistant",
        "tool_call",
        "tool_call",
        "tool_result",
        "tool_result",
        "assistant",
        "notice",
    ]
    answer = session.steps[2].entries[0]
    assert _data(answer).model == "gpt-x"
    assert _data(answer).thinking == "think"
    assert _data(session.steps[2].entries[2]).arguments == {"raw": "not json"}


def test_i3_cli_refuses_what_is_not_a_session_file(anyy: Run, tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    result = anyy("import", "pi", str(fifo), str(tmp_path / "missing.jsonl"))
    assert result.exit_code == 1
    assert f"{fifo}: not a regular file" in result.stderr
    assert "missing.jsonl: cannot read it" in result.stderr
    bad = tmp_path / "latin1.jsonl"
    bad.write_bytes(b'{"type": "session", "id": "S"}\n{"x": "\xe9"}\n')
    result = anyy("import", "pi", str(bad))
    assert result.exit_code == 1
    assert f"{bad}, line 2: not UTF-8 text" in result.stderr
    assert "Traceback" not in result.stderr
    usage = anyy("import")
    assert usage.exit_code == 2
    assert "give a FORMAT and at least one PATH, or --discover" in usage.stderr


def test_i2_entries_keep_kinds_for_continuation() -> None:
    header = '{"type": "session", "id": "S", "cwd": "/w"}'
    lines = [header, '{"type": "compaction", "id": "c", "parentId": null, "summary": "earlier work"}']
    session = pi.parse(lines, "f.jsonl")
    assert [(e.kind, e.text) for e in session.steps[0].entries] == [
        (EntryKind.NOTICE, "pi compacted the conversation here"),
        (EntryKind.USER, "earlier work"),
    ]


def test_i1_opencode_steps_become_answers_with_calls_and_results() -> None:
    from anyy.domain.imports import opencode

    session_row = {"id": "ses_1", "directory": "/w", "title": "New session - 2026", "time_created": 1796621449182}
    messages = [
        ("msg_1", 1796621450350, json.dumps({"role": "user"})),
        (
            "msg_2",
            1796621469146,
            json.dumps({"role": "assistant", "modelID": "m", "providerID": "p", "tokens": {"input": 3}}),
        ),
    ]
    parts = [
        ("prt_1", "msg_1", json.dumps({"type": "text", "text": "\x1b[31mlist\x1b[0m files"})),
        ("prt_2", "msg_2", json.dumps({"type": "step-start"})),
        ("prt_3", "msg_2", json.dumps({"type": "reasoning", "text": "think"})),
        (
            "prt_4",
            "msg_2",
            json.dumps(
                {
                    "type": "tool",
                    "tool": "bash",
                    "callID": "c1",
                    "state": {"status": "completed", "input": {"command": "ls"}, "output": "a"},
                }
            ),
        ),
        (
            "prt_5",
            "msg_2",
            json.dumps({"type": "tool", "tool": "bash", "callID": "c2", "state": {"status": "running", "input": {}}}),
        ),
        ("prt_6", "msg_2", json.dumps({"type": "step-finish"})),
        ("prt_7", "msg_2", json.dumps({"type": "step-start"})),
        ("prt_8", "msg_2", json.dumps({"type": "text", "text": "done"})),
        ("prt_9", "msg_2", json.dumps({"type": "brand-new"})),
    ]
    session = opencode.parse(session_row, messages, parts, "oc.db")
    assert session.title == "list files"
    kinds = [kind for kind, _ in _entries(session)]
    # the call still running when opencode stopped gets a synthetic result
    assert kinds == ["user", "assistant", "tool_call", "tool_call", "tool_result", "tool_result", "assistant", "notice"]
    assert session.unknown == {"part brand-new": 1}
    with pytest.raises(SourceError, match=r"oc.db, row 3: prt_1: its data is not a JSON record"):
        opencode.parse(session_row, messages, [("prt_1", "msg_1", "{bad")], "oc.db")


def test_i1_hermes_messages_become_a_tree_and_bad_calls_name_the_message() -> None:
    from anyy.domain.imports import hermes

    row = {"id": "h1", "model": "m", "cwd": "/w", "title": None, "started_at": 1796622421.4}
    calls = json.dumps(
        [{"id": "c1", "type": "function", "function": {"name": "terminal", "arguments": '{"command": "ls"}'}}]
    )
    messages = [
        (1, "user", "list", None, None, None, 1796622421.5, None, None, 1),
        (2, "assistant", "", None, calls, None, 1796622422.0, "tool_calls", "think", 1),
        (3, "tool", '{"output": "a"}', "c1", None, "terminal", 1796622423.0, None, None, 1),
        (4, "user", "oops", None, None, None, 1796622424.0, None, None, 0),
        (5, "assistant", "done", None, None, None, 1796622425.0, "stop", None, 1),
    ]
    session = hermes.parse(row, messages, "state.db")
    kinds = [kind for kind, _ in _entries(session)]
    assert kinds == ["user", "assistant", "tool_call", "tool_result", "assistant", "notice"]
    assert session.unknown == {"message taken back": 1}
    assert session.steps[0].entries[0].created_at == 1796622421.5
    bad = [(2, "assistant", "", None, "[{", None, 1.0, None, None, 1)]
    with pytest.raises(SourceError, match=r"state.db, message 1: its tool calls are not JSON"):
        hermes.parse(row, bad, "state.db")
