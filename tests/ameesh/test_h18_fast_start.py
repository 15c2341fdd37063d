"""H18: ameesh's commands start fast because each loads only what it needs: ``ameesh --help`` neither the
registry nor msgspec nor the harness adapters nor asyncio; ``ameesh status`` and ``ameesh send`` the
registry but not the canon, the adapters or asyncio. (The times are measured by bench/ameesh_bench.py,
never by a test.)"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

HEAVY = ("msgspec", "asyncio", "ameesh.harnesses", "ameesh.canon", "ameesh.runner", "platformdirs", "subprocess")


def _loaded(home: Path, *argv: str) -> set[str]:
    """The modules a new process has imported once ``ameesh ARGV`` is done."""
    code = (
        "import json, sys\n"
        "from ameesh.cli import main\n"
        f"try:\n    main({list(argv)!r}, prog_name='ameesh')\n"
        "except SystemExit as exc:\n    assert not exc.code, exc.code\n"
        "print(json.dumps(sorted(sys.modules)), file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env={"AMEESH_HOME": str(home)}
    )
    return set(json.loads(done.stderr.strip().splitlines()[-1]))


def test_h18_help_status_and_send_load_only_what_they_need(tmp_path: Path) -> None:
    home = tmp_path / "home"
    work = tmp_path / "work"
    work.mkdir()
    assert not _loaded(home, "--help") & {*HEAVY, "sqlite3", "ameesh.registry"}
    _loaded(home, "add", "ann", "--harness", "fake", "--dir", str(work))
    for argv in (("status",), ("send", "ann", "hello")):
        loaded = _loaded(home, *argv)
        assert "ameesh.registry" in loaded  # they do read the registry…
        assert not loaded & set(HEAVY), argv  # …and nothing more
