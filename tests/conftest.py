"""Fixtures and rules for the whole suite.

- ``home``: every test gets its own anyy home (``ANYY_HOME`` in tmp_path); the real one is never touched.
- One async style: ``async def test_…``, run by anyio's pytest plugin on asyncio (``anyio_mode = "auto"``
  in pyproject.toml: no marker needed). Why anyio rather than pytest-asyncio: anyio is already a
  dependency, its plugin ships with it, and the TUI and tool tests were written for it.
- The live Gateways (:mod:`tests.fakes.gateways`): ``start_gateway`` (a Gateway process) and ``hold``
  (work held on a named pipe) are available everywhere.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fakes.gateways import hold, start_gateway

__all__ = ["hold", "start_gateway"]


@pytest.fixture(autouse=True)
def _collect_leftovers() -> Iterator[None]:
    """Collect what a test left behind once it ends, outside any event loop. An SDK client a test left
    open closes itself when it is collected, on whatever loop runs then: collected later, inside another
    test's loop, it failed that test with "Event loop is closed"."""
    yield
    gc.collect()


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
