"""Real small file systems for full-disk tests: a tmpfs of a given size (root only; the test skips, or
fails in CI, elsewhere) and a way to take its last free byte."""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

from tests.fakes.prerequisites import missing


@contextlib.contextmanager
def small_disk(mount_point: Path, size: str) -> Iterator[Path]:
    """A tmpfs of ``size`` (``"4m"``) mounted on ``mount_point`` (created) for the block."""
    mount_point.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        missing("root", "mounting a small filesystem needs root")
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
    """Take every free byte of the file system holding ``path`` (a new file there)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        for size in (65536, 4096, 1):
            chunk = b"\0" * size
            with contextlib.suppress(OSError):
                while True:
                    os.write(fd, chunk)
    finally:
        os.close(fd)
