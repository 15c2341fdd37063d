"""What tools may not see (SPEC N7): the anyy home and the user's credentials.

Inside the sandbox a hidden folder is an empty read-only ``tmpfs`` and a hidden file is ``/dev/null``
mounted without device access (reading it fails with "Permission denied"). The file tools, which run in
the Gateway's own process, refuse a hidden path with :func:`hidden_by`. Hidden by default:

- the anyy home: every profile's ``gateway.json`` (the Gateway's token), ``state.db``, ``objects/``,
  ``backups/``, ``config.toml`` and memory;
- :data:`CREDENTIALS` in the Gateway user's home, and :data:`SYSTEM_SECRETS` (readable by a root Gateway);
- the sockets of local services that act for the user or for root: with the network off, all of ``/run``
  (Docker, containerd, D-Bus, systemd, databases, agents); with it on, :data:`CONTROL_SOCKETS` only, and
  the SSH agent's socket.

``[tools.sandbox] hide`` adds paths (absolute or ``~/...``; ``*`` matches within a name) and ``show``
takes entries of :data:`CREDENTIALS` off the list. The working directory is never hidden: an entry that
holds it hides everything around it but the working directory, which tools still see and change, and
every result says so.
"""

from __future__ import annotations

import functools
import glob
import os
import stat
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

CREDENTIALS = (
    "~/.ssh", "~/.gnupg", "~/.aws", "~/.azure", "~/.config/gcloud", "~/.kube", "~/.docker/config.json",
    "~/.netrc", "~/.git-credentials", "~/.config/git/credentials", "~/.config/gh", "~/.config/hub",
    "~/.pgpass", "~/.my.cnf", "~/.npmrc", "~/.pypirc", "~/.gem/credentials", "~/.cargo/credentials",
    "~/.cargo/credentials.toml", "~/.terraform.d/credentials.tfrc.json", "~/.vault-token",
    "~/.password-store", "~/.local/share/keyrings", "~/.config/rclone", "~/.config/op",
    "~/.mozilla", "~/.config/google-chrome", "~/.config/chromium",
    "~/.claude/.credentials.json", "~/.codex/auth.json",
    "~/.bash_history", "~/.zsh_history", "~/.python_history", "~/.psql_history", "~/.mysql_history",
)  # fmt: skip
SYSTEM_SECRETS = ("/etc/shadow", "/etc/gshadow", "/etc/ssh/ssh_host_*_key", "/etc/ssl/private")
CONTROL_SOCKETS = (
    "/run/docker.sock", "/run/containerd", "/run/podman", "/run/crio", "/run/libvirt", "/run/snapd.socket",
    "/run/dbus/system_bus_socket", "/run/systemd/private", "/run/systemd/journal", "/run/user",
)  # fmt: skip
OFFLINE = ("/run",)
_MAGIC = frozenset("*?[")


def hidden_entries(
    *,
    anyy_home: Path | None,
    extra: Sequence[str] = (),
    show: Sequence[str] = (),
    network: bool = False,
    environ: Mapping[str, str] | None = None,
) -> tuple[str, ...]:
    """The absolute paths (globs allowed) hidden from tools, ``~`` expanded for the Gateway's user."""
    env = os.environ if environ is None else environ
    entries = [_expand(entry) for entry in defaults(network=network, environ=env)]
    shown = {_expand(entry) for entry in show}
    entries = [entry for entry in entries if entry not in shown]
    entries += [_expand(entry) for entry in extra]
    if anyy_home is not None:
        entries.insert(0, str(anyy_home.absolute()))
    return tuple(dict.fromkeys(entries))


def defaults(*, network: bool, environ: Mapping[str, str]) -> list[str]:
    """The entries hidden by default, besides the anyy home (``show`` can take these off)."""
    entries = [*CREDENTIALS, *SYSTEM_SECRETS, *(CONTROL_SOCKETS if network else OFFLINE)]
    agent = environ.get("SSH_AUTH_SOCK", "")
    if agent.startswith("/"):
        entries.append(agent)
    return entries


def not_default(show: Sequence[str], *, network: bool) -> list[str]:
    """The entries of ``show`` that are not hidden by default (and so show nothing)."""
    known = {_expand(entry) for entry in defaults(network=network, environ=os.environ)}
    return [entry for entry in show if _expand(entry) not in known]


def _expand(entry: str) -> str:
    return os.path.expanduser(entry) if entry.startswith("~") else entry


def present(entries: Sequence[str]) -> Iterator[tuple[str, str, bool]]:
    """For each entry, each path it names that exists now: (entry, real path, is a folder)."""
    patterns = _kinds(tuple(entries))[1]
    for entry in entries:
        for path in glob.glob(entry) if entry in patterns else (entry,):
            if not os.access(path, os.F_OK):  # most entries are missing: one system call, no exception
                continue
            try:
                mode = os.stat(path).st_mode
            except OSError:
                continue
            yield entry, os.path.realpath(path), stat.S_ISDIR(mode)


def hidden_by(path: Path, hidden: Sequence[str], workdir: Path) -> str:
    """The entry of ``hidden`` that hides ``path`` (real, inside the real ``workdir``) from tools, or ``""``.

    An entry hides ``path`` when it is (through any symlink, bind mount or hard link) ``path`` itself or
    one of its folders below ``workdir``: the working directory and what is inside it are never hidden by
    an entry that holds the working directory. Compared by device and inode, one ``stat`` per entry: no
    entry's path is resolved, so the check stays cheap for every file call."""
    inside: set[tuple[int, int]] = set()
    target, work = str(path), str(workdir)
    while target != work and within(target, work):
        try:
            found = os.stat(target)
        except OSError:  # not there (yet): what holds it still counts
            pass
        else:
            inside.add((found.st_dev, found.st_ino))
        target = os.path.dirname(target)
    if not inside:
        return ""
    plain, patterns = _kinds(tuple(hidden))
    named = [(entry, entry) for entry in plain if os.access(entry, os.F_OK)]
    named += [(entry, name) for entry in patterns for name in glob.glob(entry)]
    for entry, name in named:
        try:
            found = os.stat(name)
        except OSError:
            continue
        if (found.st_dev, found.st_ino) in inside:
            return entry
    return ""


@functools.lru_cache(maxsize=64)
def _kinds(hidden: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``hidden`` split into plain paths and patterns (``*``, ``?``, ``[``)."""
    patterns = tuple(entry for entry in hidden if _MAGIC & set(entry))
    return tuple(entry for entry in hidden if entry not in patterns), patterns


def within(path: str, folder: str) -> bool:
    """Whether ``path`` is ``folder`` or inside it (both absolute and normalised)."""
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def refusal(path: Path, raw: str, hidden: Sequence[str], workdir: Path) -> str:
    """Why a file tool may not use ``path`` (real, no symlink in it; ``raw`` as the model gave it), or ``""``."""
    entry = hidden_by(path, hidden, workdir)
    if not entry:
        return ""
    return (
        f"{raw!r} is hidden from tools: it lies in {entry}, which anyy hides (the anyy home, credentials, "
        "or [tools.sandbox] hide); ask the user for what you need from it"
    )
