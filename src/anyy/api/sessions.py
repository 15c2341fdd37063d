"""Sessions, their queues and executions, and the results of the methods on them, as the wire carries
them."""

from __future__ import annotations

from typing import Any, Generic, Literal, TypeVar

import msgspec

from anyy.api.entries import Attachment

SessionKind = Literal["chat", "background"]
QueueMode = Literal["all", "one-at-a-time"]
GoalState = Literal["active", "paused"]
GoalAction = Literal["set", "status", "pause", "resume", "clear"]
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

T = TypeVar("T")


class Page(msgspec.Struct, Generic[T], kw_only=True):
    """One page of a listing; pass ``next_cursor`` back to get the next one (``None``: the end)."""

    items: list[T]
    next_cursor: str | None


class Goal(msgspec.Struct, kw_only=True):
    text: str
    state: GoalState = "active"


OriginKind = Literal["schedule", "delegate", "resident", "import"]


class Origin(msgspec.Struct, kw_only=True, frozen=True, omit_defaults=True):
    """Why a Background session exists: a schedule's run, a delegated task (parent session and call),
    or a resident; ``name`` is the schedule's or resident's name when the session was made."""

    kind: OriginKind
    name: str = ""
    schedule_id: str | None = None
    scheduled_for: float | None = None
    parent_session_id: str | None = None
    parent_call_id: str | None = None
    resident_id: str | None = None
    source: str | None = None  # an imported session: "FORMAT:ID" of the conversation it came from


ActivityState = Literal["running", "retrying", "waiting_answer", "waiting_tasks", "queued", "idle"]


class Activity(msgspec.Struct, kw_only=True, frozen=True, omit_defaults=True):
    """What a Background session is doing, as lists show it (K4): ``state`` — running, retrying (waiting
    to call the model again), waiting_answer (a question for the user), waiting_tasks (for the tasks it
    delegated), queued (items wait and nothing runs: after a stop, a failure or a restart) or idle — and
    how its last execution ended."""

    state: ActivityState
    pending: int = 0  # items waiting in its queue
    outcome: str | None = None  # the last ended execution: completed, failed, interrupted, timed_out; None: none
    error: str | None = None  # that execution's error or note, when it did not complete
    ended_at: float | None = None
    tasks: int = 0  # the tasks it delegated (``session.children`` lists them)


class Session(msgspec.Struct, kw_only=True):
    id: str
    kind: SessionKind
    title: str
    role: str
    provider: str
    model: str
    effort: str
    tools: dict[str, Any]
    steering_mode: QueueMode
    follow_up_mode: QueueMode
    goal: Goal | None
    head: int | None
    forked_from: str | None
    created_at: float
    updated_at: float
    origin: Origin | None = None
    preview: str = ""  # the last message, cut short, in lists of sessions (U1); "" elsewhere
    activity: Activity | None = None  # Background sessions in lists: state and last outcome (K4); None elsewhere
    # The directory its tools work in (W1), absolute and canonical; None: a session made before workspaces,
    # which works in the Gateway's working directory.
    workspace: str | None = None


class Submission(msgspec.Struct, kw_only=True):
    """A queue item (a prompt, a steering message or a follow-up) and its outcome, kept forever."""

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
    # session.wait only: the end its execution reached could not be written yet (a full disk, D1); the
    # state stays ``taken`` until it is, and the Gateway writes it again on its own when space returns.
    blocked: BlockedView | None = None


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


class Question(msgspec.Struct, kw_only=True):
    """What the model asked (ask_user): the question entry and its text."""

    entry_id: int
    text: str


class WaitingQuestion(msgspec.Struct, kw_only=True):
    """A question the model asked (ask_user) that suspends an execution until it is answered."""

    execution_id: str
    entry_id: int
    question: str


class RetryView(msgspec.Struct, kw_only=True):
    """A retry wait in progress: why, which attempt comes next, and how long is left."""

    execution_id: str
    attempt: int
    of: int
    seconds_left: float
    error: str


class BlockedView(msgspec.Struct, kw_only=True):
    """An execution that ended but whose end could not be written (a full disk): the session waits, its
    queue kept, until the store takes it; it is written again on its own and at every request."""

    execution_id: str
    state: ExecutionState  # the end it reached (on disk it is still running until written)
    error: str  # why the write failed
    seconds: float  # how long the session has been waiting


