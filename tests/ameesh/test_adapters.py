"""The Codex, pi and anyy adapters: command lines, captured outputs replayed, failures judged by the output."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

from ameesh import paths
from ameesh.harnesses import Harness, TurnRequest, TurnResult, play
from ameesh.harnesses.anyy import AnyyHarness
from ameesh.harnesses.claude import ClaudeHarness
from ameesh.harnesses.codex import CodexHarness
from ameesh.harnesses.fake import FakeHarness
from ameesh.harnesses.pi import PiHarness
from tests.ameesh.conftest import Ameesh

SAMPLES = Path(__file__).parent / "samples"
THREAD = "01a22bc1-03ef-7380-8177-4b04e164078b"


def _through_fake(adapter: Harness, request: TurnRequest) -> TurnResult:
    """Run the fake program (which replays the scripted stdout) and judge it with ``adapter``'s parser."""

    class Replay:
        name = adapter.name
        new_session_id = adapter.new_session_id
        session_exists = adapter.session_exists
        parse = adapter.parse
        session_in = adapter.session_in
        attach_command = adapter.attach_command
        follow_move = adapter.follow_move
        fatal_in = adapter.fatal_in
        prepare_retry = adapter.prepare_retry

        def command(self, request: TurnRequest) -> list[str]:
            return FakeHarness().command(request)

        def environment(self) -> dict[str, str]:
            return FakeHarness().environment()

    return asyncio.run(play(Replay(), request))


def _fake_cli(tmp_path: Path, name: str, body: str) -> Path:
    """A stand-in executable for a real CLI: logs its argv to ``name.log`` and runs ``body``."""
    path = tmp_path / name
    log = tmp_path / f"{name}.log"
    path.write_text(
        f"#!{sys.executable}\nimport json, sys\nfrom pathlib import Path\n"
        f"with open({str(log)!r}, 'a') as f:\n    f.write(json.dumps(sys.argv[1:]) + '\\n')\n{body}",
        encoding="utf-8",
    )
    path.chmod(0o755)
    return path


def _argv_log(tmp_path: Path, name: str) -> list[list[str]]:
    return [json.loads(line) for line in (tmp_path / f"{name}.log").read_text(encoding="utf-8").splitlines()]


# -- Codex -------------------------------------------------------------------------------------------


def test_h1_codex_command_lines_start_then_resume_with_model_and_effort_every_turn(tmp_path: Path) -> None:
    harness = CodexHarness("codex")
    first = harness.command(TurnRequest("do it", tmp_path, None, True, model="gpt-x", effort="high"))
    later = harness.command(TurnRequest("again", tmp_path, THREAD, False, model="gpt-x", effort="high"))
    assert first == ["codex", "exec", "--json", "-m", "gpt-x", "-c", 'model_reasoning_effort="high"', "do it"]
    assert later == [
        "codex",
        "exec",
        "resume",
        "--json",
        "-m",
        "gpt-x",
        "-c",
        'model_reasoning_effort="high"',
        THREAD,
        "again",
    ]
    assert harness.new_session_id() is None
    assert harness.attach_command(THREAD, tmp_path) == ["codex", "resume", THREAD]


def test_h1_codex_samples_through_the_fake_program(ameesh: Ameesh) -> None:
    ameesh.monkeypatch.setenv("CODEX_HOME", str(ameesh.root / "no-codex"))
    ameesh.script({"times": 1, "stdout_file": str(SAMPLES / "codex1.jsonl")})
    first = _through_fake(CodexHarness(), TurnRequest("hi", ameesh.work, None, True, timeout=30))
    assert first.ok, first.error
    assert first.session_id == THREAD
    assert first.text == "FRESH: noted (4 items)"  # the item of type error before the turn is not fatal
    assert first.context_tokens == 10124  # no rollout file: the turn's usage
    ameesh.script({"stdout_file": str(SAMPLES / "codex2.jsonl")})
    second = _through_fake(CodexHarness(), TurnRequest("hi", ameesh.work, THREAD, False, timeout=30))
    assert second.ok
    assert second.session_id == THREAD
    assert second.text.startswith("RESUMED: I remember PINEAPPLE-42")


