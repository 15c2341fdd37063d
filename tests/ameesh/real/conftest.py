"""The real harness CLIs (Claude Code, Codex CLI, pi at the versions pinned in scripts/setup-harnesses),
each pointed at our fake model server on 127.0.0.1 and isolated in the test's own directories.

``scripts/setup-harnesses`` (which .ci/run calls) installs them once per machine and prints where; without
them (no npm, no registry) these tests skip, naming the reason.
"""

from __future__ import annotations

import functools
import json
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.ameesh.conftest import Ameesh
from tests.fakes.harness_replies import ConversationResponder, user_prompts
from tests.fakes.model_server import FakeModelServer, Received

ROOT = Path(__file__).resolve().parents[3]
HARNESSES = ("claude", "codex", "pi")
MODELS = {"claude": "claude-fake-model", "codex": "fake-model", "pi": "fake/fake-model"}
TURN_TIMEOUT = "180"  # a generous bound for a loaded 2-core machine; a turn here takes 1-4 s


@functools.cache
def harness_bin() -> Path | None:
    """Where the pinned CLIs are (the setup script is idempotent: ~1 s when they are installed)."""
    done = subprocess.run(
        ["bash", str(ROOT / "scripts" / "setup-harnesses")], capture_output=True, text=True, check=False
    )
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        return None
    directory = Path(lines[-1]) / "node_modules" / ".bin"
    return directory if all((directory / name).exists() for name in HARNESSES) else None


@dataclass
class Real:
    """One real harness set up for a test: its name, the model server it talks to, the ameesh commands."""

    name: str
    server: FakeModelServer
    responder: ConversationResponder
    ameesh: Ameesh
    workdir: Path

    @property
    def model(self) -> str:
        return MODELS[self.name]

    def add(self, agent: str, *, policy: str = "", workdir: Path | None = None) -> None:
        self.ameesh("add", agent, "--harness", self.name, "--dir", str(workdir or self.workdir))
        self.ameesh("set", agent, f"model={self.model}", f"session_policy={policy}")

    def turns(self) -> list[Received]:
        """The model calls that carried a prompt (a harness may make other calls of its own)."""
        return [r for r in self.server.received if user_prompts(r.body)]


def git(cwd: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.org", *args], cwd=cwd, check=True, capture_output=True
    )


@pytest.fixture(params=HARNESSES)
def real(request: pytest.FixtureRequest, ameesh: Ameesh, tmp_path: Path) -> Iterator[Real]:
    bin_dir = harness_bin()
    if bin_dir is None:
        pytest.skip("the real harness CLIs are not installed (scripts/setup-harnesses could not install them)")
    name: str = request.param
    responder = ConversationResponder(tokens_per_prompt=1000)
    server = FakeModelServer(responder)
    server.start()
    env = ameesh.monkeypatch.setenv
    home = tmp_path / "user-home"
    home.mkdir()
    env("HOME", str(home))
    env("AMEESH_SESSION_TURN_TIMEOUT", TURN_TIMEOUT)
    if name == "claude":
        env("AMEESH_CLAUDE_BIN", str(bin_dir / "claude"))
        env("ANTHROPIC_BASE_URL", server.anthropic_url)
        env("ANTHROPIC_API_KEY", "sk-ant-test-key")
        env("CLAUDE_CONFIG_DIR", str(home / ".claude"))
        for var in ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "DISABLE_TELEMETRY", "DISABLE_AUTOUPDATER"):
            env(var, "1")
        env("DISABLE_ERROR_REPORTING", "1")
        env("CLAUDE_CODE_MAX_RETRIES", "1")
    elif name == "codex":
        codex_home = home / ".codex"
        codex_home.mkdir()
        (codex_home / "config.toml").write_text(
            'model_provider = "fake"\n'
            f'model = "{MODELS["codex"]}"\n'
            "[model_providers.fake]\n"
            'name = "fake"\n'
            f'base_url = "{server.openai_url}"\n'
            'env_key = "FAKE_MODEL_API_KEY"\n'
            'wire_api = "responses"\n',
            encoding="utf-8",
        )
        env("AMEESH_CODEX_BIN", str(bin_dir / "codex"))
        env("CODEX_HOME", str(codex_home))
        env("FAKE_MODEL_API_KEY", "sk-test-key")
    else:
        agent_dir = home / ".pi" / "agent"
        agent_dir.mkdir(parents=True)
        provider = {"baseUrl": server.openai_url, "api": "openai-completions", "apiKey": "sk-test-key"}
        models = {"providers": {"fake": {**provider, "models": [{"id": MODELS["pi"].split("/")[1]}]}}}
        (agent_dir / "models.json").write_text(json.dumps(models), encoding="utf-8")
        env("AMEESH_PI_BIN", str(bin_dir / "pi"))
        env("PI_CODING_AGENT_DIR", str(agent_dir))
    trees = tmp_path / "trees"
    workdir = trees / "main"
    workdir.mkdir(parents=True)
    git(workdir, "init", "-q", "-b", "main")
    git(workdir, "commit", "-q", "--allow-empty", "-m", "start")
    try:
        yield Real(name=name, server=server, responder=responder, ameesh=ameesh, workdir=workdir)
    finally:
        server.stop()
