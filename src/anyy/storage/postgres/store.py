"""The PostgreSQL ``SessionStore``: its parts assembled. See ``core`` for the connection and ``settings``
for the URL a profile names."""

from __future__ import annotations

from anyy.storage.postgres.channels import PgChannelsSql
from anyy.storage.postgres.check import CheckPart
from anyy.storage.postgres.costs import PgCostsSql
from anyy.storage.postgres.delegation import PgDelegationSql
from anyy.storage.postgres.file_captures import PgFileCapturesSql
from anyy.storage.postgres.leases import LeasesPart
from anyy.storage.postgres.residents import PgResidentsSql
from anyy.storage.postgres.schedules import SchedulesPart
from anyy.storage.postgres.snapshot import SnapshotPart
from anyy.storage.postgres.starts import StartsPart


class PostgresStore(
    StartsPart,
    SchedulesPart,
    LeasesPart,
    CheckPart,
    SnapshotPart,
    PgDelegationSql,
    PgResidentsSql,
    PgFileCapturesSql,
    PgChannelsSql,
    PgCostsSql,
):
    """Sessions, entries, submissions, executions and objects in one PostgreSQL database.

    One connection, used from the thread that created it; from an event loop, through
    ``anyy.storage.owner``. ``schema`` keeps the tables in a schema of their own (tests use one per store).
    """
