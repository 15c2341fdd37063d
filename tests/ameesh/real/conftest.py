"""The real harness CLIs (Claude Code, Codex CLI, pi, DeepSeek Harness at the versions pinned in
scripts/setup-harnesses), each pointed at our fake model server on 127.0.0.1 and isolated in the test's
own directories (tests/fakes/harness_env.py).

``scripts/setup-harnesses`` (which .ci/run calls) installs them once per machine and prints where; without
them (no npm, no registry) these tests skip, naming the reason; in CI they fail unless
``ANYY_TEST_ALLOW_SKIP=harnesses`` (tests/fakes/prerequisites.py).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.ameesh.conftest import Ameesh
from tests.fakes.harness_env import HARNESSES, MODELS, harness_bin, harness_env
from tests.fakes.harness_replies import ConversationResponder, user_prompts
from tests.fakes.model_server import FakeModelServer, Received

TURN_TIMEOUT = "180"  # a generous bound for a loaded 2-core machine; a turn here takes 1-4 s


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
    name: str = request.param
    bin_dir = harness_bin(name)
    if bin_dir is None:
        why = f"{name} is not installed (scripts/setup-harnesses could not install it)"
        if name in {"dsh", "acp"} and os.environ.get("CI"):
            pytest.fail(why)  # a missing prerequisite fails CI
        pytest.skip(why)
    responder = ConversationResponder(tokens_per_prompt=1000)
    server = FakeModelServer(responder)
    server.start()
    home = tmp_path / "user-home"
    home.mkdir()
    for var, value in harness_env(name, server, home, bin_dir).items():
        ameesh.monkeypatch.setenv(var, value)
    ameesh.monkeypatch.setenv("AMEESH_SESSION_TURN_TIMEOUT", TURN_TIMEOUT)
    trees = tmp_path / "trees"
    workdir = trees / "main"
    workdir.mkdir(parents=True)
    git(workdir, "init", "-q", "-b", "main")
    git(workdir, "commit", "-q", "--allow-empty", "-m", "start")
    try:
        yield Real(name=name, server=server, responder=responder, ameesh=ameesh, workdir=workdir)
    finally:
        server.stop()
