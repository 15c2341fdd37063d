"""Fixtures for the built-in tools: a working directory and a memory folder per test; the fake model server."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from anyy.tools.base import ToolContext
from tests.fakes.model_server import FakeModelServer


@pytest.fixture
def server() -> Iterator[FakeModelServer]:
    fake = FakeModelServer()
    fake.start()
    yield fake
    fake.stop()


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    path = tmp_path / "work"
    path.mkdir()
    return path


@pytest.fixture
def context(workdir: Path, tmp_path: Path) -> ToolContext:
    return ToolContext(workdir=workdir, memory_dir=tmp_path / "profile" / "memory", session_id="ses_test", timeout=20)