def test_h5_codex_context_comes_from_the_rollout_not_the_cumulative_usage(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CODEX_HOME", str(tmp_path))
    rollout = tmp_path / "sessions" / "2026" / "11" / "30" / f"rollout-2026-11-30T09-20-01-{THREAD}.jsonl"
    rollout.parent.mkdir(parents=True)
    events = [
        {"type": "session_meta", "payload": {"id": THREAD}},
        {"type": "event_msg", "payload": {"type": "token_count", "info": {"last_token_usage": {"input_tokens": 9}}}},
        {"type": "event_msg", "payload": {"type": "token_count", "info": None}},
        {
            "type": "event_msg",
            "payload": {"type": "token_count", "info": {"last_token_usage": {"input_tokens": 10210}}},
        },
    ]
    rollout.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    harness = CodexHarness()
    result = harness.parse(
        TurnRequest("hi", tmp_path, THREAD, False), 0, (SAMPLES / "codex2.jsonl").read_text(encoding="utf-8"), ""
    )
    assert result.ok
    assert result.usage["input_tokens"] == 20334  # cumulative over the thread
    assert result.context_tokens == 10210
    assert harness.session_exists(THREAD, tmp_path)
    assert not harness.session_exists("other", tmp_path)


def test_h11_codex_error_event_or_missing_turn_completed_is_a_failed_turn(tmp_path: Path) -> None:
    harness = CodexHarness()
    request = TurnRequest("hi", tmp_path, None, True)
    started = f'{{"type":"thread.started","thread_id":"{THREAD}"}}\n{{"type":"turn.started"}}\n'
    error = harness.parse(request, 0, started + '{"type":"error","message":"stream disconnected"}\n', "")
    assert error.outcome == "failed"
    assert "stream disconnected" in (error.error or "")
    assert error.session_id == THREAD  # the thread exists: the next try resumes it
    cut = harness.parse(request, 0, started + "Reconnecting... waiting for network\n", "")
    assert cut.outcome == "failed"
    assert "no turn.completed" in (cut.error or "")
    failed = harness.parse(request, 0, started + '{"type":"turn.failed","error":{"message":"quota"}}\n', "")
    assert failed.outcome == "failed"
    assert "quota" in (failed.error or "")


def test_h1_codex_agent_resumes_its_thread_through_ameesh(ameesh: Ameesh, tmp_path: Path) -> None:
    body = (
        f"sample = 'codex2.jsonl' if 'resume' in sys.argv else 'codex1.jsonl'\n"
        f"sys.stdout.write(Path({str(SAMPLES)!r}, sample).read_text())\n"
    )
    ameesh.monkeypatch.setenv("AMEESH_CODEX_BIN", str(_fake_cli(tmp_path, "codex", body)))
    ameesh.monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex-home"))
    ameesh("add", "cody", "--harness", "codex", "--dir", str(ameesh.work))
    ameesh("set", "cody", "model=gpt-x", "effort=high")
    ameesh("send", "cody", "remember PINEAPPLE-42")
    ameesh("send", "cody", "which word?")
    ameesh("run")
    assert ameesh.json("show", "cody")["session_id"] == THREAD
    first, second = _argv_log(tmp_path, "codex")
    assert first[:2] == ["exec", "--json"]
    assert THREAD not in first
    assert second[:3] == ["exec", "resume", "--json"]
    assert second[-2:] == [THREAD, "which word?"]
    for argv in (first, second):
        assert argv[argv.index("-m") + 1] == "gpt-x"
        assert argv[argv.index("-c") + 1] == 'model_reasoning_effort="high"'
    assert ameesh.answers("cody")[1].startswith("RESUMED: I remember PINEAPPLE-42")
    assert [s["session_id"] for s in ameesh.json("sessions", "cody")] == [THREAD]


# -- pi ----------------------------------------------------------------------------------------------


def test_h1_pi_command_line_owns_the_session_file(tmp_path: Path) -> None:
    harness = PiHarness(tmp_path / "state" / "pi-sessions", "pi")
    argv = harness.command(TurnRequest("hi", tmp_path, "s1", True, model="prov/m1", effort="high"))
    path = tmp_path / "state" / "pi-sessions" / "s1.jsonl"
    assert argv == [
        "pi",
        "-p",
        "--mode",
        "json",
        "--model",
        "prov/m1",
        "--thinking",
        "high",
        "--session",
        str(path),
        "hi",
    ]
    assert argv == harness.command(TurnRequest("hi", tmp_path, "s1", False, model="prov/m1", effort="high"))
    assert harness.attach_command("s1", tmp_path) == ["pi", "--session", str(path)]
    assert not harness.session_exists("s1", tmp_path)
    path.write_text("{}\n", encoding="utf-8")
    assert harness.session_exists("s1", tmp_path)


def test_h1_pi_samples_through_the_fake_program(ameesh: Ameesh) -> None:
    harness = PiHarness(ameesh.root / "pi")
    for sample, start in (("pi1.jsonl", "FRESH: noted"), ("pi2.jsonl", "RESUMED: I remember PINEAPPLE-42")):
        ameesh.script({"stdout_file": str(SAMPLES / sample)})
        result = _through_fake(harness, TurnRequest("hi", ameesh.work, "s1", sample == "pi1.jsonl", timeout=30))
        assert result.ok, result.error
        assert result.session_id == "s1"  # ameesh's id for the file, not pi's own
        assert result.text.startswith(start)
        assert result.usage["pi_session_id"] == "01a22bc1-0c82-75d9-b1f2-bc7ca455427d"
    assert result.context_tokens == 1446


def test_h11_pi_stop_reason_error_is_a_failed_turn_despite_exit_0(ameesh: Ameesh) -> None:
    lines = (SAMPLES / "pi1.jsonl").read_text(encoding="utf-8").splitlines()
    broken = [
        line.replace('"stopReason":"stop"', '"stopReason":"error","errorMessage":"502 Bad Gateway"') for line in lines
    ]
    ameesh.script({"stdout": "\n".join(broken) + "\n", "exit": 0})
    result = _through_fake(PiHarness(ameesh.root / "pi"), TurnRequest("hi", ameesh.work, "s1", True, timeout=30))
    assert result.outcome == "failed"
    assert "502 Bad Gateway" in (result.error or "")
    ameesh.script({"stdout": lines[0] + "\n", "exit": 0})  # the session line and nothing else
    empty = _through_fake(PiHarness(ameesh.root / "pi"), TurnRequest("hi", ameesh.work, "s1", True, timeout=30))
    assert empty.outcome == "failed"


def test_h2_pi_agent_keeps_one_session_file_in_its_state_dir(ameesh: Ameesh, tmp_path: Path) -> None:
    body = (
        "path = Path(sys.argv[sys.argv.index('--session') + 1])\n"
        "sample = 'pi2.jsonl' if path.exists() else 'pi1.jsonl'\n"
        "path.write_text('session')\n"
        f"sys.stdout.write(Path({str(SAMPLES)!r}, sample).read_text())\n"
    )
    ameesh.monkeypatch.setenv("AMEESH_PI_BIN", str(_fake_cli(tmp_path, "pi", body)))
    ameesh("add", "pia", "--harness", "pi", "--dir", str(ameesh.work))
    ameesh("set", "pia", "model=prov/m1")
    ameesh("send", "pia", "remember PINEAPPLE-42")
    ameesh("send", "pia", "which word?")
    ameesh("run")
    sid = ameesh.json("show", "pia")["session_id"]
    expected = str(paths.agent_dir(ameesh.root, "pia") / "pi-sessions" / f"{sid}.jsonl")
    first, second = _argv_log(tmp_path, "pi")
    for argv in (first, second):
        assert argv[argv.index("--session") + 1] == expected
        assert argv[argv.index("--model") + 1] == "prov/m1"
    assert ameesh.answers("pia")[1].startswith("RESUMED: I remember PINEAPPLE-42")


# -- anyy --------------------------------------------------------------------------------------------


def test_h1_anyy_command_lines_first_turn_without_session_then_with_it(tmp_path: Path) -> None:
    harness = AnyyHarness("anyy")
    assert harness.new_session_id() is None
    first = harness.command(TurnRequest("hi", tmp_path, None, True, model="work"))
    later = harness.command(TurnRequest("again", tmp_path, "S1", False, model="work"))
    assert first == ["anyy", "chat", "--profile", "work", "--json", "hi"]
    assert later == ["anyy", "chat", "--profile", "work", "--session", "S1", "--json", "again"]
    assert harness.attach_command("S1", tmp_path) == ["anyy", "--resume", "S1"]


@pytest.mark.parametrize(
    ("code", "result", "outcome", "word"),
    [
        (3, "suspended", "failed", "suspended"),
        (4, "failed", "failed", "failed"),
        (5, "interrupted", "failed", "interrupted"),
        (6, "cleared", "failed", "cleared"),
        (7, "timeout", "timeout", "timeout"),
    ],
)
def test_h11_anyy_exit_codes_are_judged(ameesh: Ameesh, code: int, result: str, outcome: str, word: str) -> None:
    record = {"session_id": "S1", "submission": {"id": "x", "state": result}, "result": result, "exit_code": code}
    ameesh.script({"stdout": json.dumps(record, indent=2) + "\n", "exit": code})
    judged = _through_fake(AnyyHarness(), TurnRequest("hi", ameesh.work, "S1", False, timeout=30))
    assert judged.outcome == outcome
    assert judged.session_id == "S1"
    assert word in (judged.error or "")


def test_h1_anyy_completed_turn_reports_the_session_and_no_context_when_anyy_says_none(ameesh: Ameesh) -> None:
    record = {"session_id": "S9", "result": "completed", "response": "hello", "passes": 1, "exit_code": 0}
    ameesh.script({"stdout": json.dumps(record, indent=2) + "\n"})  # an anyy without context_tokens
    judged = _through_fake(AnyyHarness(), TurnRequest("hi", ameesh.work, None, True, timeout=30))
    assert judged.ok, judged.error
    assert (judged.session_id, judged.text, judged.context_tokens) == ("S9", "hello", None)


@pytest.mark.parametrize(
    ("effort", "claude", "codex", "pi"),
    [
        ("minimal", "low", "minimal", "minimal"),  # Claude Code ignores minimal (with a warning): low is nearest
        ("medium", "medium", "medium", "medium"),
        ("xhigh", "xhigh", "xhigh", "xhigh"),
        ("max", "max", "xhigh", "xhigh"),  # pi warns and ignores max; the API behind Codex stops at xhigh
    ],
)
def test_h10_effort_is_passed_on_each_harness_scale(
    tmp_path: Path, effort: str, claude: str, codex: str, pi: str
) -> None:
    def flag(argv: list[str], name: str) -> str:
        return argv[argv.index(name) + 1]

    request = TurnRequest("hi", tmp_path, "s1", False, model="m", effort=effort)
    assert flag(ClaudeHarness("claude").command(request), "--effort") == claude
    assert flag(CodexHarness("codex").command(request), "-c") == f'model_reasoning_effort="{codex}"'
    assert flag(PiHarness(tmp_path / "pi", "pi").command(request), "--thinking") == pi
