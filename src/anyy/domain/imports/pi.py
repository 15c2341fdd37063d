"""pi's session files (``~/.pi/agent/sessions/<folder>/<time>_<id>.jsonl``, or any ``--session`` file).

The first line is the header (``type: session``: id, folder, time); every later record has ``id`` and
``parentId``, so the file is a tree: pi keeps every branch in the one file. ``message`` records hold the
conversation (``user``, ``assistant`` with text, thinking and tool calls, ``toolResult``,
``bashExecution``); ``compaction`` and ``branch_summary`` hold summaries; settings records
(``model_change``, ``thinking_level_change``) become notices; labels and unknown kinds are counted.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from anyy.domain.entries import AssistantData, EntryKind, NewEntry, ToolCallData, ToolResultData, Usage
from anyy.domain.imports.model import (
    ImportedSession,
    SourceError,
    args_of,
    finish,
    json_lines,
    notice,
    object_of,
    text_of,
    timestamp,
)

FORMAT = "pi"


def parse(lines: Iterable[str], source: str, *, fallback_id: str = "") -> ImportedSession:
    session = ImportedSession(format=FORMAT, source_id=fallback_id)
    known: dict[str, str | None] = {}  # record id -> the step key later records hang under
    header = False
    for number, record in json_lines(lines, source):
        session.records += 1
        kind = text_of(record.get("type"))
        if not header:
            if kind != "session":
                raise SourceError(source, number, f"a {kind or 'typeless'} record where pi's session header belongs")
            header = True
            session.source_id = text_of(record.get("id")) or fallback_id
            session.cwd = text_of(record.get("cwd")) or None
            session.started_at = timestamp(record.get("timestamp"))
            continue
        record_id = record.get("id")
        if not isinstance(record_id, str):
            session.unknown[kind or "(no type)"] = session.unknown.get(kind or "(no type)", 0) + 1
            continue
        raw_parent = record.get("parentId")
        parent = known.get(raw_parent) if isinstance(raw_parent, str) else None
        if isinstance(raw_parent, str) and raw_parent not in known:
            raise SourceError(source, number, f"record {record_id} follows {raw_parent}, which the file does not hold")
        at = timestamp(record.get("timestamp"))
        try:
            entries = _entries(session, kind, record)
        except (TypeError, AttributeError, KeyError) as exc:
            raise SourceError(source, number, f"a {kind} record pi did not write ({exc})") from None
        known[record_id] = session.add(record_id, parent, entries, at)
    if not header:
        raise SourceError(source, 1, "an empty file, not a pi session")
    return finish(session)


def _entries(session: ImportedSession, kind: str, record: dict[str, Any]) -> list[NewEntry]:
    if kind == "message":
        message = object_of(record.get("message"))
        return _message(message)
    if kind == "model_change":
        return [notice(f"model: {text_of(record.get('provider'))}/{text_of(record.get('modelId'))}")]
    if kind == "thinking_level_change":
        return [notice(f"thinking level: {text_of(record.get('thinkingLevel'))}")]
    if kind in ("compaction", "branch_summary"):
        what = "pi compacted the conversation here" if kind == "compaction" else "summary of the branch left behind"
        summary = text_of(record.get("summary"))
        return [notice(what), *([NewEntry(kind=EntryKind.USER, text=summary)] if summary else [])]
    session.unknown[kind or "(no type)"] = session.unknown.get(kind or "(no type)", 0) + 1
    return []


def _message(message: dict[str, Any]) -> list[NewEntry]:
    role = text_of(message.get("role"))
    content = message.get("content")
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
    blocks = [b for b in blocks if isinstance(b, dict)] if isinstance(blocks, list) else []
    text = "\n".join(text_of(b.get("text")) for b in blocks if b.get("type") == "text")
    images = sum(1 for b in blocks if b.get("type") == "image")
    if images:
        text += f"\n[{images} image attachment(s) in the source session, not imported]"
    if role == "user":
        return [NewEntry(kind=EntryKind.USER, text=text)]
    if role == "assistant":
        data = AssistantData(
            provider=text_of(message.get("provider")),
            model=text_of(message.get("model")),
            usage=_usage(message.get("usage")),
            stop_reason=text_of(message.get("stopReason")),
            thinking="\n".join(text_of(b.get("thinking")) for b in blocks if b.get("type") == "thinking"),
        )
        calls = [
            NewEntry(
                kind=EntryKind.TOOL_CALL,
                data=ToolCallData(
                    call_id=text_of(b.get("id")), name=text_of(b.get("name")), arguments=args_of(b.get("arguments"))
                ),
            )
            for b in blocks
            if b.get("type") == "toolCall"
        ]
        return [NewEntry(kind=EntryKind.ASSISTANT, text=text, data=data), *calls]
    if role == "toolResult":
        result = ToolResultData(
            call_id=text_of(message.get("toolCallId")),
            name=text_of(message.get("toolName")),
            is_error=message.get("isError") is True,
        )
        return [NewEntry(kind=EntryKind.TOOL_RESULT, text=text, data=result)]
    if role == "bashExecution":  # a command the user ran with ! (not a model's call)
        return [notice(f"$ {text_of(message.get('command'))}\n{text_of(message.get('output'))}")]
    return [notice(f"a {role or 'roleless'} message of pi:\n{text}")]


def _usage(usage: Any) -> Usage | None:
    if not isinstance(usage, dict):
        return None

    def number(name: str) -> int:
        value = usage.get(name)
        return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0

    return Usage(
        input=number("input"), output=number("output"), cache_read=number("cacheRead"), cache_write=number("cacheWrite")
    )
