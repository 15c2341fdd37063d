"""The suite's rule for missing prerequisites (tests/fakes/prerequisites.py, scripts/allow-skip): skip,
naming the reason, on a developer's machine; fail in CI unless ``ANYY_TEST_ALLOW_SKIP`` names it."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.fakes.prerequisites import missing

ALLOW_SKIP_SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "allow-skip"


@pytest.mark.parametrize(
    ("ci", "allowed", "skips"),
    [
        ("", "", True),
        ("false", "", True),
        ("true", "", False),
        ("true", "terminal", False),
        ("true", "browser,harnesses", True),
        ("1", "all", True),
    ],
)
def test_a_missing_prerequisite_skips_or_fails(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, ci: str, allowed: str, skips: bool
) -> None:
    monkeypatch.setenv("CI", ci)
    monkeypatch.setenv("ANYY_TEST_ALLOW_SKIP", allowed)
    expected = pytest.skip.Exception if skips else pytest.fail.Exception
    with pytest.raises(expected) as caught:
        missing("browser", "chromium is not installed")
    assert "chromium is not installed" in str(caught.value)
    if not skips:
        assert "ANYY_TEST_ALLOW_SKIP=browser" in str(caught.value)

    script = tmp_path / "setup-thing"
    script.write_text(f'. "{ALLOW_SKIP_SCRIPT}"\ngive_up browser "chromium is not installed"\n')
    env = {"PATH": "/usr/bin:/bin", "CI": ci, "ANYY_TEST_ALLOW_SKIP": allowed}
    done = subprocess.run(["bash", str(script)], capture_output=True, text=True, env=env, check=False)
    assert done.returncode == (0 if skips else 1), done.stderr
    assert "chromium is not installed" in done.stderr
