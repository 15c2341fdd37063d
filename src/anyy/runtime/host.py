"""What the runtime's helpers for background work (delegated tasks, residents) need of the runtime that
hosts them, as a protocol: :class:`anyy.runtime.runtime.Runtime` is the one implementation, and these
helpers never import it (it imports them)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from anyy.domain.entries import Entry
    from anyy.domain.queue import NewSubmission, Submission
    from anyy.runtime.cluster import Membership
    from anyy.runtime.deps import Deps

# The note of an execution a Gateway's crash or stop cut short (G3), as recovery writes it.
RECOVERY_NOTE = "The Gateway stopped while this response was running; it was marked interrupted."


class SessionHost(Protocol):
    """The sessions' runtime as the background helpers use it."""

    deps: Deps
    cluster: Membership

    async def submit(self, session_id: str, new: NewSubmission) -> Submission: ...

    async def continue_queue(self, session_id: str) -> None: ...

    async def stop(self, session_id: str, execution_id: str, *, relay: bool = True) -> bool: ...

    def announce_entries(self, session_id: str, entries: list[Entry]) -> None:
        """Tell the session's clients of entries written outside an execution."""
        ...

    def resume_delegated(self, session_id: str, execution_id: str) -> None:
        """Resume a parent's execution that waited for its delegated tasks, on its session's worker."""
        ...
