"""opencode's sessions (``$XDG_DATA_HOME/opencode/opencode.db``, else ``~/.local/share/opencode/``): a
SQLite database whose rows the caller reads (this module does no I/O) and hands over as plain values.

``session`` rows (id, folder, title, parent session for a sub-agent's), ``message`` rows (JSON ``data``:
role, model, tokens) and ``part`` rows (JSON ``data``: ``text``, ``reasoning``, ``tool`` with its
input and output, ``step-start``/``step-finish`` around each model call, files, patches…). A
conversation is linear; each model call (a step) becomes an answer with its tool calls and their
results.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from anyy.domain.entries import AssistantData, EntryKind, NewEntry, ToolCallData, ToolResultData, Usage
from anyy.domain.imports.model import (
    ImportedSession,
    SourceError,
    args_of,
    finish,
    notice,
    object_of,
    text_of,
    timestamp,
)

FORMAT = "opencode"
Row = tuple[str, float | int | None, str]  # id, time created (ms), JSON data
_decoder = msgspec.json.Decoder()
QUIET_PARTS = frozenset({"step-finish", "snapshot", "patch", "agent", "retry"})


def _data(raw: str, source: str, number: int, row_id: str) -> dict[str, Any]:
    try:
        value = _decoder.decode(raw)
    except (msgspec.DecodeError, RecursionError, ValueError, TypeError) as exc:
        raise SourceError(source, number, f"{row_id}: its data is not a JSON record ({exc})", unit="row") from None
    if not isinstance(value, dict):
        what = f"{row_id}: its data is a JSON {type(value).__name__}, not a record"
        raise SourceError(source, number, what, unit="row")
    return value


def parse(
    session_row: dict[str, Any], messages: Sequence[Row], parts: Sequence[tuple[str, str, str]], source: str
) -> ImportedSession:
    """One session: its row (id, directory, title, time_created), its messages in order, and its parts
    (id, message id, JSON data) in order. Row numbers in errors count messages, then parts, from 1."""
    session = ImportedSession(
        format=FORMAT,
        source_id=text_of(session_row.get("id")),
        title=text_of(session_row.get("title")),
        cwd=text_of(session_row.get("directory")) or None,
        started_at=timestamp(session_row.get("time_created")),
    )
    if session.title.startswith("New session - "):
        session.title = ""  # opencode's placeholder: the first prompt says more
    by_message: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    for number, (part_id, message_id, raw) in enumerate(parts, start=len(messages) + 1):
        by_message.setdefault(message_id, []).append((part_id, _data(raw, source, number, part_id)))
    parent: str | None = None
    for number, (message_id, created, raw) in enumerate(messages, start=1):
        session.records += 1
        data = _data(raw, source, number, message_id)
        at = timestamp(created)
        role = text_of(data.get("role"))
        mine = by_message.get(message_id, [])
        session.records += len(mine)
        if role == "user":
            texts = [
                text_of(p.get("text")) for _, p in mine if p.get("type") == "text" and p.get("synthetic") is not True
            ]
            files = sum(1 for _, p in mine if p.get("type") == "file")
            text = "\n".join(texts) + (
                f"\n[{files} file attachment(s) in the source session, not imported]" if files else ""
            )
            parent = session.add(message_id, parent, [NewEntry(kind=EntryKind.USER, text=text)], at)
        elif role == "assistant":
            parent = _answer(session, data, mine, parent, at)
        else:
            session.unknown[f"message {role or '(no role)'}"] = (
                session.unknown.get(f"message {role or '(no role)'}", 0) + 1
            )
    return finish(session)


def _answer(
    session: ImportedSession,
    data: dict[str, Any],
    parts: list[tuple[str, dict[str, Any]]],
    parent: str | None,
    at: float | None,
) -> str | None:
    tokens = object_of(data.get("tokens"))
    cache = object_of(tokens.get("cache"))

    def number(value: Any) -> int:
        return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0

    def new_answer() -> AssistantData:
        return AssistantData(
            provider=text_of(data.get("providerID")),
            model=text_of(data.get("modelID")),
            usage=Usage(
                input=number(tokens.get("input")),
                output=number(tokens.get("output")),
                cache_read=number(cache.get("read")),
                cache_write=number(cache.get("write")),
            ),
        )

    key: str | None = None
    answer = NewEntry(kind=EntryKind.ASSISTANT, data=new_answer())
    calls: list[NewEntry] = []
    results: list[NewEntry] = []
    extra: list[NewEntry] = []

    def close() -> None:
        nonlocal key, answer, calls, results, extra, parent
        if key is not None and (answer.text or calls or extra or getattr(answer.data, "thinking", "")):
            parent = session.add(key, parent, [answer, *calls, *results, *extra], at)
        key, answer, calls, results, extra = None, NewEntry(kind=EntryKind.ASSISTANT, data=new_answer()), [], [], []

    for part_id, part in parts:
        kind = text_of(part.get("type"))
        if kind == "step-start":
            close()
            key = part_id
            continue
        if key is None:
            key = part_id
        if kind == "text":
            answer.text += text_of(part.get("text"))
        elif kind == "reasoning":
            thinking = answer.data
            if isinstance(thinking, AssistantData):
                thinking.thinking += text_of(part.get("text"))
        elif kind == "tool":
            state = object_of(part.get("state"))
            call_id = text_of(part.get("callID")) or part_id
            name = text_of(part.get("tool"))
            calls.append(
                NewEntry(
                    kind=EntryKind.TOOL_CALL,
                    data=ToolCallData(call_id=call_id, name=name, arguments=args_of(state.get("input"))),
                )
            )
            status = text_of(state.get("status"))
            if status in ("completed", "error"):
                output = text_of(state.get("output")) if status == "completed" else text_of(state.get("error"))
                results.append(
                    NewEntry(
                        kind=EntryKind.TOOL_RESULT,
                        text=output,
                        data=ToolResultData(call_id=call_id, name=name, is_error=status == "error"),
                    )
                )
        elif kind == "file":
            answer.text += "\n[a file attachment in the source session, not imported]"
        elif kind == "compaction":
            extra.append(notice("opencode compacted the conversation here"))
        elif kind not in QUIET_PARTS:
            session.unknown[f"part {kind or '(no type)'}"] = session.unknown.get(f"part {kind or '(no type)'}", 0) + 1
    close()
    return parent
