"""Residents (SPEC K3): create, change and wake them; their heartbeats fire once, whatever restarts.

Each wake (a heartbeat, a webhook call) is a follow-up submission of the resident's Background session,
so it queues, follows the session's modes and stops as any message does; automatic compaction keeps the
session bounded. A heartbeat is claimed in the store (one row per resident and wake time, committed)
before its follow-up is queued: a Gateway killed in between loses that one wake rather than firing it
twice, and several Gateways on one store fire each wake once. Heartbeats missed while no Gateway ran
are not fired in a burst: one wake comes at start, the next an interval later.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import secrets
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import msgspec

from anyy.domain.errors import Conflict, InvalidInput
from anyy.domain.queue import NewSubmission, Submission
from anyy.domain.residents import (
    Resident,
    ResidentPatch,
    check_heartbeat,
    hash_secret,
    next_heartbeat,
    wake_text,
)
from anyy.domain.sessions import NewSession, Origin, Session
from anyy.profiles.names import NAME_RULE, is_valid_name
from anyy.runtime.workspaces import chosen_workspace
from anyy.storage.protocol import SessionStore
from commons.ids import new_id

if TYPE_CHECKING:
    from anyy.runtime.host import SessionHost

log = logging.getLogger("anyy.runtime")


class HookRefused(Exception):
    """A webhook call that records nothing: ``status`` is the HTTP status to answer."""

    def __init__(self, status: int, message: str, *, retry_after: int = 0) -> None:
        super().__init__(message)
        self.status = status
        self.retry_after = retry_after  # seconds, for a 429


# The one answer to an unknown name and to a refused caller alike: a webhook never says which names exist.
HOOK_UNAUTHORIZED = (
    "unauthorized: no resident of this name takes webhooks with these credentials (give the resident's "
    "webhook secret, Authorization: Bearer SECRET, or sign the call: docs/background.md)"
)
QUEUE_FULL_RETRY = 30  # seconds a caller refused for a full queue is told to wait


class ResidentSpec(msgspec.Struct, kw_only=True):
    name: str
    instructions: str
    heartbeat_seconds: float = 0.0
    heartbeat_note: str = ""
    webhook: bool = False


class Residents:
    def __init__(self, runtime: SessionHost) -> None:
        self.runtime = runtime
        self.deps = runtime.deps
        self._changed = asyncio.Event()
        self._loop: asyncio.Task[None] | None = None
        self._hook_locks: dict[str, asyncio.Lock] = {}  # per resident: its queue counted and added to at once

    @property
    def now(self) -> float:
        return self.deps.wall.now()

    async def start(self) -> None:
        self._loop = asyncio.create_task(self._heartbeats(), name="anyy-residents")

    async def aclose(self) -> None:
        if self._loop is not None:
            self._loop.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._loop

    # -- create, change, remove --------------------------------------------------------------------
    async def create(self, spec: ResidentSpec, session: NewSession) -> tuple[Resident, str | None]:
        """A resident and its Background session (from ``session``'s settings); the webhook secret, shown
        only now (the store keeps its hash)."""
        if not is_valid_name(spec.name):
            raise InvalidInput(f"name: {spec.name!r} is not a valid resident name: use {NAME_RULE}")
        if not spec.instructions.strip():
            raise InvalidInput("instructions: say what the resident is for (its standing instructions)")
        check_heartbeat(spec.heartbeat_seconds)
        resident_id = new_id("res")
        origin = Origin(kind="resident", name=spec.name, resident_id=resident_id)
        workspace = chosen_workspace(session.workspace, self.deps.workspaces, self.deps.workdir)  # W1
        new = msgspec.structs.replace(
            session, kind="background", title=f"resident {spec.name}", origin=origin, workspace=workspace
        )
        secret = secrets.token_urlsafe(24) if spec.webhook else None
        resident = Resident(
            id=resident_id,
            name=spec.name,
            session_id="",
            instructions=spec.instructions.strip(),
            heartbeat_seconds=spec.heartbeat_seconds,
            heartbeat_note=spec.heartbeat_note,
            webhook=spec.webhook,
            secret_hash=hash_secret(secret) if secret else "",
        )
        resident.next_wake_at = next_heartbeat(resident, self.now, self.now)

        def work(store: SessionStore) -> Resident:
            if any(r.name == spec.name for r in store.list_residents()):
                raise Conflict(f"a resident named {spec.name!r} exists: choose another name, or update it")
            made: Session = store.create_session(new)
            return store.create_resident(msgspec.structs.replace(resident, session_id=made.id))

        created = await self.deps.owner.call(work)
        self._changed.set()
        return created, secret

    async def get(self, key: str) -> Resident:
        resident: Resident = await self.deps.owner.call(lambda s: s.get_resident(key))
        return resident

    async def list(self) -> list[Resident]:
        residents: list[Resident] = await self.deps.owner.call(lambda s: s.list_residents())
        return residents

    async def update(self, key: str, patch: ResidentPatch) -> tuple[Resident, str | None]:
        """Change a resident; turning the webhook on (or asking for a new secret) returns the new secret."""
        current = await self.get(key)
        if isinstance(patch.heartbeat_seconds, float | int):
            check_heartbeat(float(patch.heartbeat_seconds))
        if isinstance(patch.instructions, str) and not patch.instructions.strip():
            raise InvalidInput("instructions: they cannot be empty")
        secret = None
        if patch.webhook is True and not current.webhook:
            secret = secrets.token_urlsafe(24)
            patch.secret_hash = hash_secret(secret)
        updated = await self._patch(current.id, patch)
        return await self._reschedule(updated), secret

    async def new_secret(self, key: str) -> tuple[Resident, str]:
        current = await self.get(key)
        secret = secrets.token_urlsafe(24)
        updated = await self._patch(current.id, ResidentPatch(webhook=True, secret_hash=hash_secret(secret)))
        return updated, secret

    async def pause(self, key: str, paused: bool) -> Resident:
        current = await self.get(key)
        return await self._reschedule(await self._patch(current.id, ResidentPatch(paused=paused)))

    async def delete(self, key: str) -> Resident:
        current = await self.get(key)
        await self.deps.owner.call(lambda s: s.delete_resident(current.id))
        self._changed.set()
        return current

    async def _patch(self, resident_id: str, patch: ResidentPatch) -> Resident:
        updated: Resident = await self.deps.owner.call(lambda s: s.update_resident(resident_id, patch))
        return updated

    async def _reschedule(self, resident: Resident) -> Resident:
        """The next heartbeat from now, after a change of interval or a pause/resume."""
        now = self.now
        due = next_heartbeat(resident, now, now)
        if due != resident.next_wake_at:
            resident = await self._patch(resident.id, ResidentPatch(next_wake_at=due))
        self._changed.set()
        return resident

    # -- wakes -------------------------------------------------------------------------------------
    async def hook(
        self, name: str, body: bytes, authentic: Callable[[Resident], bool], *, max_queued: int = 0
    ) -> Submission:
        """A webhook call: its body becomes a follow-up once ``authentic`` accepts the caller (else nothing
        is recorded). An unknown name and a refused caller get the same 401, so names cannot be probed. With
        ``max_queued``, a resident whose session already has that many items waiting refuses more (429):
        what was accepted stays queued."""
        try:
            resident: Resident | None = await self.get(name)
        except Exception:
            resident = None
        if resident is None or not resident.webhook or not authentic(resident):
            raise HookRefused(401, HOOK_UNAUTHORIZED)
        if resident.paused:
            raise HookRefused(409, f"resident {name!r} is paused: `anyy resident resume {name}` first")
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError:
            raise HookRefused(400, "the body must be UTF-8 text (JSON or plain text)") from None
        session_id = resident.session_id
        async with self._hook_locks.setdefault(resident.id, asyncio.Lock()):
            if max_queued:
                waiting = len(await self.deps.owner.call(lambda s: s.list_submissions(session_id)))
                if waiting >= max_queued:
                    raise HookRefused(
                        429,
                        f"resident {name!r} has {waiting} wakes waiting already (at most {max_queued}): "
                        "try again later",
                        retry_after=QUEUE_FULL_RETRY,
                    )
            return await self._wake(resident, "webhook", text)

    async def _wake(self, resident: Resident, trigger: str, body: str) -> Submission:
        submission = await self.runtime.submit(
            resident.session_id, NewSubmission(kind="follow_up", text=wake_text(resident, trigger, body))
        )
        await self._patch(resident.id, ResidentPatch(last_wake_at=self.now, last_trigger=trigger))
        return submission

    async def _heartbeats(self) -> None:
        while True:
            self._changed.clear()
            try:
                due_at = await self._fire_due()
            except Exception:
                log.exception("resident heartbeats failed; trying again on the next change")
                due_at = None
            await self._wait(due_at)

    async def _fire_due(self) -> float | None:
        """Fire every heartbeat due now (each claimed first); the time of the next one, if any."""
        now = self.now
        earliest: float | None = None
        for resident in await self.list():
            due = resident.next_wake_at
            if due is None or resident.paused or resident.heartbeat_seconds <= 0:
                continue
            if due <= now:
                claimed = not await self._heartbeat_waiting(resident) and await self.deps.owner.call(
                    functools.partial(_claim, resident_id=resident.id, wake_at=due)
                )
                if claimed:
                    await self._wake(resident, "heartbeat", resident.heartbeat_note)
                due = next_heartbeat(resident, due, now)
                await self._patch(resident.id, ResidentPatch(next_wake_at=due))
            if due is not None and (earliest is None or due < earliest):
                earliest = due
        return earliest

    async def _heartbeat_waiting(self, resident: Resident) -> bool:
        """Whether the last heartbeat still waits in the session's queue (a busy or stopped session):
        heartbeats do not pile up behind it."""
        pending = await self.deps.owner.call(lambda s: s.list_submissions(resident.session_id))
        return any(sub.text.startswith("[heartbeat]") for sub in pending)

    async def _wait(self, due_at: float | None) -> None:
        """Until the next heartbeat is due, or something changed."""
        changed = asyncio.ensure_future(self._changed.wait())
        waits: set[asyncio.Future[Any]] = {changed}
        if due_at is not None and due_at <= self.now:
            changed.cancel()
            return
        if due_at is not None:
            waits.add(asyncio.ensure_future(self.deps.wall.sleep(max(0.0, due_at - self.now))))
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for wait in waits:
                wait.cancel()


def _claim(store: SessionStore, *, resident_id: str, wake_at: float) -> bool:
    return store.claim_wake(resident_id, wake_at)
