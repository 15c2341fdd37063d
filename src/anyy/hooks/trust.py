"""Which hook commands the user trusted (SPEC N6): a hook runs only while its fingerprint is the one
recorded by ``anyy hooks trust``.

A fingerprint covers the hook's command line (its words, as run) and the bytes of every file it names by
an absolute path (the script, and the files given to an interpreter: ``python3 /x/guard.py``). A program
found on ``PATH`` by its bare name (``python3``, ``jq``) is the system's, not hashed: an upgrade of it does
not untrust every hook. So a new command is *untrusted*, an edited script is *changed*, and neither runs
until the user trusts it again; the record is ``hooks-trusted.json`` in the profile, written only by the
command line (never by the Gateway).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Literal

import msgspec

TRUST_FILE = "hooks-trusted.json"
Standing = Literal["trusted", "untrusted", "changed", "missing"]


class Fingerprint(msgspec.Struct, frozen=True, kw_only=True):
    command: list[str]
    files: dict[str, str]  # absolute path -> sha256 of its bytes
    digest: str  # sha256 of the two above


class Trusted(msgspec.Struct, frozen=True, kw_only=True):
    command: list[str]
    files: dict[str, str]
    digest: str
    trusted_at: float = 0.0


class TrustFile(msgspec.Struct, kw_only=True):
    version: int = 1
    hooks: list[Trusted] = []


class Verdict(msgspec.Struct, frozen=True, kw_only=True):
    standing: Standing
    reason: str  # for people: why it does not run, and what to do ("" when trusted)
    fingerprint: Fingerprint


def command_key(words: Sequence[str]) -> str:
    return json.dumps(list(words), ensure_ascii=False)


def fingerprint(words: Sequence[str]) -> Fingerprint:
    """The hook's fingerprint now (reads the files it names: call it off the event loop)."""
    files: dict[str, str] = {}
    for word in words:
        if word.startswith("/") and os.path.isfile(word):
            files[word] = _file_digest(Path(word))
    body = json.dumps({"command": list(words), "files": files}, sort_keys=True, ensure_ascii=False)
    return Fingerprint(command=list(words), files=files, digest=hashlib.sha256(body.encode()).hexdigest())


# Digests by the file's identity and change time: a write changes st_ctime, which no program can set back
# (unlike st_mtime), so an unchanged stat means unchanged bytes; an interpreter named by its path is hashed
# once, not at every run.
_digests: dict[tuple[int, int, int, int, int], str] = {}


def _file_digest(path: Path) -> str:
    try:
        info = path.stat()
    except OSError as exc:
        return f"unreadable: {exc.strerror or exc}"
    key = (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)
    known = _digests.get(key)
    if known is None:
        known = _read_digest(path)
        if len(_digests) > 1024:
            _digests.clear()
        _digests[key] = known
    return known


def _read_digest(path: Path) -> str:
    digest = hashlib.sha256()
    try:
        with path.open("rb") as file:
            for block in iter(lambda: file.read(1 << 16), b""):
                digest.update(block)
    except OSError as exc:  # unreadable: a digest no trust record can have
        return f"unreadable: {exc.strerror or exc}"
    return digest.hexdigest()


def read_trusted(path: Path) -> dict[str, Trusted]:
    """The trusted commands by :func:`command_key`; none when the file does not exist or cannot be read
    (then nothing runs, which is the safe side)."""
    try:
        record = msgspec.json.decode(path.read_bytes(), type=TrustFile)
    except FileNotFoundError:
        return {}
    except (OSError, msgspec.DecodeError, msgspec.ValidationError):
        return {}
    return {command_key(entry.command): entry for entry in record.hooks}


def judge(words: Sequence[str], trusted: dict[str, Trusted]) -> Verdict:
    """Whether the hook may run now, and if not why (reads the files it names: off the event loop)."""
    current = fingerprint(words)
    program = words[0] if words else ""
    if (
        not program
        or (program.startswith("/") and not os.path.isfile(program))
        or (not program.startswith("/") and shutil.which(program) is None)
    ):
        return Verdict(standing="missing", reason=f"its program {program!r} was not found", fingerprint=current)
    known = trusted.get(command_key(words))
    if known is None:
        return Verdict(
            standing="untrusted",
            reason="it is not trusted yet: read it, then run `anyy hooks trust` to let it run",
            fingerprint=current,
        )
    if known.digest == current.digest:
        return Verdict(standing="trusted", reason="", fingerprint=current)
    changed = sorted(
        {name for name in known.files if current.files.get(name) != known.files[name]}
        | {name for name in current.files if name not in known.files}
    )
    what = ", ".join(changed) or "its command"
    return Verdict(
        standing="changed",
        reason=f"{what} changed since it was trusted: read it again, then run `anyy hooks trust`",
        fingerprint=current,
    )


def trust(path: Path, prints: Iterable[Fingerprint]) -> list[Fingerprint]:
    """Record these fingerprints as trusted (replacing an older record of the same command); the ones
    that were not trusted as they are."""
    known = read_trusted(path)
    added = []
    for found in prints:
        key = command_key(found.command)
        if key in known and known[key].digest == found.digest:
            continue
        known[key] = Trusted(command=found.command, files=found.files, digest=found.digest, trusted_at=time.time())
        added.append(found)
    _write(path, list(known.values()))
    return added


def untrust(path: Path, commands: Iterable[Sequence[str]]) -> int:
    """Forget these commands; how many were trusted."""
    known = read_trusted(path)
    removed = 0
    for words in commands:
        if known.pop(command_key(words), None) is not None:
            removed += 1
    _write(path, list(known.values()))
    return removed


def _write(path: Path, hooks: list[Trusted]) -> None:
    """Replaced whole (a reader never sees half of it), readable by the user only."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    data = msgspec.json.format(msgspec.json.encode(TrustFile(hooks=hooks)), indent=2) + b"\n"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
