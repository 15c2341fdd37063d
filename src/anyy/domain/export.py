"""Exports of a session: JSONL (lossless: the session and every entry of its tree) and Markdown
(readable: the conversation along the current path)."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable, Iterator

import msgspec

from anyy.domain.entries import Entry, EntryKind
from anyy.domain.sessions import Session


def to_jsonl(session: Session, entries: Iterable[Entry]) -> Iterator[str]:
    yield msgspec.json.encode({"type": "session", "session": session}).decode()
    for entry in entries:
        record = msgspec.to_builtins(entry)
        record["kind"] = entry.kind.label
        yield msgspec.json.encode({"type": "entry", "entry": record}).decode()


def _when(ts: float) -> str:
    return dt.datetime.fromtimestamp(ts, tz=dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _fence(text: str) -> str:
    fence = "```"
    while fence in text:
        fence += "`"
    return f"{fence}\n{text}\n{fence}"


def to_markdown(session: Session, path: Iterable[Entry]) -> Iterator[str]:
    title = session.title or "Untitled session"
    yield f"# {title}\n"
    model = "/".join(part for part in (session.provider, session.model) if part) or "default model"
    yield (
        f"Session `{session.id}` ({session.kind}) · role {session.role} · {model}"
        f" · created {_when(session.created_at)}\n"
    )
    for entry in path:
        kind = entry.kind
        data = entry.data
        if kind == EntryKind.USER:
            yield f"## User\n\n{entry.text}\n"
            for att in data.get("attachments", []):
                yield f"- attachment: {att.get('name')} ({att.get('media_type')}, object {att.get('object')})\n"
        elif kind == EntryKind.ASSISTANT:
            note = " (interrupted)" if data.get("interrupted") else ""
            yield f"## Assistant{note}\n\n{entry.text}\n"
        elif kind == EntryKind.TOOL_CALL:
            args = json.dumps(data.get("arguments", {}), ensure_ascii=False, indent=2)
            yield f"**Tool call** `{data.get('name')}`\n\n{_fence(args)}\n"
        elif kind == EntryKind.TOOL_RESULT:
            status = " (error)" if data.get("is_error") else ""
            yield f"**Tool result**{status}\n\n{_fence(entry.text)}\n"
        elif kind == EntryKind.QUESTION:
            yield f"**The agent asks:** {entry.text}\n"
        elif kind == EntryKind.ANSWER:
            yield f"**Answer:** {entry.text}\n"
        elif kind == EntryKind.COMPACTION:
            yield f"---\n*Earlier context summarised:*\n\n{entry.text}\n\n---\n"
        elif kind == EntryKind.BRANCH_SUMMARY:
            yield f"*Summary of a branch left:* {entry.text}\n"
        elif kind == EntryKind.MODEL_CHANGE:
            yield f"*Model changed to {data.get('provider', '')}/{data.get('model', '')}*\n"
        elif kind == EntryKind.NOTICE:
            yield f"> {entry.text}\n"
