"""This Gateway as one of several on a shared store (SPEC P3-P6): its id, the heartbeat that renews its
leases, the hints other Gateways send, and the events of sessions another Gateway runs.

With a store one Gateway uses alone, :meth:`Membership.join` finds nothing to join and nothing here runs:
every claim is this Gateway's and the runtime goes on as before. With a shared store:

- every ``lease / 3`` seconds a heartbeat renews this Gateway's leases, learns which it lost (their work
  stops here, writing nothing), recovers what dead Gateways left (G3, per session) and picks up the stops
  and answers other Gateways relayed;
- a ``work`` hint (an item queued through another Gateway) pokes the session here: whoever holds or takes
  the lease runs it; a ``control`` hint fetches relayed stops and answers at once;
- a ``change`` hint of a session someone here listens to re-reads what is durable (new entries, execution
  states, the queue) and announces it, as if it had happened here. Re-reads are coalesced: one runs at a
  time per session, and hints arriving meanwhile make one more. Text deltas are not relayed: they exist
  only on the owner (docs/scaling.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from anyy.domain.entries import Entry
from anyy.domain.queue import Execution, Submission
from anyy.runtime.announce import Announcer
from anyy.runtime.deps import Deps
from anyy.storage.ownership import Control, Heartbeat, Hint, Listening, ToolProcess
from anyy.storage.protocol import SessionStore
from anyy.tools.process import end_leftover

log = logging.getLogger("anyy.runtime.cluster")
HISTORY_WINDOW = 200  # entries re-read per change hint (a pass appends far fewer)


def end_leftovers(leftovers: list[ToolProcess]) -> None:
    """The processes a dead owner's tool calls left on this host (the store lists no other host's): ended,
    each only if its pid still names the process that was recorded (D3)."""
    for left in leftovers:
        if end_leftover(left.pid, left.started):
            log.warning("ended the processes of tool call %s, left by the session's previous owner", left.call_id)


@dataclass
class _Seen:
    """What this Gateway already announced of a session another Gateway runs."""

    last_entry: int = 0
    states: dict[str, str] = field(default_factory=dict)
    queue: tuple[tuple[str, int], ...] = ()
    busy: bool = False
    again: bool = False


@dataclass
class Hooks:
    """What the runtime does when the service asks: run a session's queue, stop its work, apply a relay."""

    poke: Callable[[str], bool]  # True: the session's work is this Gateway's, and it will read the queue
    woken: Callable[[str], None]  # claimed here by the heartbeat: run the session's queue
    lost: Callable[[str], None]
    control: Callable[[Control], Awaitable[None]]
    recovered: Callable[[Execution], None]


