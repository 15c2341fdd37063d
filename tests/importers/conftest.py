"""Sessions made by the real harness CLIs (Claude Code, Codex CLI, pi at the versions scripts/setup-harnesses
pins), offline against the fake model server, in the test's own home: what ``anyy import`` reads."""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.cli.conftest import anyy  # noqa: F401  (the in-process CLI, for the tests here)
from tests.fakes.harness_env import harness_bin, harness_env
from tests.fakes.model_server import FakeModelServer, Reply, ToolCall
from tests.fakes.prerequisites import missing

TIMEOUT = 180


@dataclass
class Made:
    """What a real CLI left on disk: its session files, the home it wrote them under, the folder it ran in."""

    name: str
    home: Path
    workdir: Path
    files: list[Path]
    env: dict[str, str]


def _run(args: list[str], workdir: Path, env: dict[str, str]) -> str:
    done = subprocess.run(
        args,
        cwd=workdir,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


ROOT = Path(__file__).resolve().parents[2]


def hermes_bin() -> Path | None:
    """Hermes Agent's environment, from scripts/setup-hermes (idempotent: ~1 s when installed)."""
    done = subprocess.run(["bash", str(ROOT / "scripts" / "setup-hermes")], capture_output=True, text=True, check=False)
    lines = done.stdout.strip().splitlines()
    return Path(lines[-1]) if done.returncode == 0 and lines and (Path(lines[-1]) / "hermes").exists() else None


def make_sessions(name: str, tmp_path: Path) -> Made:
    """Two turns with a tool call in the first, the second a resume; Claude Code also forks the session."""
    bin_dir = hermes_bin() if name == "hermes" else harness_bin(name)
    if bin_dir is None:
        missing("harnesses", f"{name} is not installed (scripts/setup-harnesses could not install it)")
    server = FakeModelServer()
    server.start()
    home = tmp_path / f"{name}-home"
    home.mkdir()
    workdir = tmp_path / f"{name}-work"
    workdir.mkdir()
    env = dict(os.environ) | (
        hermes_env(server, home) if name == "hermes" else harness_env(name, server, home, bin_dir)
    )
    exe = str(bin_dir / ("opencode" if name == "acp" else name))
    try:
        if name == "claude":
            server.enqueue(
                Reply(
                    thinking=["I will run it"], tool_calls=[ToolCall("Bash", {"command": "echo hi"}, call_id="toolu_1")]
                ),
                Reply(text=["done: hi"]),
                Reply(text=["second answer"]),
                Reply(text=["fork answer"]),
            )
            sid = str(uuid.uuid4())
            base = [exe, "-p", "--model", "claude-fake-model", "--output-format", "json"]
            _run([*base, "run echo hi", "--session-id", sid, "--allowedTools", "Bash"], workdir, env)
            _run([*base, "second prompt", "--resume", sid], workdir, env)
            _run([*base, "forked prompt", "--resume", sid, "--fork-session"], workdir, env)
            files = sorted((home / ".claude" / "projects").glob("*/*.jsonl"))
        elif name == "codex":
            server.enqueue(
                Reply(tool_calls=[ToolCall("exec_command", {"cmd": "echo hi"}, call_id="call_1")]),
                Reply(text=["done: hi"]),
                Reply(text=["second answer"]),
            )
            flags = [
                "--json",
                "-m",
                "fake-model",
                "--skip-git-repo-check",
                "--dangerously-bypass-approvals-and-sandbox",
            ]
            out = _run([exe, "exec", *flags, "run echo hi"], workdir, env)
            thread = json.loads(out.splitlines()[0])["thread_id"]
            _run([exe, "exec", "resume", *flags, thread, "second prompt"], workdir, env)
            files = sorted((home / ".codex" / "sessions").rglob("rollout-*.jsonl"))
        elif name == "hermes":
            server.enqueue(
                Reply(tool_calls=[ToolCall("terminal", {"command": "echo hi"}, call_id="call_1")]),
                Reply(text=["done: hi"]),
                Reply(text=["second answer"]),
            )
            env["PWD"] = str(workdir)
            base = [exe, "--yolo", "--provider", "custom", "-m", "fake-model"]
            _run([*base, "-z", "run echo hi"], workdir, env)
            # Hermes's one-shot mode (-z) always starts a new session (--resume is not honoured there): a
            # second session
            _run([*base, "-z", "second prompt"], workdir, env)
            state = home / ".hermes" / "state.db"
            files = [state]
        elif name == "acp":  # opencode: its sessions are rows of one SQLite database
            server.enqueue(
                Reply(tool_calls=[ToolCall("bash", {"command": "echo hi", "description": "say hi"}, call_id="call_1")]),
                Reply(text=["done: hi"]),
                Reply(text=["second answer"]),
            )
            env["PWD"] = str(workdir)  # opencode takes its folder from PWD
            _run([exe, "run", "run echo hi"], workdir, env)
            _run([exe, "run", "--continue", "second prompt"], workdir, env)
            files = [home / ".local" / "share" / "opencode" / "opencode.db"]
        else:
            server.enqueue(
                Reply(tool_calls=[ToolCall("bash", {"command": "echo hi"}, call_id="call_1")]),
                Reply(text=["done: hi"]),
                Reply(text=["second answer"]),
            )
            session_file = home / ".pi" / "agent" / "sessions" / "project" / "s.jsonl"
            session_file.parent.mkdir(parents=True)
            base = [exe, "-p", "--mode", "json", "--model", "fake/fake-model", "--session", str(session_file)]
            _run([*base, "run echo hi"], workdir, env)
            _run([*base, "second prompt"], workdir, env)
            files = [session_file]
    finally:
        server.stop()
    return Made(name=name, home=home, workdir=workdir, files=files, env=env)


def hermes_env(server: FakeModelServer, home: Path) -> dict[str, str]:
    """Hermes pointed at the fake server: a custom OpenAI-compatible provider in its home's config.yaml."""
    hermes_home = home / ".hermes"
    hermes_home.mkdir()
    (hermes_home / "config.yaml").write_text(
        f"model:\n  provider: custom\n  default: fake-model\n  base_url: {server.openai_url}\n  api_key: sk-test\n",
        encoding="utf-8",
    )
    return {"HOME": str(home), "HERMES_HOME": str(hermes_home), "OPENAI_API_KEY": "sk-test"}


_made: dict[str, Made] = {}


@pytest.fixture(scope="module")
def made_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("harness-sessions")


@pytest.fixture(params=["claude", "codex", "pi", "acp", "hermes"])
def made(request: pytest.FixtureRequest, made_dir: Path) -> Made:
    """Each CLI's sessions, made once per module (a CLI takes seconds) and read by several tests."""
    name: str = request.param
    if name not in _made:
        _made[name] = make_sessions(name, made_dir)
    return _made[name]
