"""The errors every layer speaks, mapped later to stable JSON-RPC codes.

    AnyyError
    ├── NotFound      an id that does not exist in this profile (or was deleted)
    ├── Conflict      the state changed under the caller: a taken queue item, a stale version,
    │                 unfinished work, a busy session
    ├── InvalidInput  a request that can never succeed as written
    ├── StorageFull   the disk (or the database's size limit) is full: nothing of the request was
    │                 written; it can succeed once space is freed
    └── StoreUnavailable  the session store cannot be reached now (a database restarting, a broken
                      connection, a database locked by another program): nothing of the request was
                      written; the same request can be sent again (P7)

Messages are meant for people: they say what was wrong and, where there is one, what to do.
"""

from __future__ import annotations


class AnyyError(Exception):
    """Base of every error anyy reports to a caller."""

    code = "error"


class NotFound(AnyyError):
    code = "not_found"


class Conflict(AnyyError):
    code = "conflict"


class InvalidInput(AnyyError):
    code = "invalid_input"


class StorageFull(AnyyError):
    code = "storage_full"


class StoreUnavailable(AnyyError):
    """The store could not be reached. ``applied`` says what became of the unit of work: False, nothing of
    it was written; None, its commit was sent and its outcome could not be checked (a retry with the same
    send key finds what it wrote)."""

    code = "store_unavailable"

    def __init__(self, message: str, *, applied: bool | None = False) -> None:
        super().__init__(message)
        self.applied = applied
