"""Every method's parameters: structs that refuse unknown fields (a typo is an error, never ignored)."""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

from anyy.api.entries import Attachment
from anyy.api.sessions import GoalAction, QueueMode, SessionKind, SubmissionKind


class Params(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Base of every method's parameters."""


class NoParams(Params):
    pass


class SessionRef(Params):
    session_id: str


class CreateParams(Params):
    kind: SessionKind = "chat"
    title: str = ""
    role: str = "default"
    # The session's workspace (W1): an absolute directory on the Gateway's host (a client resolves a relative
    # one against its own directory); None: the profile's [workspaces] default, else the Gateway's directory.
    workspace: str | None = None


class ListParams(Params):
    kind: SessionKind | None = None
    limit: int = 50
    cursor: str | None = None


class PageParams(Params):
    session_id: str
    limit: int = 50
    cursor: str | None = None


class SearchParams(Params):
    query: str
    kind: SessionKind | None = None
    session_id: str | None = None
    limit: int = 20


class RenameParams(Params):
    session_id: str
    title: str


class NewSessionParams(Params):
    """A session ``session.send`` creates with its first message (U1): the ``session.create`` fields, and
    the settings a client may choose before that message (None: the profile's)."""

    kind: SessionKind = "chat"
    title: str = ""
    role: str = "default"
    provider: str | None = None
    model: str | None = None
    effort: str | None = None
    tools: list[str] | None = None  # the enabled tools; None: the profile's selection
    codemode: bool | None = None
    workspace: str | None = None  # absolute (W1); None: the profile's [workspaces] default, else the Gateway's


class SendParams(Params, kw_only=True):
    session_id: str | None = None  # the session to send to; or else `new`
    # A session to create with this message, both written or neither (U1): kind, title, role, and optionally
    # provider, model, effort, tools (names), codemode (null: the profile's).
    new: NewSessionParams | None = None  # kind, title, role, provider, model, effort, tools, codemode
    text: str
    kind: SubmissionKind = "prompt"
    attachments: list[Attachment] = []
    # A key the client makes up for this message (a UUID): sending again with the same key after a lost
    # reply gets the same submission back, never a second one (D8).
    idempotency_key: str | None = None


class ExecutionRef(Params):
    session_id: str
    execution_id: str


class AnswerParams(Params):
    session_id: str
    execution_id: str
    text: str


class ApproveParams(Params):
    session_id: str
    execution_id: str
    decision: Literal["once", "session", "deny"]


class NavigateParams(Params):
    session_id: str
    entry_id: int | None
    summarize: bool = False
    before: bool = False
    # The workspace's files (W3): "keep" leaves them; "preview" moves nothing and says what a restore to the
    # entry's state would change; "restore" moves and restores them. Files changed by hand since the agent's
    # last capture are kept unless ``overwrite_hand_edits``.
    files: Literal["keep", "preview", "restore"] = "keep"
    overwrite_hand_edits: bool = False
    conversation: bool = True  # False, with files "restore": restore the files only; the head stays (W3)


class FilesDiffParams(Params):
    session_id: str
    entry_id: int | None = None  # the turn that made this entry; with ``since``: the range's end
    since: int | None = None  # from the state at this entry


class SettingsParams(Params):
    session_id: str
    provider: str | None = None
    model: str | None = None
    effort: str | None = None
    workspace: str | None = None  # another workspace (W1, absolute): only while the session is idle


class ExportParams(Params):
    session_id: str
    format: Literal["jsonl", "markdown"] = "jsonl"


class ForkParams(Params):
    session_id: str
    entry_id: int | None = None  # default: the head
    before: bool = False  # fork just before this user message and return its text as a draft
    title: str | None = None
    workspace_copy: Literal["worktree", "copy"] | None = None  # the fork's own copy of the workspace (W3)


class ClearParams(Params):
    session_id: str
    kind: SubmissionKind | None = None


class ItemRef(Params):
    submission_id: str
    version: int | None = None  # the version the client saw: a newer one is a conflict


class UpdateParams(ItemRef):
    text: str | None = None
    attachments: list[Attachment] | None = None  # null keeps them; a list replaces them


class ModesParams(Params):
    session_id: str
    steering: QueueMode | None = None
    follow_up: QueueMode | None = None


class WaitParams(Params):
    submission_id: str
    timeout: Annotated[float, msgspec.Meta(ge=0, le=3600)] = 600.0  # seconds, 0 to 3600 (wait longer in slices)


class GoalParams(Params):
    session_id: str
    action: GoalAction
    text: str | None = None


class ToolsParams(Params):
    session_id: str
    enabled: list[str]
    codemode: bool = False


class SubscribeParams(Params):
    session_id: str | None = None  # None: the events of every session


class UnsubscribeParams(Params):
    subscription: str


class BackupParams(Params):
    name: str | None = None  # a file name in PROFILE/backups/; default anyy-PROFILE-YYYYmmdd-HHMMSS.tar.gz


class RenderParams(Params):
    texts: list[str]
