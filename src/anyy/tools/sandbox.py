"""The sandbox ``shell`` and Codemode scripts run in (SPEC N3, N7): bubblewrap, when it works on the machine.

Inside: the whole file system read-only, the working directory writable, a private empty ``/tmp``, a fresh
``/dev`` and ``/proc`` (``/proc/sys`` read-only), its own process tree, IPC, host name and cgroup view
(everything ends with the command), and no network unless ``[tools.sandbox] network = true``. The anyy
home and the user's credentials are hidden (:mod:`anyy.tools.sandbox_hide`). The program holds no
capability (``--cap-drop ALL``, bounding set included, so not even a set-uid program or ``exec`` as root
gets one back), cannot gain privileges (``no_new_privs``), runs in a user namespace of its own where the
kernel allows one (mapping only the Gateway's own user, onto itself, and refusing nested ones), in a new
terminal session (no ``TIOCSTI`` into the Gateway's terminal), and under a seccomp filter
(:mod:`anyy.tools.sandbox_seccomp`). That holds for a Gateway run by root as for any other user.

Whether bubblewrap works is probed once per process, with everything on; what the machine refuses is
dropped in a fixed order (the user namespace, then the seccomp filter) and named in :attr:`Sandbox.note`
(the Gateway's start-up log, ``gateway.status``) and in every result of a program that ran with less
(:attr:`Confined.note`). When bubblewrap cannot run at all, programs run unconfined and say so the same way.
What the sandbox does not do: limit CPU and memory, or hide what the Gateway's user may read beyond the
hidden paths.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

import msgspec

from anyy.tools.sandbox_hide import hidden_entries, present, within
from anyy.tools.sandbox_seccomp import seccomp_program

_PROBE_SECONDS = 10.0


class Confined(msgspec.Struct, frozen=True, kw_only=True):
    """One program as it runs: its argv, the descriptors it needs (the seccomp program), and a note for
    its result (``""`` when it ran fully confined)."""

    argv: list[str]
    pass_fds: tuple[int, ...] = ()
    note: str = ""

    def annotate(self, text: str) -> str:
        """``text`` (a tool's result) followed by the note, on a line of its own."""
        return f"{text}\n[{self.note}]" if self.note else text


class Sandbox(msgspec.Struct, frozen=True, kw_only=True):
    """How programs are confined: ``bwrap`` is the program's path when the sandbox is on, else ``""``."""

    bwrap: str = ""
    network: bool = False
    note: str = "no sandbox: programs run with the Gateway's user rights"
    user_namespace: bool = True  # --unshare-user (off only when the machine refuses it)
    seccomp: bytes = b""  # the BPF program bubblewrap loads; b"" for none
    hidden: tuple[str, ...] = ()  # absolute paths (globs allowed) tools may not see
    degraded: str = ""  # what this machine's sandbox lacks, said in every result
    # Results say they ran unconfined: set by detect_sandbox (a bare Sandbox(), as tools used on their own
    # get, claims nothing and says nothing).
    warn: bool = False

    @property
    def active(self) -> bool:
        return bool(self.bwrap)

    @contextlib.contextmanager
    def confine(self, argv: Sequence[str], workdir: Path) -> Iterator[Confined]:
        """``argv`` as it runs in the sandbox; the descriptors it is passed are closed on leaving."""
        if not self.bwrap:
            yield Confined(argv=list(argv), note=f"ran unconfined: {self.note}" if self.warn else "")
            return
        work = Path(os.path.realpath(workdir))
        arguments, holds = self._arguments(work)
        notes = [self.degraded] if self.degraded else []
        notes += [
            f"{entry} is hidden from tools but holds the working directory {work}, which stays visible and "
            "writable (a hidden path never hides the working directory)"
            for entry in holds
        ]
        fds: list[int] = []
        try:
            if self.seccomp:
                read, write = os.pipe()  # the program (a few hundred bytes) fits the pipe's buffer
                fds.append(read)
                os.write(write, self.seccomp)
                os.close(write)
                arguments += ["--seccomp", str(read)]
            yield Confined(
                argv=[*arguments, "--chdir", str(work), "--", *argv], pass_fds=tuple(fds), note="; ".join(notes)
            )
        finally:
            for fd in fds:
                os.close(fd)

    def _arguments(self, work: Path) -> tuple[list[str], list[str]]:
        """bubblewrap's options for a program in ``work``, and the hidden entries that hold ``work``."""
        options = [
            self.bwrap,
            "--ro-bind", "/", "/",
            "--dev", "/dev",
            "--proc", "/proc",
            "--ro-bind", "/proc/sys", "/proc/sys",
            "--ro-bind-try", "/proc/sysrq-trigger", "/proc/sysrq-trigger",
            "--tmpfs", "/tmp",  # noqa: S108 - a fresh, private /tmp inside the sandbox
            "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
            "--cap-drop", "ALL",
            "--new-session",
            "--die-with-parent",
        ]  # fmt: skip
        if self.user_namespace:
            options += ["--unshare-user", "--disable-userns"]
        if not self.network:
            options.append("--unshare-net")
        workdir, tmp = str(work), _tmp()
        shown = [*_programs(), workdir]  # never hidden: anyy's own programs, the working directory
        first: list[str] = []  # hidden paths holding something shown: mounted before it is shown again
        last: list[str] = []
        covering = [tmp]  # what hides a program of anyy's unless it is shown again
        folders: list[str] = []
        holds: list[str] = []
        for entry, real, is_folder in present(self.hidden):
            if within(workdir, real):
                holds.append(entry)
            if within(real, tmp) and not any(within(real, s) for s in shown):
                continue  # the private /tmp shows none of the host's anyway
            mount = ["--tmpfs", real] if is_folder else ["--ro-bind", "/dev/null", real]
            if any(within(s, real) for s in shown):
                first += mount
                covering.append(real)
            else:
                last += mount
            if is_folder:
                folders.append(real)
        options += first
        for program in _programs():
            if any(within(program, c) for c in covering):
                options += ["--ro-bind", program, program]
        options += ["--bind", workdir, workdir, *last]
        for folder in folders:
            options += ["--remount-ro", folder]
        return options, holds


@functools.cache
def _tmp() -> str:
    return os.path.realpath("/tmp")  # noqa: S108 - the folder the sandbox replaces with a private one


@functools.cache
def _programs() -> tuple[str, ...]:
    """What anyy's own programs need and a hidden path or the private ``/tmp`` must not hide: the Python
    installation (a virtual environment may live under /tmp) and anyy's code (Codemode runs
    ``python codemode_bootstrap.py`` from it); outermost first, none inside another."""
    needed = {os.path.realpath(p) for p in (sys.prefix, sys.exec_prefix, sys.base_prefix)}
    needed.add(str(Path(__file__).resolve().parents[2]))  # the folder holding the anyy package
    kept: list[str] = []
    for path in sorted(needed):
        if not any(within(path, k) for k in kept):
            kept.append(path)
    return tuple(kept)


def unconfined(reason: str, hidden: Sequence[str] = ()) -> Sandbox:
    return Sandbox(
        note=f"no sandbox ({reason}): shell and Codemode run with the Gateway's user rights",
        hidden=tuple(hidden),
        warn=True,
    )


@functools.cache
def _probe(sandbox: Sandbox) -> str:
    """``""`` when ``sandbox`` can be built here, else what went wrong."""
    try:
        with sandbox.confine(["/bin/true"], Path("/")) as confined:
            done = subprocess.run(  # noqa: S603
                confined.argv, capture_output=True, timeout=_PROBE_SECONDS, check=False, pass_fds=confined.pass_fds
            )
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"{sandbox.bwrap} could not run: {error}"
    if done.returncode != 0:
        detail = done.stderr.decode(errors="replace").strip().splitlines()
        return f"{sandbox.bwrap} fails on this machine: {detail[-1] if detail else f'exit code {done.returncode}'}"
    return ""


def detect_sandbox(
    *,
    enabled: bool = True,
    network: bool = False,
    anyy_home: Path | None = None,
    hide: Sequence[str] = (),
    show: Sequence[str] = (),
) -> Sandbox:
    """The sandbox this machine offers, probed once per process (``enabled=False``: none, by choice).

    ``anyy_home``, ``hide`` and ``show`` say what tools may not see (:func:`hidden_entries`); the file
    tools refuse those paths even when programs run unconfined."""
    hidden = hidden_entries(anyy_home=anyy_home, extra=hide, show=show, network=network)
    if not enabled:
        return unconfined("turned off by [tools.sandbox] enabled = false", hidden)
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return unconfined(
            "bubblewrap is not installed: run scripts/setup-sandbox or apt-get install bubblewrap", hidden
        )
    program, no_filter = seccomp_program()
    # Probed without hidden paths: which exist changes from call to call, and a mount that fails then
    # shows in that call's result. The first of these that works is used; each one lacks more.
    tries = [(True, program), (False, program), (True, b""), (False, b"")]
    first_failure = ""
    for user_namespace, seccomp in dict.fromkeys(tries):
        candidate = Sandbox(bwrap=bwrap, user_namespace=user_namespace, seccomp=seccomp)
        failure = _probe(candidate)
        if not failure:
            break
        first_failure = first_failure or failure
    else:
        return unconfined(first_failure, hidden)
    lacking = []
    if not candidate.user_namespace:
        lacking.append(f"no user namespace ({first_failure}): programs run as the Gateway's own user id")
    if not candidate.seccomp:
        lacking.append(no_filter or f"no seccomp filter ({first_failure})")
    degraded = "; ".join(lacking)
    where = "network allowed" if network else "no network"
    note = (
        f"bubblewrap: working directory writable, the rest read-only, private /tmp, {where}, no capabilities, "
        f"the anyy home and credentials hidden{'; ' + degraded if degraded else ''}"
    )
    return msgspec.structs.replace(
        candidate,
        network=network,
        note=note,
        hidden=hidden,
        degraded=f"sandbox degraded: {degraded}" if degraded else "",
    )
