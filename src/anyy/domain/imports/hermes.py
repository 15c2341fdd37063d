"""Hermes Agent's sessions (``$HERMES_HOME/state.db``, else ``~/.hermes/state.db``): a SQLite database
whose rows the caller reads (this module does no I/O).

``sessions`` rows (id, model, folder, title, start time) and ``messages`` rows in the shape of OpenAI
Chat Completions: ``user``, ``assistant`` (text, ``reasoning``, ``tool_calls`` as JSON), ``tool`` (the
result, ``tool_call_id``, ``tool_name``), each with its time. A conversation is linear. Messages taken
back (``active`` = 0) are counted in the left-out notice.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from anyy.domain.entries import AssistantData, EntryKind, NewEntry, ToolCallData, ToolResultData
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

FORMAT = "hermes"
COLUMNS = "id, role, content, tool_call_id, tool_calls, tool_name, timestamp, finish_reason, reasoning, active"
_decoder = msgspec.json.Decoder()


def parse(session_row: dict[str, Any], messages: Sequence[Sequence[Any]], source: str) -> ImportedSession:
    """One session: its row (id, model, cwd, title, started_at) and its messages (the columns of
    ``COLUMNS``) in order. Row numbers in errors count the session's messages from 1."""
    session = ImportedSession(
        format=FORMAT,
        source_id=text_of(session_row.get("id")),
        title=text_of(session_row.get("title")),
        cwd=text_of(session_row.get("cwd")) or None,
        started_at=timestamp(session_row.get("started_at")),
    )
    model = text_of(session_row.get("model"))
    provider = text_of(session_row.get("billing_provider"))
    parent: str | None = None
    for number, row in enumerate(messages, start=1):
        session.records += 1
        message_id, role, content, call_id, calls, tool_name, at, finish_reason, reasoning, active = row
        if active == 0:
            session.unknown["message taken back"] = session.unknown.get("message taken back", 0) + 1
            continue
        key = f"message-{message_id}"
        text = text_of(content)
        when = timestamp(at)
        if role == "user":
            parent = session.add(key, parent, [NewEntry(kind=EntryKind.USER, text=text)], when)
        elif role == "assistant":
            data = AssistantData(
                provider=provider, model=model, stop_reason=text_of(finish_reason), thinking=text_of(reasoning)
            )
            entries = [NewEntry(kind=EntryKind.ASSISTANT, text=text, data=data)]
            entries += _calls(calls, source, number)
            parent = session.add(key, parent, entries, when)
        elif role == "tool":
            result = ToolResultData(call_id=text_of(call_id), name=text_of(tool_name))
            parent = session.add(key, parent, [NewEntry(kind=EntryKind.TOOL_RESULT, text=text, data=result)], when)
        elif role == "system":
            parent = session.add(key, parent, [notice(text)], when)
        else:
            session.unknown[f"message {role}"] = session.unknown.get(f"message {role}", 0) + 1
    return finish(session)


def _calls(raw: Any, source: str, number: int) -> list[NewEntry]:
    if not raw:
        return []
    try:
        calls = _decoder.decode(raw) if isinstance(raw, (str, bytes)) else raw
    except (msgspec.DecodeError, RecursionError, ValueError) as exc:
        raise SourceError(source, number, f"its tool calls are not JSON ({exc})", unit="message") from None
    if not isinstance(calls, list):
        raise SourceError(source, number, "its tool calls are not a JSON list", unit="message")
    out: list[NewEntry] = []
    for call in calls:
        function = object_of(object_of(call).get("function"))
        out.append(
            NewEntry(
                kind=EntryKind.TOOL_CALL,
                data=ToolCallData(
                    call_id=text_of(object_of(call).get("id")),
                    name=text_of(function.get("name")),
                    arguments=args_of(function.get("arguments")),
                ),
            )
        )
    return out
