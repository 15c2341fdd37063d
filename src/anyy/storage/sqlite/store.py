"""The SQLite ``SessionStore``: its parts assembled. See ``core`` for the connection and its owner."""

from __future__ import annotations

from pathlib import Path

from anyy.domain.durability import Durability
from anyy.storage.costs_sql import CostsSql
from anyy.storage.file_captures_sql import FileCapturesSql
from anyy.storage.ownership import SoloOwnership
from anyy.storage.sqlite.channels import ChannelsSql
from anyy.storage.sqlite.check import CheckPart
from anyy.storage.sqlite.delegation import DelegationSql
from anyy.storage.sqlite.residents import ResidentsSql
from anyy.storage.sqlite.schedules import SchedulesPart
from anyy.storage.sqlite.snapshot import SnapshotPart
from anyy.storage.sqlite.starts import StartsPart


class SqliteStore(
    StartsPart,
    SchedulesPart,
    CheckPart,
    SnapshotPart,
    SoloOwnership,
    DelegationSql,
    ResidentsSql,
    FileCapturesSql,
    ChannelsSql,
    CostsSql,
):
    """Sessions, entries, submissions and executions in one ``state.db``; large bodies in ``objects/``.

    Use it from the thread that created it; from an event loop, through ``anyy.storage.owner``. Its
    public face is :class:`anyy.storage.protocol.SessionStore`; the methods its parts share start with an
    underscore (the backend's own), and nothing above storage names this class but the composition root.
    """

    @classmethod
    def open_profile(cls, profile_dir: Path, *, profile: str, durability: Durability = "process") -> SqliteStore:
        return cls(
            profile_dir / "state.db", objects_dir=profile_dir / "objects", profile=profile, durability=durability
        )
