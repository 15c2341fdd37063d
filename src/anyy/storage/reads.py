"""Read-side views built from several store calls, written once over the protocol.

The Gateway's methods and ``anyy sessions …`` (when no Gateway runs) both answer from these, so a
session reads the same through either door: the export's entries and their order, the question an
execution waits on, the context size of the last response.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Literal, NamedTuple

import msgspec

from anyy.domain.entries import Entry, EntryKind
from anyy.domain.export import to_jsonl, to_markdown
from anyy.domain.sessions import Activity, ActivityState, Page, Session
from anyy.domain.titles import preview_of
from anyy.storage.protocol import SessionStore

ExportFormat = Literal["jsonl", "markdown"]
# How many entries up from the head a list looks for the last message to preview (tool calls, results and
# notices are passed over).
PREVIEW_LOOKBACK = 8
_MESSAGES = (EntryKind.USER, EntryKind.ASSISTANT, EntryKind.QUESTION, EntryKind.ANSWER)
# How far back from the head the session's view looks for the last response and a waiting question.
RECENT_ENTRIES = 200


def whole_tree(store: SessionStore, session_id: str) -> list[Entry]:
    """Every entry of the session's tree in the tree's own order (depth-first, oldest child first), so
    parents come before their children and each branch reads in one piece.

    The tree view holds previews only; whole entries are loaded along the path to each leaf, the current
    path first, which covers every node once."""
    view = store.tree(session_id)
    loaded: dict[int, Entry] = {entry.id: entry for entry in store.path(session_id)}
    for node in view.nodes:
        if node.children == 0 and node.id not in loaded:
            for entry in store.path(session_id, to=node.id):
                loaded.setdefault(entry.id, entry)
    return [loaded[node.id] for node in view.nodes]


def with_previews(store: SessionStore, page: Page[Session]) -> Page[Session]:
    """The page's sessions, each with its last message on the current path as a preview (U1), and each
    Background session with what it is doing and how its last execution ended (K4)."""
    items = [
        msgspec.structs.replace(
            found,
            preview=last_message(store, found),
            activity=activity(store, found.id) if found.kind == "background" else None,
        )
        for found in page.items
    ]
    return Page(items=items, next_cursor=page.next_cursor)


_ACTIVE: dict[str, ActivityState] = {"running": "running", "retry_wait": "retrying"}


def activity(store: SessionStore, session_id: str) -> Activity:
    """What the session is doing now, read from the store (so every Gateway sharing it says the same): its
    newest execution (one indexed read), its queue and the tasks it delegated."""
    last = store.last_execution(session_id)
    pending = len(store.list_submissions(session_id))
    tasks = store.list_delegated_tasks(parent_session_id=session_id)
    if last is not None and last.state == "suspended":
        waiting_tasks = any(task.state in ("waiting", "running") for task in tasks)
        return Activity(state="waiting_tasks" if waiting_tasks else "waiting_answer", pending=pending, tasks=len(tasks))
    if last is not None and last.state in _ACTIVE:
        return Activity(state=_ACTIVE[last.state], pending=pending, tasks=len(tasks))
    return Activity(
        state="queued" if pending else "idle",
        pending=pending,
        outcome=None if last is None else last.state,
        error=None if last is None or last.state == "completed" else (last.error or last.note),
        ended_at=None if last is None else last.ended_at,
        tasks=len(tasks),
    )


def last_message(store: SessionStore, session: Session) -> str:
    """The newest message (user, answer, question) up from the head, cut short; "" when none is near."""
    entry_id = session.head
    for _ in range(PREVIEW_LOOKBACK):
        if entry_id is None:
            return ""
        entry = store.get_entry(session.id, entry_id)
        if entry.kind in _MESSAGES and entry.text.strip():
            return preview_of(entry.text)
        entry_id = entry.parent
    return ""


def export_chunks(store: SessionStore, session_id: str, fmt: ExportFormat) -> list[str]:
    """The session as JSONL (the session, then every entry of its tree: lossless) or Markdown (the
    conversation along its current path), as pieces of text to be written one after the other."""
    session = store.get_session(session_id)
    if fmt == "jsonl":
        return [line + "\n" for line in to_jsonl(session, whole_tree(store, session_id))]
    return _paragraphs(to_markdown(session, store.path(session_id)))


def export_text(store: SessionStore, session_id: str, fmt: ExportFormat) -> str:
    return "".join(export_chunks(store, session_id, fmt))


def _paragraphs(blocks: Iterator[str]) -> list[str]:
    """Markdown blocks separated by a blank line (each block already ends with a newline)."""
    out: list[str] = []
    for block in blocks:
        if out:
            out.append("\n")
        out.append(block)
    return out


class WaitingQuestion(NamedTuple):
    """A question the model asked (ask_user) that holds a suspended execution until it is answered."""

    execution_id: str
    entry_id: int
    question: str


class RecentState(NamedTuple):
    waiting: WaitingQuestion | None
    context_tokens: int | None  # what the model re-read for the last response on the current path


def recent_state(store: SessionStore, session_id: str) -> RecentState:
    """The question a suspended execution waits on, and the context size of the last response, both
    from the newest :data:`RECENT_ENTRIES` entries of the current path."""
    recent = store.history(session_id, limit=RECENT_ENTRIES).items
    tokens = next((_context_tokens(entry) for entry in recent if _context_tokens(entry) is not None), None)
    suspended = [e for e in store.list_executions(session_id, active_only=True) if e.state == "suspended"]
    question = next((e for e in recent if e.kind == EntryKind.QUESTION), None) if suspended else None
    if question is None:
        return RecentState(None, tokens)
    return RecentState(WaitingQuestion(suspended[-1].id, question.id, question.text), tokens)


def _context_tokens(entry: Entry) -> int | None:
    usage = entry.data.get("usage") if entry.kind == EntryKind.ASSISTANT else None
    if not isinstance(usage, dict):
        return None
    return sum(int(usage.get(key, 0)) for key in ("input", "cache_read", "cache_write"))
