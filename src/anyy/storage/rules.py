"""Checks and error messages every backend shares, so that each refuses the same input in the same words."""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from anyy.domain.entries import (
    INNER_RESULT_CHARS,
    AssistantData,
    EntryKind,
    InnerCall,
    NewEntry,
    NoticeData,
    ToolCallData,
    ToolResultData,
)
from anyy.domain.errors import Conflict, InvalidInput, NotFound
from anyy.domain.sessions import QUEUE_MODES, SESSION_KINDS

# Bodies longer than this (in UTF-8 bytes) are stored as objects, not in the entry (SPEC A3).
BODY_THRESHOLD = 64 * 1024
# The media type of a large body stored as an object.
BODY_MEDIA_TYPE = "text/plain; charset=utf-8"
# Uploads (put_object) nothing references are removed after this grace period, checked this often.
UNUSED_OBJECT_GRACE = 24 * 3600.0
SWEEP_INTERVAL = 3600.0


def check_kind(kind: str | None) -> None:
    if kind is not None and kind not in SESSION_KINDS:
        raise InvalidInput(f"session kind must be 'chat' or 'background', not {kind!r}")


def check_modes(steering: str, follow_up: str) -> None:
    for name, mode in (("steering", steering), ("follow_up", follow_up)):
        if mode not in QUEUE_MODES:
            raise InvalidInput(f"{name} mode must be one of {', '.join(QUEUE_MODES)}, not {mode!r}")


def check_workspace(workspace: str | None) -> None:
    """A session's workspace is an absolute path (W1); which one, and whether it exists, is the runtime's
    business (a store may serve Gateways on several hosts)."""
    if workspace is None:
        return
    if not isinstance(workspace, str) or not workspace.startswith("/") or "\0" in workspace:
        raise InvalidInput(f"a session's workspace must be an absolute directory path, not {workspace!r}")


def check_goal_state(state: str) -> None:
    if state not in ("active", "paused"):
        raise InvalidInput("a goal's state is 'active' or 'paused'")


def parse_entry_kind(kind: object) -> EntryKind:
    if type(kind) is EntryKind:
        return kind
    if isinstance(kind, str):
        return EntryKind.parse(kind)
    try:
        return EntryKind(kind)  # type: ignore[arg-type]
    except (ValueError, TypeError):
        names = ", ".join(k.label for k in EntryKind)
        raise InvalidInput(f"unknown entry kind {kind!r}; the kinds are: {names}") from None


def check_text(text: object) -> None:
    if not isinstance(text, str):
        raise InvalidInput(f"an entry's text must be a string, not {type(text).__name__}")


def nothing_to_append() -> InvalidInput:
    return InvalidInput("nothing to append: pass at least one entry")


def invalid_text(exc: UnicodeEncodeError) -> InvalidInput:
    return InvalidInput(f"the text is not valid Unicode ({exc.reason} at position {exc.start}); nothing was written")


def unknown_attachment(obj: str) -> InvalidInput:
    return InvalidInput(f"attachment object {obj} is unknown: upload it with put_object first")


def attachment_size(obj: str, claimed: int, actual: int) -> InvalidInput:
    """An attachment whose claimed size is not its object's (0 means "not given" and is accepted)."""
    return InvalidInput(
        f"attachment object {obj} is {actual} bytes, not the {claimed} the attachment claims: send its real size "
        "(or none)"
    )


def head_moved(session_id: str, expected: int | None, head: int | None) -> Conflict:
    return Conflict(
        f"the head of session {session_id} moved (expected {expected}, now {head}); reload the session and try again"
    )


def missing_session(profile: str, session_id: str) -> NotFound:
    return NotFound(
        f"no session {session_id!r} in profile {profile!r}. List the sessions of this profile "
        f"with `anyy sessions list --profile {profile}` (Chats) or add `--kind background` "
        "(Background); a session of another profile needs that --profile."
    )


def missing_entry(profile: str, session_id: str, entry_id: object) -> NotFound:
    return NotFound(
        f"entry {entry_id} is not in the tree of session {session_id!r} (profile {profile!r}); "
        f"see `anyy sessions tree {session_id}`"
    )


def missing_submission(profile: str, submission_id: str) -> NotFound:
    return NotFound(
        f"no submission {submission_id!r} in profile {profile!r}; list a session's queue with session.queue.list"
    )


def missing_execution(profile: str, execution_id: str) -> NotFound:
    return NotFound(f"no execution {execution_id!r} in profile {profile!r}")


def stale_cursor() -> InvalidInput:
    return InvalidInput(
        "this page cursor is no longer on the session's current path (the head moved): "
        "load the history again from the newest page"
    )


def session_busy(session_id: str, execution_id: str, state: str) -> Conflict:
    return Conflict(f"session {session_id} is busy: execution {execution_id} is {state}")


def execution_ended(execution_id: str, state: str) -> Conflict:
    return Conflict(f"execution {execution_id} already ended ({state})")


def unfinished_work(session_id: str, running: int, pending: int) -> Conflict:
    return Conflict(
        f"session {session_id} has unfinished work ({running} execution(s) running or waiting for "
        f"an answer, {pending} pending queue item(s)); nothing was stopped or deleted. Stop the "
        "work and clear the queue first."
    )


