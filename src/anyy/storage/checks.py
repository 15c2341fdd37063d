"""What :meth:`SessionStore.check` reports (``anyy doctor``, D11), the same for every backend.

Each check looks at one invariant the store keeps in normal operation; a problem means a crash in the
wrong place, a bug, a disk error, or hands in the files. ``repair`` fixes only what can be fixed without
guessing at lost data, and says what it did:

- ``integrity``: the database's own structure (SQLite's ``integrity_check`` and its search index's;
  foreign keys) and the tree's links (every parent and head exists). Never repaired: restore a backup.
- ``search_index``: every message up to a session's indexed mark is in the search index, and the index
  holds nothing else. Repair: the index is rebuilt from the entries.
- ``objects``: every object the entries and queue items reference exists, with the bytes its hash names;
  every large body is counted as a reference (or upkeep would collect it); no object file lies outside
  the table (or half-written). Repair: missing references are added, stray files removed; a missing or
  damaged object stays reported (its bytes are gone: restore a backup).
- ``executions``: nothing is left ``running`` or ``retry_wait`` with no Gateway to run it. Repair: it is
  marked interrupted with a visible notice, as a Gateway's start does.
- ``queue``: no item is still ``taken`` (or ``suspended``) by an execution that ended or does not exist.
  Repair: the item gets its execution's outcome (``interrupted`` when there is none).
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from anyy.domain.errors import InvalidInput

CHECKS = ("integrity", "search_index", "objects", "executions", "queue")
# The notice a repaired execution leaves in its session (as a Gateway's recovery does).
RECOVERY_NOTE = (
    "anyy doctor found this response still marked running with no Gateway running it, and marked it "
    "interrupted. Send the message again to get an answer."
)
MAX_DETAILS = 10  # examples kept per check, for people


class Finding(msgspec.Struct, kw_only=True):
    check: str  # one of CHECKS
    problems: int = 0  # found
    repaired: int = 0  # of those, repaired (only with repair=True)
    details: list[str] = []  # up to MAX_DETAILS examples
    skipped: str = ""  # why the check did not run, if it did not

    @property
    def left(self) -> int:
        return self.problems - self.repaired

    def add(self, count: int, example: str) -> None:
        """Count ``count`` problems of one kind, with an example for people."""
        if count <= 0:
            return
        self.problems += count
        if len(self.details) < MAX_DETAILS:
            self.details.append(example)


def checks_to_run(skip: Sequence[str]) -> list[str]:
    unknown = sorted(set(skip) - set(CHECKS))
    if unknown:
        raise InvalidInput(f"unknown store check {', '.join(unknown)}: the checks are {', '.join(CHECKS)}")
    return [name for name in CHECKS if name not in skip]
