"""Compaction and branch-summary rules (R4, R5, T2): where to cut, what to ask, when to apply."""

from __future__ import annotations

from collections.abc import Sequence

from anyy.domain.context import ContextItem, tool_payload
from anyy.domain.entries import EntryKind
from anyy.domain.model_io import StopReason

SUMMARY_INSTRUCTIONS = (
    "You are compacting a long conversation so it can go on within the model's context window. Write a "
    "faithful, self-contained summary of the conversation below: the user's goals and constraints, decisions "
    "made, facts established, files and commands involved with their outcomes, open questions and the work in "
    "progress. Keep names, paths, numbers and errors exact. Write only the summary."
)
BRANCH_SUMMARY_INSTRUCTIONS = (
    "The user is leaving this branch of the conversation to continue from an earlier point. Summarise what "
    "was tried and learned on this branch (results, decisions, dead ends) in a few short paragraphs, so that "
    "it can be carried to the new position. Write only the summary."
)


def item_tokens(item: ContextItem) -> int:
    return (len(item[2]) + len(item[3] or "")) // 4 + 1


def choose_cut(items: Sequence[ContextItem], keep_tokens: int) -> int | None:
    """Index of the first item to keep verbatim, so that about ``keep_tokens`` of the newest context
    stays and the rest is summarised; ``None`` when there is nothing worth summarising.

    A cut is only made before a user message: it never separates a tool call from its result, nor an
    answer from the question that led to it.
    """
    kept = 0
    index = len(items)
    while index > 0 and kept < keep_tokens:
        index -= 1
        kept += item_tokens(items[index])
    # Move forward to the next turn boundary (a user message), never before the first item.
    for candidate in range(max(index, 1), len(items)):
        if items[candidate][1] == EntryKind.USER:
            return candidate
    return None


def summary_is_usable(text: str, stop: StopReason | None) -> str | None:
    """Why a summary must not be applied (R5), or ``None`` when it may: only a summary the model finished
    normally, with some text, ever replaces context."""
    if stop is None:
        return "the summary request did not finish"
    if stop == "length":
        return "the summary was cut off (the model hit its output limit)"
    if stop != "end":
        return f"the summary request ended with {stop!r}"
    if not text.strip():
        return "the model returned an empty summary"
    return None


def unresolved_calls(items: Sequence[ContextItem]) -> list[tuple[str, str, dict[str, object]]]:
    """Tool calls of the newest model response that have no result yet: ``(call_id, name, arguments)``.

    This is what a suspended execution still has to run once the user answered (the answer itself is
    the result of the ``ask_user`` call)."""
    calls: dict[str, tuple[str, str, dict[str, object]]] = {}
    for item in items:
        kind = item[1]
        if kind in (EntryKind.USER, EntryKind.ASSISTANT):
            calls.clear()  # a new turn or a new response: earlier calls are settled or abandoned
        elif kind == EntryKind.TOOL_CALL:
            data = tool_payload(item)
            call_id = str(data.get("call_id", ""))
            calls[call_id] = (call_id, str(data.get("name", "")), dict(data.get("arguments", {})))
        elif kind == EntryKind.TOOL_RESULT:
            calls.pop(str(tool_payload(item).get("call_id", "")), None)
    return list(calls.values())


def render_transcript(items: Sequence[ContextItem], previous_summary: str | None = None) -> str:
    """The part of a conversation to summarise, as plain text a model reads easily."""
    lines: list[str] = []
    if previous_summary:
        lines.append(f"[Summary of what came before]\n{previous_summary}\n")
    for item in items:
        kind, text = item[1], item[2]
        if kind == EntryKind.USER:
            lines.append(f"User: {text}")
        elif kind == EntryKind.ASSISTANT:
            if text:
                lines.append(f"Assistant: {text}")
        elif kind == EntryKind.TOOL_CALL:
            data = tool_payload(item)
            lines.append(f"[Tool call {data.get('name', '?')} {data.get('arguments', {})}]")
        elif kind == EntryKind.TOOL_RESULT:
            data = tool_payload(item)
            flag = " (error)" if data.get("is_error") else ""
            lines.append(f"[Tool result{flag}] {text[:4000]}")
        elif kind == EntryKind.BRANCH_SUMMARY:
            lines.append(f"[Summary of a branch left earlier] {text}")
    return "\n".join(lines)
