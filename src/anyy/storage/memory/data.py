"""What the in-memory store holds: plain records, kept apart from the store so several stores (a reopen)
can share them, and encodable as a whole (a snapshot)."""

from __future__ import annotations

import copy
from typing import Any, TypeVar

import msgspec

from anyy.domain.channels import Inbound, Pairing, PendingCode, Reply
from anyy.domain.delegation import DelegatedTask
from anyy.domain.entries import Entry
from anyy.domain.file_captures import FileCapture
from anyy.domain.queue import Execution, Submission
from anyy.domain.residents import Resident
from anyy.domain.schedule_records import Schedule
from anyy.domain.sessions import Session

T = TypeVar("T")


class SessionRecord(msgspec.Struct, kw_only=True):
    num: int
    session: Session  # its ``head`` kept current
    active: bool = True
    fork_point: int | None = None  # the entry it was forked at: its history stays reachable
    last_seq: int = 0
    own: list[int] = []  # ids of the entries it appended, in order


class EntryRecord(msgspec.Struct, kw_only=True):
    entry: Entry
    raw_data: str | None  # the payload as encoded (tool payloads travel so in the model context)
    refs: list[str] = []  # objects it references: its body, its attachments


class SubmissionRecord(msgspec.Struct, kw_only=True):
    num: int
    submission: Submission
    key: str | None = None  # the sender's idempotency key (D8)


class ObjectRecord(msgspec.Struct, kw_only=True):
    data: bytes
    media_type: str
    created_at: float


class ToolRunRecord(msgspec.Struct, kw_only=True):
    name: str
    arguments: str
    pid: int | None = None
    started: int | None = None
    output: str = ""
    done: bool = False
    parent: str = ""  # a Codemode script's inner call: the run_script call's id


class RunRecord(msgspec.Struct, kw_only=True):
    schedule_id: str
    scheduled_for: float
    claimed_at: float
    session_id: str | None
    submission_id: str | None
    error: str | None


class MemoryData(msgspec.Struct, kw_only=True):
    sessions: dict[str, SessionRecord] = {}
    nums: dict[int, str] = {}  # session number → id
    entries: dict[int, EntryRecord] = {}
    submissions: dict[str, SubmissionRecord] = {}
    executions: dict[str, Execution] = {}
    objects: dict[str, ObjectRecord] = {}
    delegated: dict[str, DelegatedTask] = {}  # child session id → its task (K2)
    residents: dict[str, Resident] = {}  # by id (K3)
    wakes: list[tuple[str, float]] = []  # claimed heartbeats: (resident id, wake time)
    stream_texts: dict[str, list[tuple[str, str, str, str]]] = {}  # execution id → (kind, provider, model, text)
    tool_runs: dict[str, dict[str, ToolRunRecord]] = {}  # execution id → call id → its record, in call order
    next_session: int = 1
    next_submission: int = 1
    deleted: list[int] = []  # numbers of deleted sessions whose entries upkeep has not reclaimed yet
    last_sweep: float = float("-inf")
    schedules: dict[str, Schedule] = {}
    schedule_runs: list[RunRecord] = []  # in claim order
    file_captures: list[FileCapture] = []  # in the order written (W2)
    channel_senders: list[Pairing] = []  # L2, in pairing order
    channel_codes: list[PendingCode] = []
    channel_positions: dict[str, str] = {}
    channel_inbox: dict[str, Inbound] = {}  # "channel key" → the message handled (L3)
    channel_answered: list[str] = []  # "channel key" of inbound messages answered
    channel_outbox: dict[str, Reply] = {}  # "channel key" → the reply, in the order recorded
    model_calls: list[tuple[Any, ...]] = []  # priced calls (Y1), rows as the SQL stores' model_calls
    budgets: dict[str, int] = {}  # limits the user set per scope, nano-dollars (Y2)
    budget_spend: dict[tuple[str, str], int] = {}  # running totals by (scope, period), nano-dollars (Y2)
    budget_holds: dict[tuple[str, str], tuple[int, float]] = {}  # (hold, scope) -> (amount, when): calls in flight


def copied(value: T) -> T:
    """A copy for a caller: what the store keeps never changes behind its back (nor the other way)."""
    return copy.deepcopy(value)
