"""The one door ``anyy sessions …`` reads through: the profile's Gateway when one runs, else the store.

A running Gateway owns the profile's sessions, so the commands ask it (JSON-RPC), and see what it sees.
Without one, the command opens the store itself and only reads it (a search first indexes what the
Gateway left unindexed), answering from the same read-side queries the Gateway uses
(``anyy.storage.reads``): both doors give the same answers.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Protocol

import msgspec

from anyy.api.sessions import DelegatedTask
from anyy.cli.context import open_store
from anyy.domain.entries import Entry, EntryKind
from anyy.domain.errors import AnyyError
from anyy.domain.search import SearchHit
from anyy.domain.sessions import Page, Session, SessionKind
from anyy.domain.tree import TreeView
from anyy.profiles import Profile
from anyy.profiles.gateway_address import read_address

if TYPE_CHECKING:
    from anyy.client.sync import Client
    from anyy.storage.protocol import SessionStore
    from anyy.storage.reads import ExportFormat


class SessionReader(Protocol):
    def list_sessions(self, kind: SessionKind | None, limit: int, cursor: str | None) -> Page[Session]: ...
    def session(self, session_id: str) -> Session: ...
    def history(self, session_id: str, limit: int) -> Page[Entry]: ...
    def tree(self, session_id: str) -> TreeView: ...
    def search(self, query: str, kind: SessionKind | None, session_id: str | None, limit: int) -> list[SearchHit]: ...
    def export(self, session_id: str, fmt: ExportFormat) -> list[str]: ...
    def children(self, session_id: str) -> list[DelegatedTask]: ...


class StoreReader:
    """Answers from the profile's store, opened by the command (no Gateway runs)."""

    def __init__(self, store: SessionStore) -> None:
        self.store = store

    def list_sessions(self, kind: SessionKind | None, limit: int, cursor: str | None) -> Page[Session]:
        from anyy.storage.reads import with_previews

        return with_previews(self.store, self.store.list_sessions(kind=kind, limit=limit, cursor=cursor))

    def session(self, session_id: str) -> Session:
        return self.store.get_session(session_id)

    def history(self, session_id: str, limit: int) -> Page[Entry]:
        return self.store.history(session_id, limit=limit)

    def tree(self, session_id: str) -> TreeView:
        return self.store.tree(session_id)

    def search(self, query: str, kind: SessionKind | None, session_id: str | None, limit: int) -> list[SearchHit]:
        return self.store.search(query, kind=kind, session_id=session_id, limit=limit)

    def export(self, session_id: str, fmt: ExportFormat) -> list[str]:
        from anyy.storage.reads import export_chunks

        return export_chunks(self.store, session_id, fmt)

    def children(self, session_id: str) -> list[DelegatedTask]:
        self.store.get_session(session_id)  # an unknown session is an error, not "no tasks"
        found = self.store.list_delegated_tasks(parent_session_id=session_id)
        return msgspec.convert(found, list[DelegatedTask], from_attributes=True)  # as the Gateway sends them


class _EntryView(msgspec.Struct, kw_only=True):
    """An entry as the Gateway sends it (its kind by name)."""

    id: int
    parent: int | None
    kind: str
    text: str
    data: dict[str, Any]
    created_at: float
    object: str | None = None

    def entry(self) -> Entry:
        return Entry(
            id=self.id,
            parent=self.parent,
            kind=EntryKind.parse(self.kind),
            text=self.text,
            data=self.data,
            created_at=self.created_at,
            object=self.object,
        )


class GatewayReader:
    """Answers from the profile's running Gateway."""

    def __init__(self, client: Client) -> None:
        self.client = client

    def _call(self, method: str, params: dict[str, Any]) -> Any:
        from anyy.client.errors import CallFailed

        try:
            return self.client.call(method, {k: v for k, v in params.items() if v is not None})
        except CallFailed as exc:  # the Gateway's words, reported like the store's own errors
            raise AnyyError(exc.message) from None

    def list_sessions(self, kind: SessionKind | None, limit: int, cursor: str | None) -> Page[Session]:
        found = self._call("session.list", {"kind": kind, "limit": limit, "cursor": cursor})
        return msgspec.convert(found, Page[Session])

    def session(self, session_id: str) -> Session:
        return msgspec.convert(self._call("session.get", {"session_id": session_id})["session"], Session)

    def history(self, session_id: str, limit: int) -> Page[Entry]:
        page = msgspec.convert(
            self._call("session.history", {"session_id": session_id, "limit": limit}), Page[_EntryView]
        )
        return Page(items=[view.entry() for view in page.items], next_cursor=page.next_cursor)

    def tree(self, session_id: str) -> TreeView:
        # strict=False: JSON object keys are strings, the labels are keyed by entry id.
        return msgspec.convert(self._call("session.tree", {"session_id": session_id}), TreeView, strict=False)

    def search(self, query: str, kind: SessionKind | None, session_id: str | None, limit: int) -> list[SearchHit]:
        found = self._call("session.search", {"query": query, "kind": kind, "session_id": session_id, "limit": limit})
        return msgspec.convert(found, list[SearchHit])

    def export(self, session_id: str, fmt: ExportFormat) -> list[str]:
        return [str(self._call("session.export", {"session_id": session_id, "format": fmt})["content"])]

    def children(self, session_id: str) -> list[DelegatedTask]:
        return msgspec.convert(self._call("session.children", {"session_id": session_id}), list[DelegatedTask])


@contextlib.contextmanager
def open_reader(profile: Profile) -> Iterator[SessionReader]:
    """Through the profile's Gateway if one answers, else through its store. A missing profile is an
    error, never created here."""
    profile.require()
    address = read_address(profile)
    if address is not None:
        from anyy.client.errors import GatewayUnavailable
        from anyy.client.sync import connect

        with contextlib.ExitStack() as stack:
            try:
                client = stack.enter_context(connect(address))
            except GatewayUnavailable:
                pass  # its gateway.json outlived it: nobody else owns the store now
            else:
                yield GatewayReader(client)
                return
    with open_store(profile) as store:
        yield StoreReader(store)
