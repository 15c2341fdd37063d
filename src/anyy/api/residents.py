"""Residents on the wire (K3): what ``resident.*`` methods take and return."""

from __future__ import annotations

from typing import Annotated

import msgspec

from anyy.api.params import Params

Seconds = Annotated[float, msgspec.Meta(ge=0)]


class Resident(msgspec.Struct, kw_only=True):
    """A resident: its Background session, standing instructions and triggers, with its last and next
    wake (wall-clock seconds). ``webhook_path`` is where its webhook is called (``POST``, with its secret
    as ``Authorization: Bearer SECRET``); the secret itself is shown only when made."""

    id: str
    name: str
    session_id: str
    instructions: str
    heartbeat_seconds: float
    heartbeat_note: str
    webhook: bool
    webhook_path: str | None
    paused: bool
    last_wake_at: float | None
    last_trigger: str
    next_wake_at: float | None
    created_at: float
    updated_at: float


class ResidentCreated(msgspec.Struct, kw_only=True):
    resident: Resident
    secret: str | None  # the webhook's secret, shown this once (None without a webhook, or unchanged)


class ResidentCreateParams(Params):
    name: str
    instructions: str
    heartbeat_seconds: Seconds = 0.0  # 0: no heartbeat; else at least 60
    heartbeat_note: str = ""
    webhook: bool = False
    role: str = "default"
    # Its session's workspace (W1): absolute, on the Gateway's host; None: the profile's [workspaces] default,
    # else the Gateway's working directory. Changed later with session.settings on its session.
    workspace: str | None = None


class ResidentRef(Params):
    name: str  # its name or id


class ResidentUpdateParams(Params):
    name: str  # its name or id
    instructions: str | None = None
    heartbeat_seconds: Seconds | None = None
    heartbeat_note: str | None = None
    webhook: bool | None = None
    new_secret: bool = False  # replace the webhook's secret (the old one stops working)
