"""Writing an imported session through the :class:`SessionStore` protocol (SPEC I1-I3), the same way on
every backend.

The session is found by its origin (``FORMAT:ID``) or created with it; :func:`anyy.domain.imports.
matching.plan` says what is missing; each chain is appended under its parent (the head is moved there
first, as navigation does), then the head goes to where the source was left. A new session whose
writes fail part-way is deleted, so a failed import leaves nothing behind; a re-import of a session
that failed part-way writes only what is missing.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

from anyy.domain.entries import Entry
from anyy.domain.errors import AnyyError, Conflict
from anyy.domain.imports.matching import plan
from anyy.domain.imports.model import ImportedSession
from anyy.domain.sessions import NewSession, Origin, Session
from anyy.storage.protocol import SessionStore
from anyy.storage.reads import whole_tree


@dataclass
class Imported:
    session: Session
    created: bool
    added: int  # entries written by this import
    unknown: int  # source records of kinds not read (kept as one notice)


def find_imported(store: SessionStore, origin: str) -> Session | None:
    """The session an earlier import of ``origin`` made, if any (lists are walked page by page)."""
    cursor: str | None = None
    while True:
        page = store.list_sessions(kind="chat", limit=200, cursor=cursor)
        for found in page.items:
            if found.origin is not None and found.origin.kind == "import" and found.origin.source == origin:
                return found
        if page.next_cursor is None:
            return None
        cursor = page.next_cursor


def write_import(store: SessionStore, source: ImportedSession) -> Imported:
    session = find_imported(store, source.origin)
    created = session is None
    if session is None:
        workspace = source.cwd if source.cwd and source.cwd.startswith("/") and "\0" not in source.cwd else None
        session = store.create_session(
            NewSession(
                title=source.title,
                origin=Origin(kind="import", name=source.format, source=source.origin),
                workspace=workspace,
            )
        )
        existing: list[Entry] = []
    else:
        existing = whole_tree(store, session.id)
    try:
        added = _apply(store, session, source, existing)
    except BaseException:
        if created:
            with contextlib.suppress(AnyyError):
                store.delete_session(session.id)
        raise
    return Imported(
        session=store.get_session(session.id), created=created, added=added, unknown=sum(source.unknown.values())
    )


def _apply(store: SessionStore, session: Session, source: ImportedSession, existing: list[Entry]) -> int:
    todo = plan(source, existing)
    if not todo.writes:
        return 0
    if existing and store.list_executions(session.id, active_only=True):
        raise Conflict(
            f"session {session.id} (imported from {source.origin}) is working now; import again once it is idle"
        )
    # The head moves to where the source is now unless the person took the session elsewhere (a turn of
    # their own, a navigation off the imported steps): then their place is kept.
    head_was_imported = session.head is None or session.head in set(todo.found.values())
    written: list[list[Entry]] = []
    for write in todo.writes:
        parent = write.parent if write.after is None else written[write.after[0]][write.after[1]].id
        store.set_head(session.id, parent)
        written.append(store.append_entries(session.id, write.entries, expected_head=parent))
    if head_was_imported and todo.head is not None:
        if todo.head in todo.found:
            target = todo.found[todo.head]
        else:
            index, position = todo.ends[todo.head]
            target = written[index][position].id
        store.set_head(session.id, target)
    elif session.head is not None:
        store.set_head(session.id, session.head)  # the person's place, untouched
    return todo.new_entries
