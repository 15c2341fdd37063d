"""anyy's entries and Gateway events as ACP ``session/update`` payloads: no I/O, no state.

The same mapping serves a live turn and a replay (``session/load``), so an editor shows a reloaded
session as it showed it live:

- a user entry and the answer to a question: ``user_message_chunk``;
- an assistant entry: its thinking as ``agent_thought_chunk``, its text as ``agent_message_chunk`` (live,
  the text and thinking come as the model streams them, and the recorded entry adds nothing);
- a question the model asked (``ask_user``): ``agent_message_chunk`` with the question;
- a tool call: ``tool_call`` (pending, with its arguments), ``tool_call_update`` in progress once it runs,
  then completed or failed with its output;
- a compaction or branch summary: ``agent_thought_chunk`` (what the model reads instead of older entries);
- a renamed session: ``session_info_update`` with its title.

Labels, model changes and notices are the Gateway's bookkeeping and are not shown.
"""

from __future__ import annotations

from typing import Any

from acp import helpers
from acp.schema import SessionInfoUpdate, ToolCallLocation, ToolKind

from anyy.api.entries import AssistantData, EntryView, ToolCallData, ToolResultData
from anyy.api.events import (
    EntriesAppended,
    RuntimeEvent,
    SessionRenamed,
    TextDeltaEvent,
    ThinkingDeltaEvent,
    ToolStarted,
)

TOOL_KINDS: dict[str, ToolKind] = {
    "read_file": "read",
    "list_dir": "read",
    "write_file": "edit",
    "edit_file": "edit",
    "shell": "execute",
    "web_fetch": "fetch",
    "ask_user": "think",
    "delegate": "think",
    "memory": "think",
    "skill": "read",
}
TITLE_LIMIT = 80


def tool_title(name: str, arguments: dict[str, Any]) -> str:
    """What the editor shows for a call: the tool and its main argument, cut short."""
    for key in ("command", "path", "file_path", "url", "query", "pattern"):
        value = arguments.get(key)
        if isinstance(value, str) and value:
            shown = value if len(value) <= TITLE_LIMIT else value[: TITLE_LIMIT - 1] + "…"
            return f"{name}: {shown}"
    return name


def tool_started(call_id: str, name: str, arguments: dict[str, Any], *, running: bool = False) -> Any:
    path = arguments.get("path") or arguments.get("file_path")
    locations = [ToolCallLocation(path=path)] if isinstance(path, str) and path.startswith("/") else None
    return helpers.start_tool_call(
        call_id,
        tool_title(name, arguments),
        kind=TOOL_KINDS.get(name, "other"),
        status="in_progress" if running else "pending",
        locations=locations,
        raw_input=arguments,
    )


def tool_ended(call_id: str, text: str, *, is_error: bool) -> Any:
    content = [helpers.tool_content(helpers.text_block(text))] if text else None
    return helpers.update_tool_call(
        call_id, status="failed" if is_error else "completed", content=content, raw_output={"output": text}
    )


def entry_updates(entry: EntryView, *, live: bool) -> list[Any]:
    """The updates that show one recorded entry (``live``: during a turn, when its text was streamed)."""
    data = entry.data
    if entry.kind in ("user", "answer"):
        return [] if live or not entry.text else [helpers.update_user_message_text(entry.text)]
    if isinstance(data, AssistantData):
        if live:
            return []
        shown: list[Any] = []
        if data.thinking:
            shown.append(helpers.update_agent_thought_text(data.thinking))
        if entry.text:
            shown.append(helpers.update_agent_message_text(entry.text))
        return shown
    if isinstance(data, ToolCallData):
        return [tool_started(data.call_id, data.name, data.arguments)]
    if isinstance(data, ToolResultData):
        return [tool_ended(data.call_id, entry.text, is_error=data.is_error)]
    if entry.kind == "question":
        return [helpers.update_agent_message_text(entry.text)] if entry.text else []
    if entry.kind in ("compaction", "branch_summary") and not live:
        return [helpers.update_agent_thought_text(entry.text)] if entry.text else []
    return []


def event_updates(event: RuntimeEvent, announced: set[str]) -> list[Any]:
    """The updates a Gateway event makes during a turn. ``announced``: the tool calls the editor has been
    shown (a call starts before its entry is appended; one waiting for approval is appended first), so
    each call is announced once, then updated."""
    if isinstance(event, TextDeltaEvent):
        return [helpers.update_agent_message_text(event.text)] if event.text else []
    if isinstance(event, ThinkingDeltaEvent):
        return [helpers.update_agent_thought_text(event.text)] if event.text else []
    if isinstance(event, ToolStarted):
        if event.parent_call_id:  # a Codemode script's own call: shown inside the script's
            return []
        if event.call_id in announced:
            return [helpers.update_tool_call(event.call_id, status="in_progress")]
        announced.add(event.call_id)
        return [tool_started(event.call_id, event.name, event.arguments, running=True)]
    if isinstance(event, EntriesAppended):
        shown: list[Any] = []
        for entry in event.entries:
            if isinstance(entry.data, ToolCallData):
                if entry.data.call_id in announced:
                    continue
                announced.add(entry.data.call_id)
            elif isinstance(entry.data, ToolResultData):
                announced.discard(entry.data.call_id)
            shown.extend(entry_updates(entry, live=True))
        return shown
    if isinstance(event, SessionRenamed):
        return [SessionInfoUpdate(session_update="session_info_update", title=event.title)]
    return []
