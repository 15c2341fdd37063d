"""Sessions made by the real CLIs, imported with ``anyy import`` and compared with their files (I1-I3)."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from anyy.domain.entries import Entry, EntryKind
from anyy.profiles import get_profile
from anyy.storage.reads import whole_tree
from anyy.storage.sqlite import SqliteStore
from tests.cli.conftest import Run
from tests.importers.conftest import Made

FORMATS = {"claude": "claude-code", "codex": "codex", "pi": "pi", "acp": "opencode", "hermes": "hermes"}


def _records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def source_counts(name: str, path: Path) -> dict[str, int]:
    """Prompts, tool calls and tool results as the source file holds them, counted apart from the importer."""
    prompts = calls = results = 0
    for record in _records(path):
        if name == "claude":
            if record.get("isSidechain") or record.get("isMeta"):
                continue
            content: Any = (record.get("message") or {}).get("content") or []
            if record.get("type") == "user":
                if isinstance(content, str):
                    prompts += 1
                else:
                    results += sum(1 for b in content if b.get("type") == "tool_result")
                    prompts += int(any(b.get("type") == "text" for b in content))
            elif record.get("type") == "assistant":
                calls += sum(1 for b in content if b.get("type") == "tool_use")
        elif name == "codex":
            item = record.get("payload") or {}
            if record.get("type") != "response_item":
                continue
            if item.get("type") == "message" and item.get("role") == "user":
                prompts += not item["content"][0]["text"].startswith("<")
            calls += item.get("type") == "function_call"
            results += item.get("type") == "function_call_output"
        else:
            message = record.get("message") or {}
            prompts += message.get("role") == "user"
            calls += sum(1 for b in message.get("content") or [] if b.get("type") == "toolCall")
            results += message.get("role") == "toolResult"
    return {"user": prompts, "tool_call": calls, "tool_result": results}


def opencode_sources(path: Path) -> dict[str, dict[str, int]]:
    """Each session of opencode's database with its prompts, tool calls and results, read apart."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        out: dict[str, dict[str, int]] = {}
        for (session_id,) in conn.execute("SELECT id FROM session"):
            roles = [
                json.loads(d)["role"]
                for (d,) in conn.execute("SELECT data FROM message WHERE session_id = ?", (session_id,))
            ]
            parts = [
                json.loads(d) for (d,) in conn.execute("SELECT data FROM part WHERE session_id = ?", (session_id,))
            ]
            tools = [p for p in parts if p["type"] == "tool"]
            done = [p for p in tools if p["state"]["status"] in ("completed", "error")]
            out[session_id] = {"user": roles.count("user"), "tool_call": len(tools), "tool_result": len(done)}
        return out
    finally:
        conn.close()


