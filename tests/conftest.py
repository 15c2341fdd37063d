"""Fixtures and rules for the whole suite.

- ``home``: every test gets its own anyy home (``ANYY_HOME`` in tmp_path); the real one is never touched.
- One async style: anyio's pytest plugin (anyio is already a dependency, its plugin ships with it, and it
  was the style of most async tests). An ``async def test_…`` runs on asyncio without a marker.
- The live Gateways (:mod:`tests.fakes.gateways`): ``start_gateway`` (a Gateway process) and ``hold``
  (work held on a named pipe) are available everywhere.
"""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from tests.fakes.gateways import hold, start_gateway

__all__ = ["hold", "start_gateway"]


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


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if isinstance(item, pytest.Function) and inspect.iscoroutinefunction(item.obj):
            item.add_marker(pytest.mark.anyio)
