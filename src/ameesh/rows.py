"""The registry's rows, typed: what the runner and the commands work on (never a plain dict).

Each class lists its table's columns in order; :func:`as_dict` gives the JSON the ``--json`` commands print.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Agent:
    name: str
    harness: str
    role: str
    workdir: str
    git_common_dir: str | None
    git_branch: str | None
    session_policy: str | None  # execution settings: None follows the canon's default
    model: str | None
    effort: str | None
    tier: str | None
    session_id: str | None
    session_lot: str | None
    rotation_state: str | None  # due | summarised | written | closed (see ameesh.runner)
    rotation_reason: str | None
    pending_summary: str | None  # what the next session opens on (a resume summary or a brief)
    created_at: float
    uid: str | None = None  # who owns AMEESH_HOME/agents/NAME (a name can be reused, a uid never)
    failures: int = 0  # consecutive failed attempts (backoff, circuit)
    retry_at: float | None = None  # no attempt before this time (backoff)
    circuit_open: int = 0  # 1: attempts stopped after too many failures in a row
    pending_kind: str | None = None  # summary | brief
    rewind_to: str | None = None  # the next turn resumes the session at this point (a failed summary dropped)
    turn_key: str | None = None  # the hash of the key of the turn playing now (H16: ameesh done / review)

    def setting(self, key: str) -> str | None:
        value: str | None = getattr(self, key)
        return value


@dataclass(frozen=True, slots=True)
class Message:
    num: int
    agent: str
    lot: str | None
    text: str
    state: str  # waiting | done | failed
    attempts: int  # failed attempts
    created_at: float
    tried: int = 0  # turns started (a runner may have died during one: its prompt may be in the session)


@dataclass(frozen=True, slots=True)
class Session:
    num: int
    agent: str
    session_id: str
    lot: str | None
    opened_at: float
    closed_at: float | None
    close_reason: str | None
    turns: int
    last_context_tokens: int | None
    summary: str | None
    model: str | None = None  # the model (anyy: the profile) the session was opened with


@dataclass(frozen=True, slots=True)
class Turn:
    num: int
    agent: str
    session_id: str | None
    lot: str | None
    kind: str  # turn | summary
    prompt: str
    result: str | None
    usage: str | None  # JSON
    context_tokens: int | None
    duration: float
    outcome: str  # ok | failed | timeout
    error: str | None
    at: float


@dataclass(frozen=True, slots=True)
class Alert:
    num: int
    agent: str
    kind: str
    session_id: str | None
    message: str
    at: float
    cleared_at: float | None
    cleared_reason: str | None = None  # resolved (its cause is gone) | acknowledged


@dataclass(frozen=True, slots=True)
class ThreadItem:
    num: int
    agent: str
    kind: str
    session_id: str | None
    lot: str | None
    text: str
    at: float


@dataclass(frozen=True, slots=True)
class Lot:
    name: str
    owner: str  # the build agent the lot's checks and reviews come back to
    state: str  # working | checking | in review | ready | merged | stopped (see ameesh.review)
    rounds: int  # the check-and-review rounds started (one per ameesh done)
    repository: str | None
    worktree: str  # where the lot is played and its checks run
    base: str | None  # the branch it is merged into
    updated_at: float


@dataclass(frozen=True, slots=True)
class LotReview:
    num: int
    lot: str
    reviewer: str
    round: int
    verdict: str  # approve | changes
    findings: str | None
    at: float


def as_dict(row: Any) -> dict[str, Any]:
    return dataclasses.asdict(row)
