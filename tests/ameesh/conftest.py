from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from ameesh import paths
from ameesh.cli import main
from ameesh.registry import Registry


class Ameesh:
    """Runs ``ameesh`` commands in-process against a private AMEESH_HOME."""

    def __init__(self, root: Path, work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.root = root
        self.work = work
        self.monkeypatch = monkeypatch
        self.runner = CliRunner()

    def __call__(self, *args: str, ok: bool = True) -> Result:
        result = self.runner.invoke(main, list(args), catch_exceptions=False)
        if ok:
            assert result.exit_code == 0, result.output
        return result

    def json(self, *args: str) -> Any:
        return json.loads(self(*args, "--json").output)

    def registry(self) -> Registry:
        return Registry(paths.registry_path(self.root))

    def script(self, *rules: dict[str, Any]) -> None:
        path = self.root.parent / "script.json"
        path.write_text(json.dumps({"rules": list(rules)}), encoding="utf-8")
        self.monkeypatch.setenv("FAKE_HARNESS_SCRIPT", str(path))

    def calls(self) -> list[dict[str, Any]]:
        log = self.root / "fake-harness" / "calls.jsonl"
        if not log.exists():
            return []
        return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]

    def add(self, name: str, *extra: str) -> None:
        self("add", name, "--harness", "fake", "--dir", str(self.work), *extra)

    def answers(self, name: str) -> list[str]:
        return [i["text"] for i in self.json("thread", name) if i["kind"] == "answer"]


@pytest.fixture
def ameesh(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Ameesh:
    root = tmp_path / "home"
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.setenv("AMEESH_HOME", str(root))
    monkeypatch.chdir(tmp_path)
    for var in (
        "AMEESH_CANON",
        "AMEESH_SESSION_POLICY",
        "AMEESH_SESSION_MAX_TOKENS",
        "AMEESH_SESSION_MAX_TURN_SECONDS",
        "AMEESH_SESSION_MIN_TURNS",
        "AMEESH_SESSION_ALERT_TOKENS",
        "AMEESH_SESSION_TURN_TIMEOUT",
        "AMEESH_SESSION_MAX_ATTEMPTS",
        "FAKE_HARNESS_HOME",
        "FAKE_HARNESS_SCRIPT",
    ):
        monkeypatch.delenv(var, raising=False)
    return Ameesh(root, work, monkeypatch)