class Membership:
    def __init__(self, deps: Deps, hooks: Hooks, recovery_note: str) -> None:
        self.deps = deps
        self.hooks = hooks
        self.recovery_note = recovery_note
        self.gateway_id = f"gw-{uuid.uuid4().hex[:12]}"
        self.joined = False
        self._listening: Listening | None = None
        self._beat: asyncio.Task[None] | None = None
        self._seen: dict[str, _Seen] = {}
        self._announce = Announcer(deps)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._stopping = False
        self._all_since: float | None = None  # when a subscription to every session was last made

    async def join(self) -> bool:
        owner = self.deps.owner
        lease = self.deps.settings.lease
        self.joined = await owner.call(
            lambda s: s.join_service(self.gateway_id, lease=lease, address="", recovery_note=self.recovery_note)
        )
        if not self.joined:
            return False
        self._loop = asyncio.get_running_loop()
        self._listening = await owner.call(lambda s: s.listen(self._from_thread))
        self._beat = asyncio.create_task(self._heartbeats(), name="anyy-heartbeat")
        return True

    async def set_address(self, address: str) -> None:
        if self.joined:
            await self.deps.owner.call(lambda s: s.set_gateway_address(address))

    async def leave(self) -> None:
        if not self.joined:
            return
        self.joined = False
        if self._beat is not None:
            self._beat.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._beat
        for task in list(self._tasks):
            task.cancel()
        if self._listening is not None:
            await asyncio.get_running_loop().run_in_executor(None, self._listening.close)
        with contextlib.suppress(Exception):  # the store may be closing already; leases then just expire
            await self.deps.owner.call(lambda s: s.leave_service())

    # -- the heartbeat ---------------------------------------------------------------------------
    async def _heartbeats(self) -> None:
        interval = self.deps.settings.lease / 3
        while True:
            try:
                beat: Heartbeat = await self.deps.owner.call(lambda s: s.heartbeat())
            except Exception as exc:  # the database away for a moment: leases run out, others take over
                log.warning("heartbeat failed: %s", exc)
            else:
                await self._apply(beat)
            await asyncio.sleep(interval)

    async def _apply(self, beat: Heartbeat) -> None:
        if beat.stop and not self._stopping:
            self._stopping = True
            log.warning("asked to stop (anyy gateway stop --all or --id): stopping cleanly")
            signal.raise_signal(signal.SIGTERM)  # the Gateway's own clean stop, as `kill -TERM` would
        for session_id in beat.lost:
            log.warning("lease of session %s lost: its work here stops and writes nothing", session_id)
            self.hooks.lost(session_id)
        end_leftovers(beat.leftovers)
        for execution in beat.recovered:
            self.hooks.recovered(execution)
        for session_id in beat.woken:
            log.info("session %s: an item its dead owner never saw runs here", session_id)
            self.hooks.woken(session_id)
        for control in beat.controls:
            try:
                await self.hooks.control(control)
            except Exception as exc:  # a relayed stop or answer that no longer applies
                log.info("relayed %s for %s not applied: %s", control.kind, control.session_id, exc)

    async def fetch_controls(self) -> None:
        beat: Heartbeat = await self.deps.owner.call(lambda s: s.heartbeat())
        await self._apply(beat)

    # -- hints -----------------------------------------------------------------------------------
    def _from_thread(self, hint: Hint) -> None:
        if self._loop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._on_hint, hint)

    def _on_hint(self, hint: Hint) -> None:
        if hint.kind == "work":
            if self.hooks.poke(hint.session_id):  # the owner has it: no survivor needs to wake the session
                session_id = hint.session_id
                self._spawn(self.deps.owner.call(lambda s: s.took_work(session_id)))
        elif hint.kind == "control":
            self._spawn(self.fetch_controls())
        elif self.deps.bus.listened(hint.session_id):
            self._spawn(self.refresh(hint.session_id))
        else:
            self._seen.pop(hint.session_id, None)  # nobody here follows it any more (D13)

    def _spawn(self, coro: Awaitable[None]) -> None:
        task: asyncio.Task[None] = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.warning("hint not handled: %s", task.exception())

    # -- events of sessions run elsewhere --------------------------------------------------------
    def watched(self) -> int:
        """Sessions whose changes this Gateway follows for its subscribers."""
        return len(self._seen)

    async def watch(self, session_id: str | None) -> None:
        """Someone here subscribed to the session: remember what is there now (later hints say what changed).
        Sessions nobody here listens to any more are forgotten (D13): a later subscription reads them again.
        To every session: reading them all would cost too much, so the time is kept instead, and a session
        first heard of later announces what its owner wrote since then (``_first_read``)."""
        for gone in [s for s in self._seen if not self.deps.bus.listened(s)]:
            del self._seen[gone]
        if not self.joined:
            return
        if session_id is None:
            self._all_since = time.time()
        elif session_id not in self._seen:
            seen = self._seen[session_id] = _Seen()
            await self._read(session_id, seen, announce=False)

    async def refresh(self, session_id: str) -> None:
        seen = self._seen.get(session_id)
        if seen is None:
            seen = self._seen[session_id] = _Seen()
            if self._all_since is None:  # a subscription to the session itself reads it when it is made
                await self._read(session_id, seen, announce=False)
                return
            seen.busy = True
            try:
                await self._first_read(session_id, seen, self._all_since)
            finally:
                seen.busy = False
            if not seen.again:
                return
        if seen.busy:
            seen.again = True
            return
        seen.busy = True
        try:
            while True:
                seen.again = False
                await self._read(session_id, seen, announce=True)
                if not seen.again:
                    return
        finally:
            seen.busy = False

    async def _first_read(self, session_id: str, seen: _Seen, since: float) -> None:
        """A session changed elsewhere that nobody here had heard of, for a subscription to every session
        made at ``since``: what was written before that is taken as known, the rest announced (entry and
        execution times are the writer's clock: across hosts, as exact as the hosts' clocks agree)."""

        def known(store: SessionStore) -> None:
            entries = store.history(session_id, limit=HISTORY_WINDOW).items
            seen.last_entry = max((e.id for e in entries if e.created_at < since), default=0)
            seen.states = {
                e.id: e.state
                for e in store.list_executions(session_id)
                if e.started_at < since and (e.ended_at is None or e.ended_at < since)
            }

        await self.deps.owner.call(known)
        await self._read(session_id, seen, announce=True)

    async def _read(self, session_id: str, seen: _Seen, *, announce: bool) -> None:
        def read(store: SessionStore) -> tuple[list[Entry], list[Execution], list[Submission]]:
            entries = [e for e in store.history(session_id, limit=HISTORY_WINDOW).items if e.id > seen.last_entry]
            return entries[::-1], store.list_executions(session_id), store.list_submissions(session_id)

        entries, executions, pending = await self.deps.owner.call(read)
        if entries:
            seen.last_entry = entries[-1].id
        changed = [e for e in executions if seen.states.get(e.id) != e.state]
        seen.states.update({e.id: e.state for e in executions})
        queue = tuple((s.id, s.version) for s in pending)
        queue_changed, seen.queue = queue != seen.queue, queue
        if not announce:
            return
        # In the order they happened: an execution starts, its entries, then how it ended.
        for execution in changed:
            if execution.state == "running":
                self._announce.execution(execution)
        self._announce.entries(session_id, entries)
        for execution in changed:
            if execution.state != "running":
                self._announce.execution(execution, note=execution.note, error=execution.error)
        if queue_changed:
            self._announce.queue_now(session_id, pending)
