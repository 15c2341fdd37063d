"""Claude Code's session files (``~/.claude/projects/<folder>/<session id>.jsonl``), read into a tree.

Each line is a record; ``user`` and ``assistant`` records carry ``uuid`` and ``parentUuid``, which make
the tree (a rewound or edited prompt is a second child of an earlier record: a branch). One model
response may be written as several ``assistant`` records sharing ``message.id`` (its thinking, its text,
each tool call): they become one answer. Tool results come back as ``user`` records holding
``tool_result`` blocks. A compaction starts a new root (``parentUuid`` null) with ``logicalParentUuid``
naming the record it follows, which is where it is hung here, so the tree stays whole. Bookkeeping
records (queue operations, the last prompt, mode and snapshot records) carry no conversation;
sidechain records (a sub-agent's own work) and record kinds not known here are counted in one notice.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from anyy.domain.entries import AssistantData, EntryKind, NewEntry, ToolCallData, ToolResultData, Usage
from anyy.domain.imports.model import (
    ImportedSession,
    SourceError,
    Step,
    args_of,
    finish,
    json_lines,
    notice,
    object_of,
    text_of,
    timestamp,
)

FORMAT = "claude-code"
BOOKKEEPING = frozenset(
    {"queue-operation", "last-prompt", "mode", "file-history-snapshot", "summary", "custom-title", "tag", "pr-link"}
)


def parse(lines: Iterable[str], source: str, *, fallback_id: str = "") -> ImportedSession:
    session = ImportedSession(format=FORMAT, source_id=fallback_id)
    steps: dict[str, Step] = {}
    alias: dict[str, str | None] = {}  # a record's uuid -> the step holding it (merged answers, empty records)
    last_leaf: str | None = None
    for number, record in json_lines(lines, source):
        session.records += 1
        kind = text_of(record.get("type"))
        if kind in BOOKKEEPING:
            if kind == "custom-title" and text_of(record.get("customTitle")):
                session.title = text_of(record.get("customTitle"))
            if kind == "summary" and not session.title and text_of(record.get("summary")):
                session.title = text_of(record.get("summary"))
            if kind == "last-prompt" and isinstance(record.get("leafUuid"), str):
                last_leaf = record["leafUuid"]
            continue
        uuid = record.get("uuid")
        if kind not in ("user", "assistant", "system", "attachment") or not isinstance(uuid, str):
            session.unknown[kind or "(no type)"] = session.unknown.get(kind or "(no type)", 0) + 1
            continue
        if record.get("isSidechain") is True:
            session.unknown["sidechain"] = session.unknown.get("sidechain", 0) + 1
            continue
        if not session.source_id and isinstance(record.get("sessionId"), str):
            session.source_id = record["sessionId"]
        if session.cwd is None and isinstance(record.get("cwd"), str):
            session.cwd = record["cwd"]
        at = timestamp(record.get("timestamp"))
        if session.started_at is None:
            session.started_at = at
        raw_parent = record.get("parentUuid")
        if raw_parent is None:
            raw_parent = record.get("logicalParentUuid")
        parent = alias.get(raw_parent, raw_parent) if isinstance(raw_parent, str) else None
        if parent is not None and parent not in steps:
            parent = None  # a parent outside this file (a session resumed from another one): a root
        try:
            alias[uuid] = _record(session, steps, record, kind=kind, uuid=uuid, parent=parent, at=at)
        except (TypeError, AttributeError, KeyError) as exc:
            raise SourceError(source, number, f"a {kind} record Claude Code did not write ({exc})") from None
    leaf = alias.get(last_leaf) if last_leaf is not None else None
    if leaf is not None and leaf in steps:
        session.head = leaf
    return finish(session)


def _record(
    session: ImportedSession,
    steps: dict[str, Step],
    record: dict[str, Any],
    *,
    kind: str,
    uuid: str,
    parent: str | None,
    at: float | None,
) -> str | None:
    """Add what one record holds; the key of the step later records hang under."""
    message = object_of(record.get("message"))
    if kind == "assistant":
        return _answer(session, steps, message, uuid=uuid, parent=parent, at=at)
    if kind == "user":
        entries = _user(message, meta=record.get("isMeta") is True)
    elif kind == "system":
        entries = _system(record)
    else:  # attachment: what Claude Code adds to the context itself (listings of skills, agents…)
        entries = []
    key = session.add(uuid, parent, entries, at)
    if entries:
        steps[uuid] = session.steps[-1]
    return key


def _answer(
    session: ImportedSession,
    steps: dict[str, Step],
    message: dict[str, Any],
    *,
    uuid: str,
    parent: str | None,
    at: float | None,
) -> str:
    previous = steps.get(parent) if parent is not None else None
    message_id = text_of(message.get("id"))
    if (
        previous is not None
        and message_id
        and previous.entries
        and previous.entries[0].kind == EntryKind.ASSISTANT
        and previous.tag == message_id
    ):
        step = previous  # another piece of the same response
    else:
        fresh = AssistantData(provider="anthropic", model=text_of(message.get("model")), usage=_usage(message))
        step = Step(key=uuid, parent=parent, entries=[NewEntry(kind=EntryKind.ASSISTANT, data=fresh)], at=at)
        step.tag = message_id
        session.steps.append(step)
        steps[uuid] = step
    answer = step.entries[0]
    data = answer.data
    if not isinstance(data, AssistantData):  # the parser's own invariant: an answer step starts with its answer
        raise TypeError("an answer step without its answer")
    content = message.get("content")
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
    for block in blocks if isinstance(blocks, list) else []:
        if not isinstance(block, dict):
            continue
        part = block.get("type")
        if part == "text":
            answer.text += text_of(block.get("text"))
        elif part == "thinking":
            data.thinking += text_of(block.get("thinking"))
        elif part == "tool_use":
            call = ToolCallData(
                call_id=text_of(block.get("id")), name=text_of(block.get("name")), arguments=args_of(block.get("input"))
            )
            step.entries.append(NewEntry(kind=EntryKind.TOOL_CALL, text="", data=call))
        elif part == "redacted_thinking":
            data.thinking += "[redacted thinking]"
    stop = text_of(message.get("stop_reason"))
    if stop:
        data.stop_reason = stop
    usage = _usage(message)
    if usage is not None:
        data.usage = usage
    return step.key


def _usage(message: dict[str, Any]) -> Usage | None:
    usage = message.get("usage")
    if not isinstance(usage, dict):
        return None

    def number(name: str) -> int:
        value = usage.get(name)
        return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0

    return Usage(
        input=number("input_tokens"),
        output=number("output_tokens"),
        cache_read=number("cache_read_input_tokens"),
        cache_write=number("cache_creation_input_tokens"),
    )


def _user(message: dict[str, Any], *, meta: bool) -> list[NewEntry]:
    content = message.get("content")
    if isinstance(content, str):
        return [notice(content) if meta else NewEntry(kind=EntryKind.USER, text=content)]
    texts: list[str] = []
    out: list[NewEntry] = []
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, dict):
            continue
        part = block.get("type")
        if part == "tool_result":
            out.append(
                NewEntry(
                    kind=EntryKind.TOOL_RESULT,
                    text=_result_text(block.get("content")),
                    data=ToolResultData(
                        call_id=text_of(block.get("tool_use_id")), is_error=block.get("is_error") is True
                    ),
                )
            )
        elif part == "text":
            texts.append(text_of(block.get("text")))
        elif part == "image":
            texts.append(_image_note(block))
    if texts:
        text = "\n".join(texts)
        out.append(notice(text) if meta else NewEntry(kind=EntryKind.USER, text=text))
    return out


def _result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for block in content if isinstance(content, list) else []:
        if isinstance(block, dict) and block.get("type") == "text":
            parts.append(text_of(block.get("text")))
        elif isinstance(block, dict) and block.get("type") == "image":
            parts.append(_image_note(block))
    return "\n".join(parts)


def _image_note(block: dict[str, Any]) -> str:
    source = object_of(block.get("source"))
    media = text_of(source.get("media_type")) or "image"
    return f"[{media} attachment in the source session, not imported]"


def _system(record: dict[str, Any]) -> list[NewEntry]:
    subtype = text_of(record.get("subtype"))
    if subtype == "compact_boundary":
        return [notice("Claude Code compacted the conversation here; its summary follows")]
    content = text_of(record.get("content"))
    if not content:
        return []
    level = "warning" if text_of(record.get("level")) in ("warning", "error") else "info"
    return [notice(content, level)]
