"""Fixtures for the built-in tools: a working directory and a memory folder per test."""

from __future__ import annotations

from pathlib import Path

import pytest

from anyy.tools.base import ToolContext


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    path = tmp_path / "work"
    path.mkdir()
    return path


@pytest.fixture
def context(workdir: Path, tmp_path: Path) -> ToolContext:
    return ToolContext(workdir=workdir, memory_dir=tmp_path / "profile" / "memory", session_id="ses_test", timeout=20)