def too_many_links() -> InvalidInput:
    return InvalidInput("link_submissions names more submissions than the pass has user entries")


def not_this_session(submission_id: str) -> InvalidInput:
    return InvalidInput(f"submission {submission_id} belongs to another session")


def snapshot_target_exists(target: object) -> InvalidInput:
    return InvalidInput(f"{target} already exists: a snapshot goes into an empty folder")


class KeptCall(msgspec.Struct, kw_only=True):
    """A tool call of a running pass, as the store kept it (D3)."""

    call_id: str
    name: str
    arguments: str  # as encoded (JSON)
    output: str
    done: bool
    parent: str = ""  # a Codemode script's inner call: the run_script call's id


INTERRUPTED_CALL = "Interrupted: the Gateway stopped while this call ran; what it started was ended."
STREAM_KINDS = ("thinking", "text")  # what a kept piece of a running pass's stream is (D4)


class KeptStream(msgspec.Struct, kw_only=True):
    """What a running pass had streamed, as the store kept it (D4): its answer's text and its thinking,
    each its pieces joined, and the provider and model of the last piece."""

    provider: str
    model: str
    text: str = ""
    thinking: str = ""


def kept_stream(rows: Sequence[tuple[str, str, str, str]]) -> KeptStream | None:
    """The kept pieces ``(kind, provider, model, text)``, in order, joined by kind."""
    if not rows:
        return None
    by_kind: dict[str, list[str]] = {kind: [] for kind in STREAM_KINDS}
    for kind, _provider, _model, text in rows:
        by_kind[kind].append(text)
    last = rows[-1]
    return KeptStream(
        provider=last[1], model=last[2], text="".join(by_kind["text"]), thinking="".join(by_kind["thinking"])
    )


def stream_pieces(text: str, thinking: str) -> list[tuple[str, str]]:
    """The pieces one save keeps, ``(kind, text)``: the thinking first (it streams before the answer)."""
    return [(kind, piece) for kind, piece in (("thinking", thinking), ("text", text)) if piece]


def recovered_entries(note: str, kept: KeptStream | None, calls: Sequence[KeptCall] = ()) -> tuple[list[NewEntry], str]:
    """What recovery appends for one execution that was running when the Gateway died, and its note:
    the answer's text and thinking kept so far, if any, as an interrupted assistant message (D4); the
    tool calls it had made, each with its result, or what it printed before the stop, marked interrupted
    (D3); then a notice that says exactly what was kept."""
    entries: list[NewEntry] = []
    if kept is not None and (kept.text or kept.thinking):
        data = AssistantData(
            provider=kept.provider,
            model=kept.model,
            stop_reason="interrupted",
            interrupted=True,
            thinking=kept.thinking,
        )
        entries.append(NewEntry(kind=EntryKind.ASSISTANT, text=kept.text, data=data))
        said = f"Kept: {_kept_parts(kept)}, as saved while it streamed (marked interrupted); anything streamed "
        said += "after the last save was lost."
    else:
        said = "No text of its answer had been saved yet."
    top = [call for call in calls if not call.parent]
    entries += [_call_entry(call) for call in top]
    entries += [_result_entry(call, [c for c in calls if c.parent == call.call_id]) for call in top]
    names = {call.call_id: call.name for call in top}
    cut = [f"{c.name} (in {names.get(c.parent)})" if c.parent else c.name for c in calls if not c.done]
    if cut:
        said += f" Tool calls stopped and recorded as interrupted, with what they printed: {', '.join(cut)}."
    full = f"{note} {said}"
    entries.append(NewEntry(kind=EntryKind.NOTICE, text=full, data=NoticeData(level="warning")))
    return entries, full


def _kept_parts(kept: KeptStream) -> str:
    parts = [f"the first {len(kept.thinking):,} characters of its thinking"] if kept.thinking else []
    if kept.text:
        parts.append(f"the first {len(kept.text):,} characters of its answer")
    else:
        parts.append("no text of its answer yet")
    return " and ".join(parts)


def _call_entry(call: KeptCall) -> NewEntry:
    arguments = msgspec.json.decode(call.arguments) if call.arguments else {}
    return NewEntry(
        kind=EntryKind.TOOL_CALL, data=ToolCallData(call_id=call.call_id, name=call.name, arguments=arguments)
    )


def _result_entry(call: KeptCall, inner: Sequence[KeptCall] = ()) -> NewEntry:
    text = _result_text(call)
    return NewEntry(
        kind=EntryKind.TOOL_RESULT,
        text=text,
        data=ToolResultData(
            call_id=call.call_id,
            name=call.name,
            is_error=not call.done,
            inner_calls=[_inner_call(c) for c in inner],
        ),
    )


def _result_text(call: KeptCall) -> str:
    return call.output if call.done else f"{INTERRUPTED_CALL}\nWhat it printed before:\n{call.output}"


def _inner_call(call: KeptCall) -> InnerCall:
    arguments = msgspec.json.decode(call.arguments) if call.arguments else {}
    return InnerCall(
        name=call.name, arguments=arguments, result=_result_text(call)[:INNER_RESULT_CHARS], is_error=not call.done
    )
