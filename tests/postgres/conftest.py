"""Fixtures of the PostgreSQL backend's own tests: a fresh database per test, and a CLI in a fresh home."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from anyy.cli.main import main
from tests.postgres.server import create_database, require_postgres

Run = Callable[..., Result]


@pytest.fixture
def database() -> str:
    """The URL of a new, empty database (dropped when the test process exits)."""
    require_postgres()
    return create_database("anyy_pgtest")


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "anyy-home"
    monkeypatch.setenv("ANYY_HOME", str(path))
    monkeypatch.delenv("ANYY_PROFILE", raising=False)
    monkeypatch.delenv("ANYY_STORE_URL", raising=False)
    return path


@pytest.fixture
def anyy() -> Run:
    """``anyy ARGS...`` in-process, as the user runs it (errors reported, never raised)."""
    runner = CliRunner()

    def run(*args: str, env: dict[str, str | None] | None = None) -> Result:
        return runner.invoke(main, list(args), env=env, catch_exceptions=False)

    return run
