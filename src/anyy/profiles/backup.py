"""Profile backup and restore (SPEC A5): one ``.tar.gz`` holding a consistent copy of a profile.

What goes in: the store's snapshot (:meth:`SessionStore.snapshot`, in the backend's own format: for
SQLite, ``state.db`` copied with its online backup API, so a running Gateway may keep writing),
``objects/``, ``memory/``, ``roles/``, ``config.toml``, and ``manifest.json`` (first in
the archive) naming the format, the profile, the time, counts, and the SHA-256 of every other member.
Logs, ``gateway.json``, the lock and ``backups/`` stay out.

Why it is consistent while the Gateway runs: the store's snapshot is one read transaction. Objects are
content-addressed and immutable, and an object is on disk before the entry referencing it commits, so
the objects present *after* the snapshot include every object the snapshot references. The one way one
could go missing is a garbage collection between the snapshot and the copy (the session was deleted
meanwhile); then the backup is taken again, and what still lacks is reported (``missing_objects``).

Restore checks the manifest and every hash before anything is placed, writes into a temporary folder
beside the profiles, then renames it into place: a failed restore leaves nothing behind, and an existing
profile is replaced only when asked (``overwrite=True``, ``anyy restore --force``) and never while its
Gateway runs.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import errno
import fcntl
import hashlib
import io
import os
import shutil
import tarfile
import tempfile
import time
import zlib
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import IO

import msgspec

from anyy.domain.errors import Conflict, InvalidInput
from anyy.profiles.config import CONFIG_FILE
from anyy.profiles.gateway_address import read_address
from anyy.profiles.home import profiles_root
from anyy.profiles.profile import MEMORY_DIR, OBJECTS_DIR, Profile, ProfileExists, get_profile
from anyy.profiles.roles import ROLES_DIR
from anyy.profiles.store import SNAPSHOT_FILES, check_snapshot, open_store, restore_snapshot

FORMAT = "anyy-profile-backup"
FORMAT_VERSION = 1
MANIFEST = "manifest.json"
BACKUPS_DIR = "backups"
GATEWAY_LOCK = "gateway.lock"  # held by a running Gateway (see anyy.gateway.server)
# Folders copied whole (regular files only); config.toml and state.db are single members.
FOLDERS = (OBJECTS_DIR, MEMORY_DIR, ROLES_DIR)
# A snapshot whose objects were collected before they could be copied is taken again, this many times.
ATTEMPTS = 3
_CHUNK = 1 << 20


class BackupError(InvalidInput):
    """An archive that is not a usable anyy backup (corrupt, truncated, tampered with, or another format)."""


class Counts(msgspec.Struct, kw_only=True):
    sessions: int = 0  # active sessions (deleted ones whose entries a fork keeps are in the database too)
    entries: int = 0
    submissions: int = 0
    objects: int = 0
    memory_files: int = 0
    role_files: int = 0


class Member(msgspec.Struct, kw_only=True):
    path: str
    size: int
    sha256: str


class Manifest(msgspec.Struct, kw_only=True):
    format: str
    version: int
    profile: str
    created_at: float
    counts: Counts
    members: list[Member]
    missing_objects: list[str] = []


class BackupReport(msgspec.Struct, kw_only=True):
    path: str
    profile: str
    created_at: float
    size: int  # bytes of the archive
    counts: Counts
    members: int
    missing_objects: list[str] = []  # referenced by the snapshot but absent from objects/ (see above)


class RestoreReport(msgspec.Struct, kw_only=True):
    profile: str
    path: str
    from_profile: str  # the profile the archive was taken from
    created_at: float
    counts: Counts
    replaced: bool  # an existing profile was replaced (overwrite)


def default_backup_name(profile: str, when: float | None = None) -> str:
    stamp = dt.datetime.fromtimestamp(time.time() if when is None else when).strftime("%Y%m%d-%H%M%S")
    return f"anyy-{profile}-{stamp}.tar.gz"


def default_backup_path(profile: Profile, when: float | None = None) -> Path:
    """Inside the profile's ``backups/`` folder (where the Gateway writes when no path is given)."""
    return profile.path / BACKUPS_DIR / default_backup_name(profile.name, when)


# -- backup ----------------------------------------------------------------------------------------


