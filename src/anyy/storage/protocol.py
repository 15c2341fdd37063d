"""The one storage interface. Every backend passes the same conformance suite (tests/conformance).

A store is used from one thread (the thread that owns it); callers on an event loop go through
:class:`anyy.storage.owner.StoreOwner`. Every method is one unit of work: it commits before it returns,
so whatever it acknowledged survives a killed process.

Everything above storage (the runtime, the Gateway, the CLI, backups) is typed against
:class:`SessionStore` only: a backend's other methods are its own business. Only the composition root
that opens a profile's store names a backend (``anyy.profiles.store.open_store``). Read-side views built
from several calls (an export's order, a whole tree, the waiting question) live once, over this
protocol, in ``anyy.storage.reads``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol, TypeVar

import msgspec

from anyy.domain.budgets import BudgetScope, Exhausted
from anyy.domain.channels import Inbound, Pairing, PendingCode, Reply
from anyy.domain.context import ModelContext
from anyy.domain.delegation import DelegatedTask, TaskUpdate
from anyy.domain.entries import Entry, NewEntry
from anyy.domain.file_captures import FileCapture, NewFileCapture
from anyy.domain.pricing import CostLine
from anyy.domain.queue import Execution, ExecutionState, NewSubmission, Submission, SubmissionKind
from anyy.domain.residents import Resident, ResidentPatch
from anyy.domain.schedule_records import NewSchedule, RunClaim, Schedule, ScheduleRun
from anyy.domain.search import SearchHit
from anyy.domain.sessions import UNSET, NewSession, Page, Session, SessionKind, SessionPatch, Unset
from anyy.domain.tree import TreeView
from anyy.storage.checks import Finding
from anyy.storage.ownership import (
    Claim,
    ControlKind,
    GatewayInfo,
    Heartbeat,
    Hint,
    HintKind,
    Listening,
    ToolProcess,
)


class ObjectRef(msgspec.Struct, kw_only=True):
    hash: str
    size: int
    media_type: str


class Maintenance(msgspec.Struct, kw_only=True):
    """What one :meth:`SessionStore.maintain` step did, and whether work is left."""

    indexed: int
    collected: int
    more: bool


class StoreSnapshot(msgspec.Struct, kw_only=True):
    """What :meth:`SessionStore.snapshot` wrote, and what the copy holds."""

    files: list[str]  # names of the files written, relative to the snapshot's folder
    sessions: int  # live sessions
    entries: int  # every entry kept (a deleted session's entries a fork still reaches included)
    submissions: int
    objects: list[str]  # hashes of the objects the copy references (their files are copied by the caller)


T = TypeVar("T")


class SessionStore(Protocol):
    # -- sessions --------------------------------------------------------------------------------
    def create_session(self, new: NewSession) -> Session: ...
    def get_session(self, session_id: str) -> Session: ...
    def list_sessions(
        self, *, kind: SessionKind | None = None, limit: int = 50, cursor: str | None = None
    ) -> Page[Session]: ...
    def update_session(self, session_id: str, patch: SessionPatch) -> Session: ...
    def set_head(self, session_id: str, entry_id: int | None) -> Session:
        """Move the head (durably) to an entry of the session's tree; ``None``: before the first entry."""
        ...

    def fork_session(self, session_id: str, at: int | None = None, *, title: str | None = None) -> Session:
        """A new session whose head is ``at`` (default: the head). O(1): nothing is copied."""
        ...

    def delete_session(self, session_id: str) -> None:
        """Remove a session; entries another session still reaches stay. Conflict if work is unfinished.

        Returns at once; the space is reclaimed by :meth:`maintain`."""
        ...

    # -- entries ---------------------------------------------------------------------------------
    def append_entries(
        self, session_id: str, entries: Sequence[NewEntry], *, expected_head: int | Unset | None = UNSET
    ) -> list[Entry]:
        """Append children of the head in one transaction and move the head to the last one.

        With ``expected_head`` (``None``: an empty path), a head that moved meanwhile is a conflict."""
        ...

    def get_entry(self, session_id: str, entry_id: int) -> Entry: ...
    def path(self, session_id: str, *, to: int | None = None) -> list[Entry]:
        """Entries from the root to ``to`` (default: the head)."""
        ...

    def history(self, session_id: str, *, limit: int = 50, cursor: str | None = None) -> Page[Entry]:
        """The current path, newest first, by pages."""
        ...

    def tree(self, session_id: str) -> TreeView: ...
    def context(self, session_id: str) -> ModelContext: ...
    def search(
        self,
        query: str,
        *,
        kind: SessionKind | None = None,
        session_id: str | None = None,
        limit: int = 20,
    ) -> list[SearchHit]: ...

    # -- file captures (W2) ----------------------------------------------------------------------
    def add_file_capture(self, new: NewFileCapture) -> FileCapture:
        """Join a capture (already written to the capture store) to an entry."""
        ...

    def list_file_captures(
        self, *, entry_ids: Sequence[int] | None = None, execution_id: str | None = None
    ) -> list[FileCapture]:
        """The captures joined to ``entry_ids`` or taken by ``execution_id``, oldest first; only those of
        entries the store still keeps."""
        ...

    def file_capture_commits(self) -> set[str]:
        """The commits of every capture an entry the store keeps still holds (what a prune keeps)."""
        ...

    # -- objects ---------------------------------------------------------------------------------
    # Money (Y1): totals of the priced model calls, grouped by day, session, tree, model, schedule, resident,
    # role or channel, from ``since`` (seconds since the epoch) on; ``session_id``: that session's tree only.
    def usage_report(self, by: str, *, since: float = 0.0, session_id: str | None = None) -> list[CostLine]: ...

    # Budgets (Y2): limits set per scope ("session:ID", "schedule:ID", "resident:ID"; None removes one), what a
    # scope spent, and the atomic check before a model call: with every scope within its limit counting
    # what calls in flight hold plus ``amount``, hold ``amount`` on each (one transaction; across Gateways);
    # else the scope that would pass, and nothing held. ``release_budget`` once the call's cost is recorded.
    def set_budget(self, scope: str, limit_nano: int | None) -> None: ...
    def list_budgets(self) -> dict[str, int]: ...
    def budget_spent(self, scope: BudgetScope) -> int: ...
    def hold_budget(self, hold_id: str, scopes: Sequence[BudgetScope], amount: int) -> Exhausted | None: ...
    def release_budget(self, hold_id: str) -> None: ...

    def put_object(self, data: bytes, *, media_type: str = "application/octet-stream") -> ObjectRef: ...
    def read_object(self, object_hash: str) -> bytes: ...
    def object_bytes(self) -> int:
        """The bytes of every object the profile stores (the upload quota counts them)."""
        ...

    # -- submissions (the two queues) ------------------------------------------------------------
    def add_submission(self, session_id: str, new: NewSubmission) -> Submission: ...
    def start_session(self, new: NewSession, first: NewSubmission) -> tuple[Session, Submission]:
        """A new session and its first submission in one transaction: both or neither (U1). With a key
        (D8) already used by an active session's submission, that session and submission, nothing added
        (a different message under that key is a conflict)."""
        ...

    def get_submission(self, submission_id: str) -> Submission: ...
    def list_submissions(self, session_id: str, *, states: Sequence[str] = ("pending",)) -> list[Submission]:
        """Steering first, then follow-ups and prompts, each in queue order."""
        ...

    def update_submission(
        self,
        submission_id: str,
        *,
        version: int | None = None,
        text: str | None = None,
        attachments: Sequence[object] | None = None,
        kind: SubmissionKind | None = None,
    ) -> Submission:
        """Edit a pending item; a taken item or a stale version is a conflict (Q3)."""
        ...

    def cancel_submission(self, submission_id: str, *, version: int | None = None) -> Submission: ...
    def clear_queue(self, session_id: str, *, kind: SubmissionKind | None = None) -> list[Submission]: ...

    # -- executions ------------------------------------------------------------------------------
    def start_execution(
        self, session_id: str, submission_ids: Sequence[str], *, record_inputs: bool = False
    ) -> Execution:
        """Take the pending submissions and open an execution answering them (one transaction).

        With ``record_inputs``, each submission also becomes a user entry at the head (linked to it)."""
        ...

    def take_submissions(
        self, execution_id: str, submission_ids: Sequence[str], *, record_inputs: bool = False
    ) -> list[Submission]:
        """At a checkpoint: move pending items into the running execution (conflict if not pending),
        recording them as user entries with ``record_inputs``."""
        ...

    def record_pass(
        self, execution_id: str, entries: Sequence[NewEntry], *, link_submissions: Sequence[str] = ()
    ) -> list[Entry]:
        """Append one pass's entries and count the pass, in one transaction."""
        ...

    def save_stream_text(
        self, execution_id: str, text: str, *, provider: str, model: str, first: bool = False, thinking: str = ""
    ) -> None:
        """Keep more of what the running pass is streaming: ``text`` of its answer and ``thinking`` (either
        may be empty; both are kept in one write), appended to what was kept (``first`` starts afresh, as a
        retried model call does), so that a crash keeps the answer so far (D4). What was kept is dropped
        when the pass is recorded or the execution ends, and turned into an interrupted answer, its
        thinking as thinking, by :meth:`recover_interrupted`."""
        ...

    def record_tool_call(
        self,
        execution_id: str,
        call_id: str,
        *,
        name: str,
        arguments: dict[str, Any],
        pid: int | None = None,
        started: int | None = None,
        parent: str = "",
    ) -> None:
        """A tool call of the running pass, recorded before it starts (D3); again with ``pid`` (its process
        group) and ``started`` (its start time) once its program runs; ``parent``: the call is a Codemode
        script's, made from that ``run_script`` call. Dropped when the pass is recorded;
        :meth:`recover_interrupted` records it as a call with an interrupted result (an inner call as one of
        its script's ``inner_calls``)."""
        ...

    def save_tool_output(self, execution_id: str, call_id: str, text: str, *, result: bool = False) -> None:
        """Append what a recorded tool call printed; ``result``: the call ended and ``text`` is its whole
        result (it replaces the output kept so far)."""
        ...

    def leftover_tools(self) -> list[ToolProcess]:
        """After a crash, before :meth:`recover_interrupted`: the processes tool calls of running
        executions started and that had not ended, for the caller to end."""
        ...

    def set_execution_state(
        self, execution_id: str, state: ExecutionState, *, error: str | None = None, note: str | None = None
    ) -> Execution:
        """Move an execution on; a final state gives each of its submissions that outcome (C5)."""
        ...

    def get_execution(self, execution_id: str) -> Execution: ...
    def list_executions(self, session_id: str, *, active_only: bool = False) -> list[Execution]: ...
    def last_execution(self, session_id: str) -> Execution | None:
        """The session's newest execution (whatever its state), or None: what a list shows as its state
        and last outcome (K4), in one indexed read however many executions the session had."""
        ...

    def execution_begun(self, execution_id: str) -> bool:
        """Whether anything of the execution is recorded beyond the inputs it took: a pass, streamed text
        or a tool call. One that is running with nothing recorded had not reached its first model or tool
        call, or was cut off in it before anything of it was kept (P7): it may be run again from its start."""
        ...

    def recover_interrupted(self, note: str) -> list[Execution]:
        """After a crash: mark every execution that was running (or waiting to retry) as interrupted, with
        a visible notice entry (``note``, then what was kept). The text saved with
        :meth:`save_stream_text` is appended first, as an interrupted answer, then the tool calls recorded
        with :meth:`record_tool_call`, each with its result (or what it printed, as interrupted). One
        suspended on a question stays suspended: an answer still resumes it. Unattended work (a Background
        session's: a schedule's run, a resident's wake, a delegated task) whose execution had not begun
        (:meth:`execution_begun`) is left running and returned as it is, for the runtime to run it from its
        start (P7): nobody would continue it by hand."""
        ...

    # -- delegated tasks (K2) ---------------------------------------------------------------------
    def add_delegated_tasks(self, tasks: Sequence[DelegatedTask]) -> list[DelegatedTask]:
        """Record a ``delegate`` call's tasks (their child sessions exist), all in one transaction."""
        ...

    def list_delegated_tasks(
        self, *, parent_session_id: str | None = None, parent_call_id: str | None = None, open_only: bool = False
    ) -> list[DelegatedTask]:
        """Tasks by parent (and call), oldest first, in their order; ``open_only``: not delivered yet."""
        ...

    def get_delegated_task(self, child_session_id: str) -> DelegatedTask: ...
    def update_delegated_task(self, child_session_id: str, update: TaskUpdate) -> DelegatedTask: ...

    # -- residents (K3) ---------------------------------------------------------------------------
    def create_resident(self, resident: Resident) -> Resident:
        """Record a resident (its session exists); :class:`Conflict` when the name is taken."""
        ...

    def get_resident(self, key: str) -> Resident:
        """A resident by id or by name."""
        ...

    def list_residents(self) -> list[Resident]: ...
    def update_resident(self, resident_id: str, patch: ResidentPatch) -> Resident: ...
    def delete_resident(self, resident_id: str) -> None:
        """Forget the resident and its claimed wakes; its session stays."""
        ...

    def claim_wake(self, resident_id: str, wake_at: float) -> bool:
        """Claim the heartbeat due at ``wake_at``, committed before it fires: True once, False for every
        later claim of the same wake (after a restart, or by another Gateway on the same store)."""
        ...

    # -- channels (L1-L3) --------------------------------------------------------------------------
    def channel_code(self, channel: str, sender: str, conversation: str, label: str, ttl: float) -> str | None:
        """The sender's pairing code, made now (valid ``ttl`` seconds) unless one waits already; None when
        the channel has the most codes waiting already (the sender is refused without one)."""
        ...

    def list_channel_codes(self) -> list[PendingCode]: ...
    def pair_with_code(self, code: str, session_id: str, rights: list[str]) -> Pairing:
        """Approve the sender a waiting code names, with ``rights`` on ``session_id``; the code is used up.
        The first sender of a channel is its owner. :class:`NotFound` for an unknown or expired code."""
        ...

    def get_pairing(self, channel: str, sender: str, session_id: str) -> Pairing | None: ...
    def list_pairings(self, channel: str | None = None) -> list[Pairing]: ...
    def unpair_sender(self, channel: str, sender: str) -> int: ...
    def channel_position(self, channel: str) -> str:
        """The platform's read position last committed ("" before any)."""
        ...

    def get_inbound(self, channel: str, key: str) -> Inbound | None: ...
    def record_inbound(self, inbound: Inbound, position: str, replies: list[Reply]) -> bool:
        """Record a handled inbound message, the read position it moves to, and any immediate replies, in
        one transaction; False (and only the position moves) when that message was recorded already."""
        ...

    def unanswered_inbound(self, channel: str) -> list[Inbound]: ...
    def queue_replies(self, replies: list[Reply], *, answers: str | None = None) -> None:
        """Record replies to send (a key already recorded is left as it is), marking the inbound message
        ``answers`` answered in the same transaction."""
        ...

    def pending_replies(self, channel: str) -> list[Reply]:
        """Replies not delivered yet, oldest first."""
        ...

    def list_replies(self, channel: str, limit: int = 50) -> list[Reply]: ...
    def reply_sent(self, channel: str, key: str, platform_id: str) -> None: ...
    def reply_failed(self, channel: str, key: str, error: str, next_at: float) -> None: ...
    def forget_channel(self, channel: str) -> None:
        """Remove everything recorded for a channel (it was removed from the profile)."""
        ...

    def claim_channel(self, channel: str) -> bool:
        """Take or keep the right to poll the channel (L4); False while another live Gateway of the service
        holds it. A store one Gateway uses alone: always True."""
        ...

    # -- ownership: several Gateways on one store (see anyy.storage.ownership) ---------------------
    def join_service(self, gateway_id: str, *, lease: float, address: str, recovery_note: str) -> bool:
        """Register this Gateway; True when the store is shared (leases apply from now on). From then,
        every write of a session's work is fenced on this Gateway's lease (zero rows: LeaseLost)."""
        ...

    def leave_service(self) -> None:
        """Release every lease and unregister (a clean shutdown)."""
        ...

    def set_gateway_address(self, address: str) -> None: ...
    def claim_session(self, session_id: str) -> Claim:
        """Take the session's lease (epoch + 1) unless a live Gateway holds it; a dead owner's running
        work is marked interrupted in the same transaction (G3, per session)."""
        ...

    def release_session(self, session_id: str) -> None:
        """Give the lease back once the session is idle (another Gateway may then claim it)."""
        ...

    def request_stop(self, gateway_ids: list[str] | None = None) -> list[str]:
        """Ask Gateways of the service (all with None) to stop cleanly at their next heartbeat, wherever they
        run; the ids asked. A store one Gateway uses alone: Conflict (stop that one with its pid)."""
        ...

    def took_work(self, session_id: str) -> None:
        """The owner got the hint of an item queued through another Gateway: its wake-up is cleared (were
        the owner to die before, a survivor would claim the session and run the item once the lease ran
        out)."""
        ...

    def run_unit(self, fn: Callable[[Any], T]) -> T:
        """``fn(self)``: one unit of work, as the store's thread runs it. A store whose connection can break
        (P7) runs again a unit its loss cut short before anything of it was committed, and turns any other
        loss into ``StoreUnavailable``; a store that has no connection just runs it."""
        ...

    def heartbeat(self) -> Heartbeat:
        """Renew this Gateway's leases; report those lost, recover dead Gateways' sessions, hand over the
        stops and answers other Gateways left for this one."""
        ...

    def add_control(self, session_id: str, kind: ControlKind, execution_id: str, text: str = "") -> None:
        """A stop or an answer for the session's owner, durable, with a wake-up hint."""
        ...

    def hint(self, session_id: str, kind: HintKind) -> None: ...
    def listen(self, callback: Callable[[Hint], None]) -> Listening | None:
        """Deliver other Gateways' hints to ``callback`` (on another thread); None: nobody sends any."""
        ...

    def list_gateways(self) -> list[GatewayInfo]: ...
    # -- schedules (K1) --------------------------------------------------------------------------
    def create_schedule(self, new: NewSchedule) -> Schedule:
        """A new schedule; a name the profile uses already is a conflict."""
        ...

    def get_schedule(self, ref: str) -> Schedule:
        """A schedule by id or by name."""
        ...

    def list_schedules(self) -> list[Schedule]:
        """Every schedule, by name."""
        ...

    def due_schedules(self, now: float) -> list[Schedule]:
        """Schedules not paused whose next fire time is at or before ``now``, earliest first."""
        ...

    def next_fire_time(self) -> float | None:
        """The earliest next fire time of the schedules not paused (None: nothing to wait for)."""
        ...

    def update_schedule(self, schedule: Schedule) -> Schedule:
        """Store every field of ``schedule`` but its id and creation time."""
        ...

    def delete_schedule(self, ref: str) -> None:
        """Remove a schedule and its runs' records (the sessions its runs made stay)."""
        ...

    def claim_run(self, claim: RunClaim) -> ScheduleRun | None:
        """Claim one run, in one transaction: the run's row (unique per schedule and scheduled time), its
        session (a new one, or the fixed one), its prompt queued there, the schedule's progress. None when
        that run was claimed before (by this Gateway before a restart, or another sharing the database):
        then nothing was written. NotFound (nothing written) when the fixed session is gone."""
        ...

    def list_runs(self, ref: str, *, limit: int = 50) -> list[ScheduleRun]:
        """A schedule's runs, newest scheduled time first, each with its prompt's state as outcome."""
        ...

    def pending_runs(self) -> list[ScheduleRun]:
        """Runs claimed whose prompt has not started yet (after a restart: to start them)."""
        ...

    # -- upkeep ----------------------------------------------------------------------------------
    def maintain(self, budget: int = 2000) -> Maintenance:
        """Index new messages for search and reclaim deleted sessions, a bounded step at a time."""
        ...

    def snapshot(self, directory: Path) -> StoreSnapshot:
        """Write a consistent copy of the store (one read: writers may go on meanwhile) into ``directory``
        (existing, empty), in the backend's own format, which the same backend opens on that folder.
        Object bodies are not copied: they are immutable, and on disk before anything references them,
        so the caller copies them afterwards (see ``anyy.profiles.backup``)."""
        ...

    def check(self, *, repair: bool = False, skip: Sequence[str] = ()) -> list[Finding]:
        """Check the store's invariants (``anyy.storage.checks.CHECKS``, in that order, but those in
        ``skip``) and, with ``repair``, fix what can be fixed without guessing at lost data (D11).

        Repair only while nothing else writes (no Gateway on the profile): it marks running executions
        interrupted. One finding per check, in order; a skipped check says so."""
        ...

    def close(self) -> None:
        """Release the store; it is not used afterwards. What it acknowledged stays."""
        ...
