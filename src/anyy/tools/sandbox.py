"""The sandbox ``shell`` and Codemode scripts run in (SPEC N3): bubblewrap, when it works on the machine.

Inside: the whole file system read-only, the working directory writable, a private empty ``/tmp``, a fresh
``/dev`` and ``/proc``, its own process tree (everything ends with the command), and no network unless
``[tools.sandbox] network = true``. What it does not do: hide files from reading (the Gateway's user can
read anything it could read before) or limit CPU and memory.

Whether bubblewrap works is probed once (it needs user namespaces, which some containers forbid); when it
does not, programs run unconfined and :attr:`Sandbox.note` says why, for the Gateway's start-up log and
``gateway.status``.
"""

from __future__ import annotations

import functools
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import msgspec

_PROBE_SECONDS = 10.0


class Sandbox(msgspec.Struct, frozen=True, kw_only=True):
    """How programs are confined: ``bwrap`` is the program's path when the sandbox is on, else ``""``."""

    bwrap: str = ""
    network: bool = False
    note: str = "no sandbox: programs run with the Gateway's user rights"

    @property
    def active(self) -> bool:
        return bool(self.bwrap)

    def wrap(self, argv: Sequence[str], workdir: Path) -> list[str]:
        """``argv`` as it runs in the sandbox (unchanged when the sandbox is off)."""
        if not self.bwrap:
            return list(argv)
        work = str(workdir.resolve())
        confined = [
            self.bwrap,
            "--ro-bind", "/", "/",
            "--dev", "/dev",
            "--proc", "/proc",
            "--tmpfs", "/tmp",  # noqa: S108 - a fresh, private /tmp inside the sandbox
            *_programs_under_tmp(),
            "--bind", work, work,
            "--unshare-pid",
            "--unshare-ipc",
            "--die-with-parent",
        ]  # fmt: skip
        if not self.network:
            confined.append("--unshare-net")
        return [*confined, "--chdir", work, "--", *argv]


@functools.cache
def _programs_under_tmp() -> tuple[str, ...]:
    """``--ro-bind`` arguments that show again, read-only, what anyy's own programs need and the private
    ``/tmp`` would hide: the Python installation (a virtual environment may live under /tmp) and anyy's
    code (Codemode runs ``python codemode_bootstrap.py`` from it)."""
    tmp = Path("/tmp").resolve()  # noqa: S108 - the folder the sandbox replaces
    needed = {Path(p).resolve() for p in (sys.prefix, sys.exec_prefix, sys.base_prefix)}
    needed.add(Path(__file__).resolve().parents[2])  # the folder holding the anyy package
    shown: list[str] = []
    for path in sorted(needed):
        if path.is_relative_to(tmp) and path != tmp and not any(path.is_relative_to(Path(p)) for p in shown[1::3]):
            shown += ["--ro-bind", str(path), str(path)]
    return tuple(shown)


def unconfined(reason: str) -> Sandbox:
    return Sandbox(note=f"no sandbox ({reason}): shell and Codemode run with the Gateway's user rights")


@functools.cache
def _probe(bwrap: str) -> str:
    """``""`` when ``bwrap`` can build the sandbox here, else what went wrong."""
    argv = Sandbox(bwrap=bwrap).wrap(["/bin/true"], Path("/"))
    try:
        done = subprocess.run(argv, capture_output=True, timeout=_PROBE_SECONDS, check=False)  # noqa: S603
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"{bwrap} could not run: {error}"
    if done.returncode != 0:
        detail = done.stderr.decode(errors="replace").strip().splitlines()
        return f"{bwrap} fails on this machine: {detail[-1] if detail else f'exit code {done.returncode}'}"
    return ""


def detect_sandbox(*, enabled: bool = True, network: bool = False) -> Sandbox:
    """The sandbox this machine offers, probed once per process (``enabled=False``: none, by choice)."""
    if not enabled:
        return unconfined("turned off by [tools.sandbox] enabled = false")
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return unconfined("bubblewrap is not installed: run scripts/setup-sandbox or apt-get install bubblewrap")
    failure = _probe(bwrap)
    if failure:
        return unconfined(failure)
    where = "network allowed" if network else "no network"
    return Sandbox(
        bwrap=bwrap,
        network=network,
        note=f"bubblewrap: working directory writable, the rest read-only, private /tmp, {where}",
    )
