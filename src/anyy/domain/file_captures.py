"""File captures (W2) as the session store keeps them: a workspace's state, joined to an entry."""

from __future__ import annotations

from typing import Literal

import msgspec

# ``before``: taken before a pass's first tool that may change files, joined to the entry the pass
# followed; ``after``: taken after the pass, joined to its last entry; ``rewind``: the workspace as a
# rewind found it, joined to the entry the session left (so that the rewind can be undone).
CaptureKind = Literal["before", "after", "rewind"]


class NewFileCapture(msgspec.Struct, kw_only=True, frozen=True):
    session_id: str
    entry_id: int
    commit: str  # the capture store's commit (40 hex digits)
    workspace: str
    kind: CaptureKind
    execution_id: str = ""


class FileCapture(msgspec.Struct, kw_only=True, frozen=True):
    id: int
    session_id: str
    entry_id: int
    commit: str
    workspace: str
    kind: CaptureKind
    execution_id: str
    created_at: float


def stored(new: NewFileCapture, *, capture_id: int, created_at: float) -> FileCapture:
    """``new`` as a store keeps it."""
    return FileCapture(
        id=capture_id,
        session_id=new.session_id,
        entry_id=new.entry_id,
        commit=new.commit,
        workspace=new.workspace,
        kind=new.kind,
        execution_id=new.execution_id,
        created_at=created_at,
    )