def backup_profile(profile: Profile, out_path: Path) -> BackupReport:
    """Write a backup of ``profile`` to ``out_path`` (a new file: an existing one is never replaced)."""
    profile.require()
    out_path = Path(out_path).absolute()
    if out_path.exists():
        raise InvalidInput(f"{out_path} already exists: choose another file name, or move that file away first")
    if not out_path.parent.is_dir():
        raise InvalidInput(f"can't write {out_path}: the folder {out_path.parent} does not exist")
    created_at = time.time()
    with tempfile.TemporaryDirectory(prefix=".anyy-backup-", dir=out_path.parent) as staging_name:
        staging = Path(staging_name) / "profile"
        for _ in range(ATTEMPTS):
            if staging.exists():
                shutil.rmtree(staging)
            staging.mkdir()
            counts, referenced = _stage(profile, staging)
            present = {p.name for p in (staging / OBJECTS_DIR).rglob("*") if p.is_file()}
            missing = sorted(referenced - present)
            if not missing:
                break
        members = [_member(staging, path) for path in _files(staging)]
        manifest = Manifest(
            format=FORMAT,
            version=FORMAT_VERSION,
            profile=profile.name,
            created_at=created_at,
            counts=counts,
            members=members,
            missing_objects=missing,
        )
        partial = Path(staging_name) / "archive.tar.gz"
        _write_archive(partial, staging, manifest)
        try:
            # link() refuses to replace a file that appeared meanwhile; rename() would overwrite it.
            os.link(partial, out_path)
        except FileExistsError:
            raise InvalidInput(f"{out_path} appeared while the backup was written; nothing was replaced") from None
        except OSError as exc:
            if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EXDEV):
                raise
            os.replace(partial, out_path)
    return BackupReport(
        path=str(out_path),
        profile=profile.name,
        created_at=created_at,
        size=out_path.stat().st_size,
        counts=counts,
        members=len(members) + 1,
        missing_objects=missing,
    )


def _stage(profile: Profile, staging: Path) -> tuple[Counts, set[str]]:
    """Copy the profile into ``staging``: the store's snapshot first, then the files."""
    store = open_store(profile)
    try:
        snap = store.snapshot(staging)
    except InvalidInput as exc:
        raise BackupError(str(exc)) from None
    finally:
        store.close()
    counts = Counts(sessions=snap.sessions, entries=snap.entries, submissions=snap.submissions)
    referenced = set(snap.objects)
    if profile.config_path.is_file():
        _copy_file(profile.config_path, staging / CONFIG_FILE, link=False)
    for folder in FOLDERS:
        source = profile.path / folder
        if not source.is_dir():
            continue
        # Objects are immutable: a hard link is a free copy. Memory and roles are edited in place.
        copied = _copy_tree(source, staging / folder, link=folder == OBJECTS_DIR)
        if folder == MEMORY_DIR:
            counts.memory_files = copied
        elif folder == ROLES_DIR:
            counts.role_files = copied
    # Counted in the staging folder: a PostgreSQL store's snapshot wrote its objects there itself (the
    # profile's folder has none), a SQLite profile's were copied from objects/ above.
    counts.objects = sum(1 for _ in _regular_files(staging / OBJECTS_DIR)) if (staging / OBJECTS_DIR).is_dir() else 0
    return counts, referenced


def _regular_files(root: Path) -> Iterator[Path]:
    """Regular files under ``root`` (no links, no temporary files of writers in progress)."""
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not os.path.islink(os.path.join(folder, d)))
        for name in sorted(names):
            path = Path(folder, name)
            if name.startswith(".") and name.endswith(".tmp"):
                continue
            if path.is_file() and not path.is_symlink():
                yield path


def _copy_tree(source: Path, target: Path, *, link: bool) -> int:
    copied = 0
    target.mkdir(parents=True, exist_ok=True)
    for path in _regular_files(source):
        try:
            _copy_file(path, target / path.relative_to(source), link=link)
        except FileNotFoundError:
            continue  # removed meanwhile (an unused object collected): it is not in the snapshot's view
        copied += 1
    return copied


def _copy_file(source: Path, target: Path, *, link: bool) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    if link:
        try:
            os.link(source, target)
            return
        except OSError as exc:
            if exc.errno == errno.ENOENT:
                raise FileNotFoundError(exc.errno, exc.strerror, str(source)) from None
    shutil.copyfile(source, target)


def _files(root: Path) -> list[str]:
    return [path.relative_to(root).as_posix() for path in _regular_files(root)]


