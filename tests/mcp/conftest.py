"""Fixtures for the MCP tests: the tests' own fault server, and the reference servers installed by
scripts/setup-mcp-servers (pinned, from npm and PyPI; run offline)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from anyy.tools.base import ToolContext
from anyy.tools.mcp_servers import McpServerSpec

FAULT_SERVER = Path(__file__).with_name("fault_server.py")
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def context(tmp_path: Path) -> ToolContext:
    work = tmp_path / "work"
    work.mkdir()
    return ToolContext(workdir=work, memory_dir=tmp_path / "memory", session_id="ses_mcp", timeout=30)


@pytest.fixture
def starts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A file the fault server appends its pid to at each start."""
    path = tmp_path / "starts.txt"
    path.touch()
    return path


def fault_spec(starts: Path, **changes: object) -> McpServerSpec:
    fields: dict[str, object] = {
        "name": "faults",
        "command": sys.executable,
        "args": (str(FAULT_SERVER),),
        "env": (("FAULT_SERVER_STARTS", str(starts)),),
        "timeout": 20.0,
    }
    fields.update(changes)
    return McpServerSpec(**fields)  # type: ignore[arg-type]


@pytest.fixture(scope="session")
def reference_servers() -> Path:
    """The cache directory of scripts/setup-mcp-servers (run here; idempotent and fast once installed)."""
    if os.environ.get("ANYY_TEST_NO_MCP_SERVERS") == "1":
        pytest.skip("ANYY_TEST_NO_MCP_SERVERS=1: the reference MCP server tests were turned off by choice")
    done = subprocess.run(
        ["bash", str(ROOT / "scripts" / "setup-mcp-servers")], capture_output=True, text=True, check=False, timeout=900
    )
    directory = Path(done.stdout.strip().splitlines()[-1]) if done.stdout.strip() else Path()
    bins = [directory / "node_modules" / ".bin" / name for name in ("mcp-server-filesystem", "mcp-server-everything")]
    missing = [str(path) for path in [*bins, directory / "time-venv" / "bin" / "mcp-server-time"] if not path.exists()]
    assert not missing, f"scripts/setup-mcp-servers did not install {missing}: {done.stderr[-2000:]}"
    return directory
