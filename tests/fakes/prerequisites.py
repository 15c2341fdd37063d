"""What a test does when something it needs outside Python is missing (Chromium, the real harness CLIs,
tmux, root to mount a tiny disk): it skips, naming the reason, on a developer's machine; in CI
(``CI`` set to anything but ``false``/``0``) it fails the run, because a suite that silently skips is a
suite that silently stops testing. ``ANYY_TEST_ALLOW_SKIP`` (comma-separated: ``browser``,
``harnesses``, ``terminal``, ``root``; or ``all``) lets CI skip those explicitly. ``scripts/setup-*``
follow the same rule (:file:`scripts/allow-skip`)."""

from __future__ import annotations

import os
from typing import NoReturn

import pytest

ALLOW_SKIP = "ANYY_TEST_ALLOW_SKIP"
PREREQUISITES = ("browser", "harnesses", "terminal", "root")


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "false", "0")


def skip_allowed(prerequisite: str) -> bool:
    allowed = {name.strip() for name in os.environ.get(ALLOW_SKIP, "").split(",") if name.strip()}
    return not in_ci() or prerequisite in allowed or "all" in allowed


def missing(prerequisite: str, reason: str) -> NoReturn:
    """Skip the test for ``reason`` where skipping is allowed; fail it otherwise (in CI)."""
    assert prerequisite in PREREQUISITES, prerequisite
    if skip_allowed(prerequisite):
        pytest.skip(reason)
    pytest.fail(
        f"{reason}. In CI a missing prerequisite fails the run; set {ALLOW_SKIP}={prerequisite} to skip instead."
    )
