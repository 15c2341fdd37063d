"""The installed ``anyy`` console script, run as a separate process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.fakes.gateways import PROCESS_TIMEOUT

BIN = Path(sys.executable).parent


KEPT = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "SYSTEMROOT")  # what a shell gives any program


def run(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    """The program as a user starts it: only the variables of a plain shell and ANYY_HOME. Nothing else of
    this worker's environment (whatever an earlier test in it left there, such as ANYY_STORE_URL or
    PYTHONWARNINGS) can change what it does or prints, and it reads no input."""
    env = {k: v for k, v in os.environ.items() if k in KEPT}
    env["ANYY_HOME"] = str(home)
    return subprocess.run(
        args,
        capture_output=True,
        text=True,
        env=env,
        stdin=subprocess.DEVNULL,
        timeout=PROCESS_TIMEOUT,
        check=False,
    )


def test_a1_console_script_creates_and_reads_a_profile(home: Path) -> None:
    anyy = str(BIN / "anyy")
    missing = run(anyy, "--profile", "work", "sessions", "list", home=home)
    assert missing.returncode == 1
    assert missing.stderr.startswith("error: profile 'work' does not exist")
    assert "Traceback" not in missing.stderr
    assert not home.exists()  # only the default profile is made on first use

    created = run(anyy, "profile", "create", "work", home=home)
    assert created.returncode == 0, created.stderr
    assert (home / "profiles" / "work" / "state.db").is_file()

    listed = run(anyy, "--profile", "work", "sessions", "list", "--json", home=home)
    assert listed.returncode == 0, listed.stderr
    assert '"items": []' in listed.stdout


def test_u4_a_fresh_home_gets_its_default_profile_on_first_use_and_says_so_once(home: Path) -> None:
    anyy = str(BIN / "anyy")
    first = run(anyy, "sessions", "list", "--json", home=home)
    assert first.returncode == 0, first.stderr
    assert '"items": []' in first.stdout  # stdout stays what scripts read
    assert first.stderr.startswith(f"anyy: created the default profile at {home / 'profiles' / 'default'}")
    assert (home / "profiles" / "default" / "config.toml").is_file()
    assert (home / "profiles" / "default" / "roles" / "default.toml").is_file()
    again = run(anyy, "sessions", "list", "--json", home=home)
    assert again.returncode == 0
    assert again.stderr == ""  # said once


def test_a1_help_does_not_load_sqlite_storage(home: Path) -> None:
    probe = (
        "import sys\n"
        "from anyy.cli.main import main\n"
        "try:\n"
        "    main(['--help'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "loaded = [m for m in sys.modules if m == 'sqlite3' or m.startswith('anyy.storage')]\n"
        "print('loaded:', loaded, file=sys.stderr)\n"
        "sys.exit(1 if loaded else 0)\n"
    )
    result = run(sys.executable, "-c", probe, home=home)
    assert result.returncode == 0, result.stderr
    assert "Usage: " in result.stdout
