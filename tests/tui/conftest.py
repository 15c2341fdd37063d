from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.live import start_gateway

__all__ = ["start_gateway"]


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets its own anyy home; the real one is never touched."""
    path = tmp_path / "anyy-home"
    monkeypatch.setenv("ANYY_HOME", str(path))
    monkeypatch.delenv("ANYY_PROFILE", raising=False)
    return path


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
