"""Delegated tasks (SPEC K2): the durable link between a parent's ``delegate`` call and its children.

Each task is one child Background session. A task is ``waiting`` (its child exists, its brief is not
sent yet: the parent already has ``max_children`` running), ``running`` (the brief was sent), ``finished``
(the child's answer or failure is kept in ``result``) or ``cancelled`` (the parent stopped first). The
parent's call gets its result once every task of the call is finished or cancelled.
"""

from __future__ import annotations

from typing import Literal

import msgspec

TaskState = Literal["waiting", "running", "finished", "cancelled"]
TASK_STATES: tuple[TaskState, ...] = ("waiting", "running", "finished", "cancelled")
OPEN_TASK_STATES: frozenset[str] = frozenset({"waiting", "running"})  # the child has not ended yet


class DelegatedTask(msgspec.Struct, kw_only=True):
    child_session_id: str
    parent_session_id: str
    parent_execution_id: str
    parent_call_id: str
    position: int  # its place among the call's tasks, from 1
    brief: str
    depth: int  # 1 for a child of a session nobody delegated to
    state: TaskState = "waiting"
    result: str = ""
    is_error: bool = False
    restarts: int = 0  # times it was resumed after a Gateway restart cut it short
    delivered: bool = False  # the parent's call got the result (or ended without it): nothing more to do
    created_at: float = 0.0
    updated_at: float = 0.0


class TaskUpdate(msgspec.Struct, kw_only=True):
    """What a task's update changes; ``None`` keeps the field."""

    state: TaskState | None = None
    result: str | None = None
    is_error: bool | None = None
    restarts: int | None = None
    delivered: bool | None = None


def apply_update(task: DelegatedTask, update: TaskUpdate, now: float) -> DelegatedTask:
    """The task with the update's fields applied."""
    changes = {name: value for name in update.__struct_fields__ if (value := getattr(update, name)) is not None}
    return msgspec.structs.replace(task, **changes, updated_at=now)


def call_result(tasks: list[DelegatedTask]) -> tuple[str, bool]:
    """The text the parent's ``delegate`` call returns: each task's answer or failure, in order; an error
    only when every task failed."""
    parts = []
    for task in sorted(tasks, key=lambda t: t.position):
        if task.state == "cancelled":
            status = "cancelled"
        else:
            status = "failed" if task.is_error else "done"
        parts.append(f"## Task {task.position} ({status}, session {task.child_session_id})\n{task.result}".rstrip())
    failed = all(task.is_error or task.state == "cancelled" for task in tasks)
    return "\n\n".join(parts), bool(tasks) and failed


class TaskRequest(msgspec.Struct, kw_only=True, frozen=True):
    """One task as the model asked for it: the child's first message and, optionally, its settings."""

    brief: str
    role: str = ""  # "" : the parent's role
    model: str = ""  # "provider/model" or a model of the parent's provider; "": the parent's
    tools: tuple[str, ...] | None = None  # None: the parent's tools (without ask_user)
    folder: str = ""  # the child's workspace: a folder inside the parent's (W1); "": the parent's own
