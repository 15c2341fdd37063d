"""Codex CLI's rollout files (``$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<thread id>.jsonl``).

A rollout is linear: ``session_meta`` (the thread id, its folder), then for each turn a
``turn_context`` (the model) and ``response_item`` records — the conversation as the model saw it:
``message`` (user, assistant, developer), ``reasoning``, ``function_call`` / ``custom_tool_call`` and
their ``*_output``. ``event_msg`` records repeat the same conversation for clients and are not read
again; ``compacted`` holds a compaction's summary. A resumed thread appends to the same file.
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

FORMAT = "codex"
QUIET = frozenset({"event_msg", "token_usage_record", "world_state"})  # repeats of what response_item holds
CALLS = ("function_call", "custom_tool_call", "local_shell_call")
OUTPUTS = ("function_call_output", "custom_tool_call_output")


def parse(lines: Iterable[str], source: str, *, fallback_id: str = "") -> ImportedSession:
    session = ImportedSession(format=FORMAT, source_id=fallback_id)
    state = _State()
    for number, record in json_lines(lines, source):
        session.records += 1
        kind = text_of(record.get("type"))
        payload = object_of(record.get("payload"))
        at = timestamp(record.get("timestamp"))
        try:
            _record(session, state, kind, payload, at=at, number=number)
        except (TypeError, AttributeError, KeyError) as exc:
            raise SourceError(source, number, f"a {kind} record Codex did not write ({exc})") from None
    return finish(session)


class _State:
    def __init__(self) -> None:
        self.parent: str | None = None  # the key the next step hangs under
        self.model = ""
        self.thinking = ""
        self.answer: Step | None = None  # the answer further calls of the same response join
        self.usage: Usage | None = None


def _record(
    session: ImportedSession, state: _State, kind: str, payload: dict[str, Any], *, at: float | None, number: int
) -> None:
    if kind == "session_meta":
        if isinstance(payload.get("id"), str):
            session.source_id = payload["id"]
        if isinstance(payload.get("cwd"), str):
            session.cwd = payload["cwd"]
        session.started_at = timestamp(payload.get("timestamp")) or at
        return
    if kind == "turn_context":
        state.model = text_of(payload.get("model")) or state.model
        return
    if kind in QUIET:
        if kind == "event_msg" and payload.get("type") == "token_count":
            last = object_of(object_of(payload.get("info")).get("last_token_usage"))
            if state.answer is not None and last:
                data = state.answer.entries[0].data
                if isinstance(data, AssistantData) and data.usage is None:
                    data.usage = _usage(last)
        return
    if kind == "compacted":
        summary = text_of(payload.get("message"))
        _step(session, state, f"line-{number}", [notice("Codex compacted the conversation here")], at)
        if summary:
            _step(session, state, f"line-{number}-summary", [NewEntry(kind=EntryKind.USER, text=summary)], at)
        return
    if kind != "response_item":
        session.unknown[kind or "(no type)"] = session.unknown.get(kind or "(no type)", 0) + 1
        return
    item = text_of(payload.get("type"))
    key = f"line-{number}"
    if item == "message":
        _message(session, state, payload, key, at)
    elif item == "reasoning":
        state.thinking += "\n".join(
            text_of(part.get("text")) for part in payload.get("summary") or [] if isinstance(part, dict)
        )
    elif item in CALLS:
        arguments = payload.get("arguments") if item == "function_call" else payload.get("input")
        if item == "local_shell_call":
            arguments = payload.get("action")
        call = ToolCallData(
            call_id=text_of(payload.get("call_id")) or text_of(payload.get("id")),
            name=text_of(payload.get("name")) or ("shell" if item == "local_shell_call" else ""),
            arguments=args_of(arguments),
        )
        entry = NewEntry(kind=EntryKind.TOOL_CALL, data=call)
        if state.answer is not None and state.answer.key == state.parent:
            state.answer.entries.append(entry)
        else:
            answer = _answer_entry(state, "")
            state.answer = _step(session, state, key, [answer, entry], at)
    elif item in OUTPUTS:
        output = payload.get("output")
        text = output if isinstance(output, str) else text_of(output.get("content")) if isinstance(output, dict) else ""
        result = ToolResultData(call_id=text_of(payload.get("call_id")))
        _step(session, state, key, [NewEntry(kind=EntryKind.TOOL_RESULT, text=text, data=result)], at)
    else:
        session.unknown[f"response_item {item}"] = session.unknown.get(f"response_item {item}", 0) + 1


def _message(session: ImportedSession, state: _State, payload: dict[str, Any], key: str, at: float | None) -> None:
    role = text_of(payload.get("role"))
    texts = [
        text_of(part.get("text"))
        for part in payload.get("content") or []
        if isinstance(part, dict) and part.get("type") in ("input_text", "output_text", "text")
    ]
    images = sum(
        1 for part in payload.get("content") or [] if isinstance(part, dict) and part.get("type") == "input_image"
    )
    text = "\n".join(t for t in texts if t)
    if images:
        text += f"\n[{images} image attachment(s) in the source session, not imported]"
    if role == "assistant":
        state.answer = _step(session, state, key, [_answer_entry(state, text)], at)
    elif role == "user" and not text.lstrip().startswith("<"):
        _step(session, state, key, [NewEntry(kind=EntryKind.USER, text=text)], at)
    elif role == "user":  # what Codex adds to a turn itself (<environment_context>, <user_instructions>…)
        _step(session, state, key, [notice(text)], at)
    else:  # developer / system: the harness's own instructions
        session.unknown[f"{role or 'unnamed'} message (the harness's instructions)"] = (
            session.unknown.get(f"{role or 'unnamed'} message (the harness's instructions)", 0) + 1
        )


def _answer_entry(state: _State, text: str) -> NewEntry:
    data = AssistantData(provider="openai", model=state.model, thinking=state.thinking)
    state.thinking = ""
    return NewEntry(kind=EntryKind.ASSISTANT, text=text, data=data)


def _step(session: ImportedSession, state: _State, key: str, entries: list[NewEntry], at: float | None) -> Step:
    session.add(key, state.parent, entries, at)
    state.parent = key
    return session.steps[-1]


def _usage(last: dict[str, Any]) -> Usage:
    def number(name: str) -> int:
        value = last.get(name)
        return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0

    cached = number("cached_input_tokens")
    return Usage(input=max(0, number("input_tokens") - cached), output=number("output_tokens"), cache_read=cached)