def _sha256_of(handle: IO[bytes]) -> tuple[str, int]:
    digest = hashlib.sha256()
    size = 0
    while chunk := handle.read(_CHUNK):
        digest.update(chunk)
        size += len(chunk)
    return digest.hexdigest(), size


def _member(root: Path, name: str) -> Member:
    with open(root / name, "rb") as handle:
        sha, size = _sha256_of(handle)
    return Member(path=name, size=size, sha256=sha)


def _write_archive(path: Path, staging: Path, manifest: Manifest) -> None:
    encoded = msgspec.json.format(msgspec.json.encode(manifest), indent=2)
    # Readable by its owner only (D9): it holds every conversation of the profile. Created so, never
    # widened then narrowed: there is no moment when another user could open it.
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with open(fd, "wb") as raw, tarfile.open(fileobj=raw, mode="w:gz", format=tarfile.PAX_FORMAT) as tar:
        info = tarfile.TarInfo(MANIFEST)
        info.size, info.mtime, info.mode = len(encoded), int(manifest.created_at), 0o600
        tar.addfile(info, io.BytesIO(encoded))
        for member in manifest.members:
            info = tar.gettarinfo(str(staging / member.path), arcname=member.path)
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            info.mode = 0o600
            with open(staging / member.path, "rb") as handle:
                tar.addfile(info, handle)
    with open(path, "rb+") as handle:
        os.fsync(handle.fileno())


# -- restore ---------------------------------------------------------------------------------------


def read_manifest(archive: Path) -> Manifest:
    """The manifest of ``archive``, checked for format and version (the members are not checked here)."""
    try:
        with tarfile.open(archive, "r:gz") as tar:
            first = tar.next()
            if first is None or first.name != MANIFEST or not first.isfile():
                raise BackupError(f"{archive} is not an anyy backup: it does not start with {MANIFEST}")
            handle = tar.extractfile(first)
            assert handle is not None
            return _decode_manifest(archive, handle.read())
    except FileNotFoundError:
        raise BackupError(f"no backup at {archive}: check the file name") from None
    except (tarfile.TarError, EOFError, OSError, zlib.error) as exc:
        raise BackupError(
            f"{archive} is not a readable .tar.gz backup ({exc}); it may be truncated or corrupt"
        ) from None


def _decode_manifest(archive: Path, raw: bytes) -> Manifest:
    try:
        manifest = msgspec.json.decode(raw, type=Manifest)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise BackupError(f"{archive}: its {MANIFEST} is unreadable ({exc})") from None
    if manifest.format != FORMAT:
        raise BackupError(f"{archive} is not an anyy profile backup (format {manifest.format!r})")
    if manifest.version > FORMAT_VERSION:
        raise BackupError(
            f"{archive} was written by a newer anyy (backup format {manifest.version}; this one reads up to "
            f"{FORMAT_VERSION}): restore it with that version"
        )
    return manifest


def gateway_running(profile: Profile) -> int | None:
    """The pid of the profile's running Gateway, or None. The lock is the proof; gateway.json names it."""
    address = read_address(profile)
    lock = profile.path / GATEWAY_LOCK
    if lock.exists():
        try:
            handle = open(lock, "a+")  # noqa: SIM115 - closed below
        except OSError:
            handle = None
        if handle is not None:
            with handle:
                try:
                    fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError:
                    return address.pid if address is not None else -1
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
    if address is not None and _alive(address.pid) and address.pid != os.getpid():
        return address.pid
    return None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _refuse_if_running(profile: Profile) -> None:
    pid = gateway_running(profile)
    if pid is not None:
        which = f" (pid {pid})" if pid > 0 else ""
        raise Conflict(
            f"the Gateway of profile {profile.name!r} is running{which}: a restore would replace the files under "
            f"it. Stop it first with `anyy gateway stop --profile {profile.name}`, then restore."
        )


