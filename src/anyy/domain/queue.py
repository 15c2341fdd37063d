"""Submissions (queue items) and executions, and the rules of their states.

A submission is durable before it is acknowledged and keeps its own outcome forever (SPEC C5)::

    pending ──take──▶ taken ──▶ completed | failed | interrupted | timed_out
       │                 └────▶ suspended (the execution asked a question) ──▶ taken
       ├──cancel──▶ cancelled   (one item removed by a client)
       └──clear───▶ cleared     (the whole queue emptied)

Only a *pending* item may be edited, steered, cancelled or cleared; anything else is a conflict (Q3).
"""

from __future__ import annotations

from typing import Literal

import msgspec

from anyy.domain.entries import Attachment
from anyy.domain.errors import Conflict, InvalidInput

SubmissionKind = Literal["prompt", "steering", "follow_up"]
SubmissionState = Literal[
    "pending",
    "taken",
    "suspended",
    "completed",
    "failed",
    "interrupted",
    "timed_out",
    "cancelled",
    "cleared",
    "budget_exhausted",
]
ExecutionState = Literal[
    "running", "retry_wait", "suspended", "completed", "failed", "interrupted", "timed_out", "budget_exhausted"
]

SUBMISSION_KINDS: tuple[SubmissionKind, ...] = ("prompt", "steering", "follow_up")
FINAL_SUBMISSION_STATES: frozenset[str] = frozenset(
    {"completed", "failed", "interrupted", "timed_out", "cancelled", "cleared", "budget_exhausted"}
)
ACTIVE_EXECUTION_STATES: frozenset[str] = frozenset({"running", "retry_wait", "suspended"})
FINAL_EXECUTION_STATES: frozenset[str] = frozenset(
    {"completed", "failed", "interrupted", "timed_out", "budget_exhausted"}
)


class Submission(msgspec.Struct, kw_only=True):
    id: str
    session_id: str
    kind: SubmissionKind
    text: str
    attachments: list[Attachment]
    state: SubmissionState
    position: int
    version: int
    execution_id: str | None
    entry_id: int | None
    error: str | None
    created_at: float
    updated_at: float


class NewSubmission(msgspec.Struct, kw_only=True):
    kind: SubmissionKind = "prompt"
    text: str = ""
    attachments: list[Attachment] = []
    # A client's key for a send it may retry (D8): the same key in the same session gets the submission
    # the first send made, instead of a second one.
    key: str | None = None


MAX_KEY_LENGTH = 200


def same_send(existing: Submission, new: NewSubmission) -> Submission:
    """The submission a retried send (same key) gets back; a different message under that key is refused."""
    if (existing.kind, existing.text) != (new.kind, new.text):
        raise Conflict(
            f"idempotency key {new.key!r} was already used for another message in this session "
            f"(submission {existing.id}): use a new key for a new message"
        )
    return existing


class Execution(msgspec.Struct, kw_only=True):
    id: str
    session_id: str
    state: ExecutionState
    submission_ids: list[str]
    passes: int
    error: str | None
    note: str | None
    started_at: float
    ended_at: float | None


def check_new_submission(new: NewSubmission) -> NewSubmission:
    """The submission with its attachments checked (plain dicts are accepted), or InvalidInput."""
    try:
        attachments = msgspec.convert(new.attachments, list[Attachment])
    except msgspec.ValidationError as exc:
        raise InvalidInput(f"invalid attachment: {exc}") from None
    if new.key is not None and not (0 < len(new.key) <= MAX_KEY_LENGTH and new.key.isprintable()):
        raise InvalidInput(f"an idempotency key is 1 to {MAX_KEY_LENGTH} printable characters, e.g. a UUID")
    new = NewSubmission(kind=new.kind, text=new.text, attachments=attachments, key=new.key)
    if new.kind not in SUBMISSION_KINDS:
        raise InvalidInput(f"unknown submission kind {new.kind!r}; use one of {', '.join(SUBMISSION_KINDS)}")
    if not isinstance(new.text, str) or (not new.text.strip() and not new.attachments):
        raise InvalidInput("a submission needs text or at least one attachment")
    return new


def check_editable(sub: Submission, expected_version: int | None) -> None:
    """Raise Conflict unless ``sub`` is still pending (and at the version the caller saw)."""
    if sub.state != "pending":
        raise Conflict(
            f"submission {sub.id} is {sub.state}, no longer pending: it can't be edited, steered or "
            "removed. Refresh the queue; your unsent text is still yours."
        )
    if expected_version is not None and sub.version != expected_version:
        raise Conflict(
            f"submission {sub.id} changed since you read it (version {expected_version}, now "
            f"{sub.version}). Refresh the queue and try again."
        )


def check_execution_transition(current: str, new: str) -> None:
    if current in FINAL_EXECUTION_STATES:
        raise Conflict(f"the execution already ended ({current}); it can't become {new}")
    allowed = ACTIVE_EXECUTION_STATES | FINAL_EXECUTION_STATES
    if new not in allowed:
        raise InvalidInput(f"unknown execution state {new!r}")


def outcome_for(execution_state: str) -> SubmissionState:
    """The outcome a taken submission records when its execution reaches ``execution_state``."""
    if execution_state == "suspended":
        return "suspended"
    if execution_state in ("running", "retry_wait"):
        return "taken"
    if execution_state in FINAL_EXECUTION_STATES:
        return execution_state  # type: ignore[return-value]
    raise InvalidInput(f"unknown execution state {execution_state!r}")


def inputs_to_start(pending: list[Submission], steering_mode: str, follow_up_mode: str) -> list[Submission]:
    """What an idle session starts its next execution with (Q1, Q7).

    Steering left over from a finished response goes first; otherwise the oldest prompt or follow-up,
    or every one of them with the ``all`` mode. A mode never turns steering into follow-up."""
    steering = [sub for sub in pending if sub.kind == "steering"]
    if steering:
        return steering if steering_mode == "all" else steering[:1]
    others = sorted((sub for sub in pending if sub.kind != "steering"), key=lambda sub: sub.position)
    return others if follow_up_mode == "all" else others[:1]


def steering_to_take(pending: list[Submission], steering_mode: str) -> list[Submission]:
    """The steering items a checkpoint takes: all of them, or the oldest one."""
    steering = sorted((sub for sub in pending if sub.kind == "steering"), key=lambda sub: sub.position)
    return steering if steering_mode == "all" else steering[:1]