def hermes_sources(path: Path) -> dict[str, dict[str, int]]:
    """Each Hermes session with its prompts, tool calls and results, read apart."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        out: dict[str, dict[str, int]] = {}
        for (session_id,) in conn.execute("SELECT id FROM sessions"):
            rows = conn.execute("SELECT role, tool_calls FROM messages WHERE session_id = ?", (session_id,)).fetchall()
            calls = sum(len(json.loads(c)) for r, c in rows if r == "assistant" and c)
            roles = [r for r, _ in rows]
            out[session_id] = {"user": roles.count("user"), "tool_call": calls, "tool_result": roles.count("tool")}
        return out
    finally:
        conn.close()


def expected(made: Made) -> dict[str, dict[str, int]]:
    """Source id -> counts, for every session the CLI made."""
    if made.name == "acp":
        return opencode_sources(made.files[0])
    if made.name == "hermes":
        return hermes_sources(made.files[0])
    out: dict[str, dict[str, int]] = {}
    for path in made.files:
        records = _records(path)
        source_id = next(
            str(r.get("sessionId") or r.get("id") or (r.get("payload") or {}).get("id"))
            for r in records
            if r.get("sessionId") or r.get("type") in ("session", "session_meta")
        )
        out[source_id] = source_counts(made.name, path)
    return out


def imported_counts(entries: list[Entry]) -> dict[str, int]:
    return {kind: sum(1 for e in entries if e.kind.label == kind) for kind in ("user", "tool_call", "tool_result")}


def _sessions(home: Path) -> list[tuple[Any, list[Entry]]]:
    profile = get_profile(home, "default")
    store = SqliteStore.open_profile(profile.path, profile=profile.name)
    try:
        listed = store.list_sessions(limit=500).items
        return [(s, whole_tree(store, s.id)) for s in listed]
    finally:
        store.close()


def test_i1_i2_real_sessions_import_as_faithful_trees(made: Made, anyy: Run, home: Path) -> None:
    fmt = FORMATS[made.name]
    result = anyy("import", fmt, *map(str, made.files))
    assert result.exit_code == 0, result.stderr
    sessions = _sessions(home)
    sources = expected(made)
    assert len(sessions) == len(sources)
    by_origin = {s.origin.source: (s, entries) for s, entries in sessions if s.origin is not None}
    for source_id, counts in sources.items():
        session, entries = by_origin[f"{fmt}:{source_id}"]
        # messages and tool-call/result pairs: 100% of the source's
        assert imported_counts(entries) == counts
        calls = {e.data["call_id"]: e for e in entries if e.kind == EntryKind.TOOL_CALL}
        results = {e.data["call_id"]: e for e in entries if e.kind == EntryKind.TOOL_RESULT}
        assert calls.keys() == results.keys()
        for result_entry in results.values():
            assert "hi" in result_entry.text  # the command's real output
            assert result_entry.parent is not None
        for call in calls.values():
            assert "echo hi" in json.dumps(call.data["arguments"])
        answers = [e for e in entries if e.kind == EntryKind.ASSISTANT]
        assert answers
        assert all(a.data.get("model") for a in answers)
        # the workspace is the folder the CLI ran in; the origin is recorded and shown
        assert session.workspace == str(made.workdir)
        assert session.origin.kind == "import"
        first = next(e.text for e in entries if e.kind == EntryKind.USER)
        assert session.title == first.strip()
        listed = anyy("sessions", "list")
        assert f"imported from {fmt}: {source_id}" in listed.stdout
    assert sum(imported_counts(entries)["tool_call"] for _, entries in sessions) >= 1
    # the resumed turn continues the same tree: one linear path from the first prompt
    texts = [e.text for _, entries in sessions for e in entries if e.kind == EntryKind.USER]
    assert any("second prompt" in text for text in texts)  # opencode keeps the prompt in quotes
    if made.name != "hermes":  # a resume goes on in the same session (Hermes's one-shot mode cannot resume)
        assert any(
            {"run echo hi", "second prompt"} <= {e.text.strip('"') for e in entries if e.kind == EntryKind.USER}
            for _, entries in sessions
        )
    if made.name == "claude":  # --fork-session: a second session holding the fork's own turn
        assert any("forked prompt" in text for text in texts)


def test_i3_reimport_adds_nothing_and_reads_only(made: Made, anyy: Run, home: Path, tmp_path: Path) -> None:
    fmt = FORMATS[made.name]
    before = {p: p.read_bytes() for p in made.files}
    stamps = {p: p.stat().st_mtime_ns for p in made.files}
    assert anyy("import", fmt, *map(str, made.files)).exit_code == 0
    first = {s.id: len(entries) for s, entries in _sessions(home)}
    again = anyy("import", fmt, *map(str, made.files))
    assert again.exit_code == 0
    assert "0 entries added" in again.stdout
    assert "already imported" in again.stdout
    assert {s.id: len(entries) for s, entries in _sessions(home)} == first
    assert {p: p.read_bytes() for p in made.files} == before  # read-only on the source
    assert {p: p.stat().st_mtime_ns for p in made.files} == stamps


def test_i3_truncated_file_imports_nothing_and_names_the_line(
    made: Made, anyy: Run, home: Path, tmp_path: Path
) -> None:
    source = made.files[0]
    if made.name in ("acp", "hermes"):  # a database cut short: the whole file refused, with its name
        broken = tmp_path / source.name
        broken.write_bytes(source.read_bytes()[:1000])
        result = anyy("import", FORMATS[made.name], str(broken))
        assert result.exit_code == 1
        assert str(broken) in result.stderr
        assert "Traceback" not in result.stderr
        assert _sessions(home) == []
        return
    lines = source.read_text().splitlines()
    cut = tmp_path / source.name
    cut.write_text("\n".join(lines[:-1]) + "\n" + lines[-1][: len(lines[-1]) // 2])
    result = anyy("import", FORMATS[made.name], str(cut))
    assert result.exit_code == 1
    assert f"{cut}, line {len(lines)}: not a JSON record" in result.stderr
    assert "Traceback" not in result.stderr
    assert _sessions(home) == []


def test_i1_discover_lists_and_imports_each_agents_sessions(made: Made, anyy: Run, home: Path) -> None:
    names = ("HOME", "CLAUDE_CONFIG_DIR", "CODEX_HOME", "PI_CODING_AGENT_DIR", "XDG_DATA_HOME", "HERMES_HOME")
    env = {k: made.env[k] for k in names if k in made.env}
    listed = anyy("import", "--discover", env=env)
    assert listed.exit_code == 0
    for path in made.files:
        assert str(path) in listed.stdout
    assert f"{len(made.files)} session file(s) found" in listed.stderr  # opencode, Hermes: one database
    assert _sessions(home) == []  # listing imports nothing
    taken = anyy("import", "--discover", "--all", env=env)
    assert taken.exit_code == 0, taken.stderr
    assert len(_sessions(home)) == len(expected(made))


def test_i2_i3_pi_branch_kept_and_grown_source_adds_only_new(made: Made, anyy: Run, home: Path, tmp_path: Path) -> None:
    if made.name != "pi":
        pytest.skip("pi keeps every branch in its session file")
    copy = tmp_path / "s.jsonl"
    shutil.copy(made.files[0], copy)
    assert anyy("import", "pi", str(copy)).exit_code == 0
    records = _records(copy)
    first_answer = next(r for r in records if (r.get("message") or {}).get("stopReason") == "stop")
    # the person went back to the first answer and asked something else (pi's /tree): a second branch
    branch = {
        "type": "message",
        "id": "b0000001",
        "parentId": first_answer["id"],
        "timestamp": "2026-12-07T05:00:00.000Z",
        "message": {"role": "user", "content": [{"type": "text", "text": "another way"}], "timestamp": 1},
    }
    with copy.open("a") as handle:
        handle.write(json.dumps(branch) + "\n")
    grown = anyy("import", "pi", str(copy))
    assert grown.exit_code == 0
    assert "1 entries added" in grown.stdout
    [(session, entries)] = _sessions(home)
    leaves = [e for e in entries if not any(c.parent == e.id for c in entries)]
    assert sorted(e.text for e in leaves if e.kind == EntryKind.USER) == ["another way"]
    assert len(leaves) == 2
    assert session.head == next(e.id for e in entries if e.text == "another way")  # where the source is now
