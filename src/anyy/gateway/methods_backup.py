"""``profile.backup``: the Gateway writes a backup of its own profile (SPEC A5) while it keeps serving."""

from __future__ import annotations

import asyncio
import re

from anyy.api import gateway as wire
from anyy.api import methods as api
from anyy.api.params import BackupParams
from anyy.domain.errors import InvalidInput
from anyy.gateway.state import Connection, Gateway
from anyy.gateway.table import TABLE
from anyy.profiles.backup import backup_profile, default_backup_path
from anyy.runtime import views


@TABLE.method(api.PROFILE_BACKUP)
async def backup(gw: Gateway, conn: Connection | None, p: BackupParams) -> wire.BackupReport:
    """Write one archive (tar.gz) of this profile: a consistent snapshot of state.db taken with SQLite's
    online backup API, the objects it references, memory, roles, config.toml, and a manifest with the
    SHA-256 of each member. Safe while sessions run. The archive goes into the profile's backups/ folder
    (``name``: a new file name there; an existing file is never replaced) — a client never chooses a
    path elsewhere on the Gateway's machine; `anyy backup -o PATH` writes anywhere. Returns what was
    written: path, size, counts. Restore with ``anyy restore FILE``."""
    target = default_backup_path(gw.profile)
    if p.name is not None:
        if not _PLAIN_NAME.fullmatch(p.name) or p.name in (".", ".."):
            raise InvalidInput(
                f"backup name {p.name!r} must be a plain file name (letters, digits, '.', '-', '_'): the "
                "Gateway writes backups only into the profile's backups/ folder"
            )
        target = target.parent / p.name
    target.parent.mkdir(mode=0o700, exist_ok=True)
    # Blocking file and SQLite work, on its own connection: off the event loop and the store's thread.
    report = await asyncio.to_thread(backup_profile, gw.profile, target)
    return views.convert(report, wire.BackupReport)


_PLAIN_NAME = re.compile(r"[A-Za-z0-9._-]{1,128}")
