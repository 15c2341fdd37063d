"""A disk that really fills up: a tmpfs of a few MiB mounted for one test (root only; skipped elsewhere,
failed in CI unless ``ANYY_TEST_ALLOW_SKIP`` names ``root``: see :mod:`tests.fakes.prerequisites`)."""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

from tests.fakes.prerequisites import missing


@contextlib.contextmanager
def tiny_disk(mount_point: Path, size: str = "4m") -> Iterator[Path]:
    mount_point.mkdir(exist_ok=True)
    if os.geteuid() != 0:
        missing("root", "mounting a tiny filesystem needs root")
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mount_point)], capture_output=True, check=False
    )
    if done.returncode != 0:
        missing("root", f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], check=False)


def fill(path: Path) -> None:
    """Take every free byte of the filesystem holding ``path`` (a file of that name)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        for size in (65536, 4096, 1):
            chunk = b"\0" * size
            with contextlib.suppress(OSError):
                while True:
                    os.write(fd, chunk)
    finally:
        os.close(fd)