def restore_profile(archive: Path, home: Path, name: str | None = None, *, overwrite: bool = False) -> RestoreReport:
    """Restore ``archive`` as profile ``name`` (default: the profile it was taken from) under ``home``."""
    archive = Path(archive)
    manifest = read_manifest(archive)
    profile = get_profile(home, name or manifest.profile)
    replacing = profile.exists()
    if replacing and not overwrite:
        raise ProfileExists(
            f"profile {profile.name!r} already exists at {profile.path}; restoring would replace it. Add "
            f"--force to replace it, or restore under another name with --profile NAME."
        )
    if replacing:
        _refuse_if_running(profile)
    root = profiles_root(home)
    root.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".restore-{profile.name}-", dir=root))
    try:
        os.chmod(staging, 0o700)
        _extract_checked(archive, manifest, staging)
        problem = check_snapshot(profile, staging)
        if problem is not None:
            raise BackupError(f"{archive}: {problem}; nothing was restored")
        restore_snapshot(staging, overwrite=overwrite)  # a PostgreSQL profile's: back into its database
        for folder in FOLDERS:
            (staging / folder).mkdir(exist_ok=True)
        _place(staging, profile, replacing)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return RestoreReport(
        profile=profile.name,
        path=str(profile.path),
        from_profile=manifest.profile,
        created_at=manifest.created_at,
        counts=manifest.counts,
        replaced=replacing,
    )


def _safe_name(archive: Path, name: str) -> PurePosixPath:
    path = PurePosixPath(name)
    if path.is_absolute() or ".." in path.parts or not path.parts:
        raise BackupError(f"{archive} holds a member outside the profile ({name!r}): refused")
    top = path.parts[0]
    if len(path.parts) == 1 and top not in (*SNAPSHOT_FILES, CONFIG_FILE):
        raise BackupError(f"{archive} holds an unexpected member {name!r}: refused")
    if len(path.parts) > 1 and top not in FOLDERS:
        raise BackupError(f"{archive} holds an unexpected member {name!r}: refused")
    return path


def _extract_checked(archive: Path, manifest: Manifest, staging: Path) -> None:
    expected = {m.path: m for m in manifest.members}
    seen: set[str] = set()
    try:
        with tarfile.open(archive, "r:gz") as tar:
            for info in tar:
                if info.name == MANIFEST:
                    continue
                if info.isdir():
                    continue
                if not info.isfile():
                    raise BackupError(f"{archive} holds {info.name!r}, which is not a regular file: refused")
                relative = _safe_name(archive, info.name)
                member = expected.get(info.name)
                if member is None:
                    raise BackupError(f"{archive} holds {info.name!r}, which its manifest does not list: refused")
                if info.name in seen:
                    raise BackupError(f"{archive} holds {info.name!r} twice: refused")
                seen.add(info.name)
                target = staging.joinpath(*relative.parts)
                target.parent.mkdir(parents=True, exist_ok=True)
                source = tar.extractfile(info)
                assert source is not None
                digest = hashlib.sha256()
                size = 0
                with open(target, "xb") as out:
                    os.fchmod(out.fileno(), 0o600)
                    while chunk := source.read(_CHUNK):
                        digest.update(chunk)
                        size += len(chunk)
                        out.write(chunk)
                    out.flush()
                    os.fsync(out.fileno())
                if digest.hexdigest() != member.sha256 or size != member.size:
                    raise BackupError(
                        f"{archive} is corrupt: {info.name} does not match its manifest (sha256 or size differ); "
                        "nothing was restored. Use another backup."
                    )
    except (tarfile.TarError, EOFError, zlib.error) as exc:
        raise BackupError(f"{archive} is truncated or corrupt ({exc}); nothing was restored") from None
    absent = sorted(set(expected) - seen)
    if absent:
        shown = ", ".join(absent[:5]) + (f" and {len(absent) - 5} more" if len(absent) > 5 else "")
        raise BackupError(f"{archive} is incomplete: {shown} listed in its manifest but missing; nothing was restored")


def _place(staging: Path, profile: Profile, replacing: bool) -> None:
    """Rename the restored folder into place; an existing profile is moved aside first, then removed."""
    if not replacing:
        try:
            os.rename(staging, profile.path)  # fails if a profile of that name appeared meanwhile
        except OSError as exc:
            if exc.errno in (errno.EEXIST, errno.ENOTEMPTY):
                raise ProfileExists(
                    f"profile {profile.name!r} appeared at {profile.path} during the restore; nothing was changed"
                ) from None
            raise
        _fsync_dir(profile.path.parent)
        return
    _refuse_if_running(profile)  # again, just before touching it
    aside = profile.path.with_name(f".replaced-{profile.name}-{os.getpid()}-{int(time.time())}")
    os.rename(profile.path, aside)
    try:
        os.rename(staging, profile.path)
    except BaseException:
        os.rename(aside, profile.path)
        raise
    _fsync_dir(profile.path.parent)
    shutil.rmtree(aside, ignore_errors=True)


def _fsync_dir(path: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