class RunningTool(msgspec.Struct, kw_only=True):
    """A tool call the running execution has started and not finished (its ``tool_started`` event), for a
    client that opens the session while it runs."""

    call_id: str
    name: str
    arguments: dict[str, Any]
    parent_call_id: str = ""  # set for a call a Codemode script made: the script's call


class SessionView(msgspec.Struct, kw_only=True):
    session: Session
    running_execution: str | None  # the execution running now, if any: what a stop would capture
    live_text: str  # what the model has streamed so far in the running pass
    waiting_question: WaitingQuestion | None = None  # set while an execution waits for an answer
    context_tokens: int | None = None  # what the model re-read for the last response on this path
    context_budget: int = 0  # the profile's compaction budget: past it, older entries are summarised
    retry_wait: RetryView | None = None  # set while the running execution waits to retry a failed model call
    blocked: BlockedView | None = None  # set while the end of the last execution waits to be written (D1)
    running_tools: list[RunningTool] = []  # the calls running now, oldest first (a script's before its own)


class TreeNode(msgspec.Struct, kw_only=True):
    id: int
    parent: int | None
    kind: str
    preview: str
    label: str | None
    depth: int  # indentation: grows only where the tree branches
    children: int
    on_path: bool  # between the root and the head
    is_head: bool


class TreeView(msgspec.Struct, kw_only=True):
    head: int | None
    nodes: list[TreeNode]  # depth-first, oldest child first
    labels: dict[int, str]


class SearchHit(msgspec.Struct, kw_only=True):
    session_id: str
    session_title: str
    session_kind: str
    entry_id: int
    kind: str
    snippet: str
    created_at: float


class StopResult(msgspec.Struct, kw_only=True):
    stopped: bool  # False: that execution had already ended, and nothing was touched


class FilesRewind(msgspec.Struct, kw_only=True):
    """The workspace's files at a navigation (W3): what a restore would change (``preview``) or changed."""

    preview: bool
    workspace: str
    target: str  # the capture restored to
    added: list[str] = []
    changed: list[str] = []
    removed: list[str] = []
    hand_edited: list[str] = []  # changed by hand since the agent's last capture (preview)
    kept: list[str] = []  # changed by hand: left as they are
    not_restorable: list[str] = []  # large files recorded but not copied; paths blocked by a symlink


class NavigateResult(msgspec.Struct, kw_only=True):
    session: Session
    draft: str | None  # the user message moved before, for the editor (T2)
    summary_applied: bool
    note: str | None
    files: FilesRewind | None = None


class FilesDiff(msgspec.Struct, kw_only=True):
    """What the agent changed in the workspace (W3): between two captures, as a summary and a unified diff."""

    session_id: str
    workspace: str
    base: str  # capture commits; "" when there is none
    target: str
    added: list[str] = []
    changed: list[str] = []
    removed: list[str] = []
    large: list[str] = []  # large files: recorded by size and hash, not copied (their content is not shown)
    text: str = ""


class CompactResult(msgspec.Struct, kw_only=True):
    applied: bool


class ExportResult(msgspec.Struct, kw_only=True):
    format: str
    content: str


class ForkResult(msgspec.Struct, kw_only=True):
    session: Session
    draft: str | None
    interrupted: str | None  # the original's execution this fork stopped, if one was running
    settle_error: str | None = None  # the fork stays recorded even if stopping that work failed
    workspace_copy: str | None = None  # the folder made for the fork's own workspace, if one was asked (W3)


class Modes(msgspec.Struct, kw_only=True):
    steering: QueueMode
    follow_up: QueueMode


class GoalResult(msgspec.Struct, kw_only=True):
    goal: Goal | None


class ReloadStep(msgspec.Struct, kw_only=True):
    step: str
    applied: bool
    detail: str


class DelegatedTask(msgspec.Struct, kw_only=True):
    """One child of a parent's ``delegate`` call (K2): its session, brief, state and, once it ended, its
    answer or failure. ``state``: waiting (not started: the call's other children fill the slots),
    running, finished or cancelled (the parent was stopped); ``delivered``: the parent's call has it."""

    child_session_id: str
    parent_session_id: str
    parent_call_id: str
    position: int
    brief: str
    depth: int
    state: str
    result: str
    is_error: bool
    delivered: bool
    created_at: float
    updated_at: float
