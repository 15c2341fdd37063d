"""Small builders and checks shared by the conformance tests. Only the protocol's methods are used."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from anyy.domain.context import ModelContext
from anyy.domain.entries import (
    AssistantData,
    Attachment,
    Entry,
    EntryKind,
    NewEntry,
    ToolCallData,
    ToolResultData,
    Usage,
    UserData,
)
from anyy.domain.queue import NewSubmission, SubmissionKind
from anyy.domain.sessions import NewSession, Session, SessionKind
from anyy.domain.tree import TreeView
from anyy.storage.protocol import SessionStore

BIG = 64 * 1024  # the body size above which a body lives in objects/ (DESIGN §3, SPEC A3)


def user(text: str, attachments: Sequence[Attachment] = ()) -> NewEntry:
    data = UserData(attachments=list(attachments)) if attachments else None
    return NewEntry(kind=EntryKind.USER, text=text, data=data)


def assistant(text: str, *, usage: Usage | None = None, model: str = "", stop_reason: str = "") -> NewEntry:
    return NewEntry(
        kind=EntryKind.ASSISTANT,
        text=text,
        data=AssistantData(provider="offline" if model else "", model=model, usage=usage, stop_reason=stop_reason),
    )


def tool_call(call_id: str, name: str = "shell", arguments: dict[str, Any] | None = None, text: str = "") -> NewEntry:
    return NewEntry(
        kind=EntryKind.TOOL_CALL, text=text, data=ToolCallData(call_id=call_id, name=name, arguments=arguments or {})
    )


def tool_result(call_id: str, text: str, *, is_error: bool = False) -> NewEntry:
    return NewEntry(kind=EntryKind.TOOL_RESULT, text=text, data=ToolResultData(call_id=call_id, is_error=is_error))


def ids(entries: Iterable[Entry]) -> list[int]:
    return [entry.id for entry in entries]


def texts(entries: Iterable[Entry]) -> list[str]:
    return [entry.text for entry in entries]


def new_session(store: SessionStore, title: str = "", kind: SessionKind = "chat") -> Session:
    return store.create_session(NewSession(title=title, kind=kind))


def chat(store: SessionStore, words: Iterable[str], *, session: Session | None = None) -> tuple[Session, list[Entry]]:
    """A session (new unless given) with one user message per word, alternating with assistant replies."""
    session = session or new_session(store, "chat")
    items = [user(w) if i % 2 == 0 else assistant(w) for i, w in enumerate(words)]
    return session, store.append_entries(session.id, items)


def submit(store: SessionStore, session_id: str, text: str, kind: SubmissionKind = "prompt") -> str:
    return store.add_submission(session_id, NewSubmission(kind=kind, text=text)).id


def drain(store: SessionStore, budget: int = 2000) -> None:
    """Run upkeep until it says nothing is left (bounded, so a store that never finishes fails)."""
    for _ in range(100_000):
        if not store.maintain(budget).more:
            return
    raise AssertionError("maintain() still reports work after 100000 steps")


def snapshot(store: SessionStore, session_id: str) -> tuple[list[Entry], TreeView, ModelContext]:
    """Everything a client sees of a session's conversation."""
    return store.path(session_id), store.tree(session_id), store.context(session_id)


def all_sessions(store: SessionStore, kind: SessionKind | None = None, limit: int = 50) -> list[Session]:
    found: list[Session] = []
    cursor: str | None = None
    while True:
        page = store.list_sessions(kind=kind, limit=limit, cursor=cursor)
        found += page.items
        if page.next_cursor is None:
            return found
        cursor = page.next_cursor
