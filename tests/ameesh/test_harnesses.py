"""The harness interface: timeouts, output judged beyond the exit code, the Claude Code adapter."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from ameesh.harnesses import TurnRequest, play
from ameesh.harnesses.claude import ClaudeHarness, transcript_path
from ameesh.harnesses.fake import FakeHarness
from tests.ameesh.conftest import Ameesh

SAMPLES = Path(__file__).parent / "samples"


def test_h11_a_hanging_turn_times_out_and_a_failing_harness_raises_an_alert(ameesh: Ameesh) -> None:
    # Long enough for an ordinary fake turn on a loaded machine; the hanging one is cut at this limit.
    ameesh.monkeypatch.setenv("AMEESH_SESSION_TURN_TIMEOUT", "3")
    ameesh.script(
        {"match": "slow", "times": 1, "hang": True},
        {"match": "garbage", "stdout": "not json at all\n"},
    )
    ameesh.add("bob")
    ameesh("send", "bob", "slow")
    ameesh("send", "bob", "garbage")
    result = ameesh("run", ok=False)
    assert result.exit_code == 4  # a message failed for good
    assert "1 message(s) failed for good" in result.output
    turns = ameesh.registry().turns("bob")
    assert [t.outcome for t in turns] == ["timeout", "ok", "failed", "failed", "failed"]
    assert "no answer within 3 s" in (turns[0].error or "")
    assert "no result (exit 0)" in (turns[2].error or "")  # exit 0, but no result: a failure
    [alert] = ameesh.json("alerts", "bob")
    assert alert["kind"] == "harness_failing"


def test_h11_a_missing_workdir_blocks_the_agent_with_an_alert(ameesh: Ameesh) -> None:
    ameesh.add("bob")
    ameesh.work.rmdir()
    ameesh("send", "bob", "one")
    result = ameesh("run", ok=False)
    assert result.exit_code == 3
    assert [a["kind"] for a in ameesh.json("alerts")] == ["workdir_missing"]
    assert ameesh.json("status")["waiting"] == 1


def test_h1_claude_adapter_first_turn_creates_later_turns_resume(tmp_path: Path) -> None:
    harness = ClaudeHarness("claude")
    first = harness.command(TurnRequest("hi", tmp_path, "u1", True, model="m", effort="high"))
    later = harness.command(TurnRequest("hi", tmp_path, "u1", False, model="m", effort="high"))
    assert first[first.index("--session-id") + 1] == "u1"
    assert later[later.index("--resume") + 1] == "u1"
    for argv in (first, later):
        assert argv[argv.index("--model") + 1] == "m"
        assert argv[argv.index("--effort") + 1] == "high"


def test_h5_claude_context_is_the_last_assistant_usage(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    harness = ClaudeHarness()
    request = TurnRequest("hi", tmp_path, "5d672017-5e59-4ce7-b7f8-70924de64916", False)
    stream = (SAMPLES / "claude2.jsonl").read_text(encoding="utf-8")
    result = harness.parse(request, 0, stream, "")
    assert result.ok
    assert result.text.startswith("RESUMED: I remember PINEAPPLE-42")
    assert result.context_tokens == 19111
    # The json format has no assistant events: the transcript gives the context.
    single = (SAMPLES / "claude1.json").read_text(encoding="utf-8")
    assert harness.parse(request, 0, single, "").context_tokens is None
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude-config"))
    path = transcript_path(request.session_id or "", tmp_path)
    path.parent.mkdir(parents=True)
    path.write_text(stream, encoding="utf-8")
    assert harness.parse(request, 0, single, "").context_tokens == 19111
    assert harness.session_exists(request.session_id or "", tmp_path)


def test_h11_claude_is_error_is_a_failure_whatever_the_exit_code(tmp_path: Path) -> None:
    harness = ClaudeHarness()
    request = TurnRequest("hi", tmp_path, "u1", False)
    line = '{"type":"result","subtype":"success","is_error":true,"result":"API Error: 500","session_id":"u1"}'
    result = harness.parse(request, 0, line, "")
    assert result.outcome == "failed"
    assert "API Error: 500" in (result.error or "")
    assert harness.parse(request, 1, "", "No conversation found").outcome == "failed"


class _ClaudeThroughFake(ClaudeHarness):
    """Claude's parser over the fake program replaying a captured sample."""

    def command(self, request: TurnRequest) -> list[str]:
        return FakeHarness().command(request)

    def environment(self) -> dict[str, str]:
        return FakeHarness().environment()


def test_h11_claude_sample_through_the_fake_program(ameesh: Ameesh) -> None:
    ameesh.script({"stdout_file": str(SAMPLES / "claude2.jsonl")})
    request = TurnRequest("hi", ameesh.work, "5d672017-5e59-4ce7-b7f8-70924de64916", False, timeout=30)
    result = asyncio.run(play(_ClaudeThroughFake(), request))
    assert result.ok, result.error
    assert result.session_id == "5d672017-5e59-4ce7-b7f8-70924de64916"
    assert result.context_tokens == 19111


def test_h2_a_turn_whose_process_cannot_be_recorded_does_not_run_on(ameesh: Ameesh) -> None:
    """If the runner cannot note the turn's process (to end it after a crash), the process is ended at once."""
    ameesh.script({"match": "hang", "hang": True})
    started: list[int] = []

    def refuse(pid: int) -> None:
        started.append(pid)
        raise OSError(28, "No space left on device")

    request = TurnRequest(prompt="hang", cwd=ameesh.work, session_id=None, new_session=True, timeout=60)
    with pytest.raises(OSError, match="No space left"):
        asyncio.run(play(FakeHarness(), request, on_start=refuse))
    (pid,) = started
    with pytest.raises(ProcessLookupError):
        os.killpg(pid, 0)
