"""A failed turn leaves a durable trace (SPEC U2, C5): a notice entry on the session's path with the error
and whether trying again may work, written just before the execution is marked failed. A client that
opens the session later (a reload, ``anyy --resume``, ``anyy chat --session``) finds it in the history
and can show the error with a Retry; the model never sees notices (they are not part of its context).
"""

from __future__ import annotations

import logging

from anyy.domain.entries import Entry, EntryKind, NewEntry, NoticeData
from anyy.storage.protocol import SessionStore

log = logging.getLogger("anyy.runtime")

FAILED_PREFIX = "The answer failed: "


def failure_notice(execution_id: str, error: str, *, retryable: bool) -> NewEntry:
    """The notice of ``execution_id``'s failure; ``retryable``: a transient error, worth sending again as is."""
    return NewEntry(
        kind=EntryKind.NOTICE,
        text=FAILED_PREFIX + error,
        data=NoticeData(level="error", failed_execution=execution_id, retryable=retryable),
    )


def record_failure(store: SessionStore, session_id: str, entry: NewEntry) -> list[Entry]:
    """Append the notice; a store that cannot take it (full disk...) must not keep the failure itself
    from being recorded, so the error is logged and nothing is appended."""
    try:
        return store.append_entries(session_id, [entry])
    except Exception:  # the execution's failed state is written next, whatever happened here
        log.exception("could not record the notice of a failed turn in session %s", session_id)
        return []
