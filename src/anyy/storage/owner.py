"""A store on its own thread: the one thread that ever touches the connection.

Callers on an event loop hand it whole units of work (``await owner.call(lambda store: ...)``); the
thread runs them one at a time, in order, and when it has nothing to do it runs the store's upkeep
(search indexing, reclaiming deleted sessions) in bounded steps, so that work stays off the path of
appends and never delays a caller by more than one step.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import queue
import threading
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from anyy.domain.errors import StoreUnavailable
from anyy.storage.protocol import SessionStore

S = TypeVar("S", bound=SessionStore)
T = TypeVar("T")

log = logging.getLogger(__name__)


_STOP = object()
_IDLE = object()


class StoreOwner(Generic[S]):
    def __init__(
        self,
        factory: Callable[[], S],
        *,
        maintenance_budget: int = 2000,
        idle_delay: float = 0.02,
        name: str = "anyy-store",
    ) -> None:
        self._factory = factory
        self._budget = maintenance_budget
        self._idle_delay = idle_delay
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._ready: concurrent.futures.Future[None] = concurrent.futures.Future()
        self._idle_waiters: list[concurrent.futures.Future[None]] = []
        self._closed = False

    # -- lifecycle -------------------------------------------------------------------------------
    def start(self) -> None:
        """Start the thread and open the store there; raises what opening raised."""
        self._thread.start()
        self._ready.result()

    def close(self) -> None:
        """Finish the queued work, close the store, stop the thread."""
        if self._closed:
            return
        self._closed = True
        self._queue.put(_STOP)
        self._thread.join()

    async def aclose(self) -> None:
        await asyncio.get_running_loop().run_in_executor(None, self.close)

    # -- work ------------------------------------------------------------------------------------
    def submit(self, fn: Callable[[S], T]) -> concurrent.futures.Future[T]:
        if self._closed:
            raise RuntimeError("the store is closed")
        future: concurrent.futures.Future[T] = concurrent.futures.Future()
        self._queue.put((fn, future))
        return future

    async def call(self, fn: Callable[[S], T]) -> T:
        """Run ``fn(store)`` on the owner thread and return its result (or raise its error)."""
        return await asyncio.wrap_future(self.submit(fn))

    def call_blocking(self, fn: Callable[[S], T]) -> T:
        """The same, for a caller that is not on an event loop."""
        return self.submit(fn).result()

    async def wait_idle(self) -> None:
        """Return once every queued call ran and the upkeep has nothing left to do."""
        future: concurrent.futures.Future[None] = concurrent.futures.Future()
        self._queue.put((_IDLE, future))
        await asyncio.wrap_future(future)

    # -- the thread ------------------------------------------------------------------------------
    def _run(self) -> None:
        try:
            store = self._factory()
        except BaseException as exc:
            self._ready.set_exception(exc)
            return
        self._ready.set_result(None)
        runner = store.run_unit
        upkeep_due = True
        try:
            while True:
                try:
                    item = self._queue.get(timeout=self._idle_delay if upkeep_due else None)
                except queue.Empty:
                    upkeep_due = self._upkeep(store, runner)
                    continue
                if item is _STOP:
                    break
                fn, future = item
                if fn is _IDLE:
                    self._idle_waiters.append(future)
                    upkeep_due = True
                    continue
                if future.set_running_or_notify_cancel():
                    try:
                        future.set_result(runner(fn))
                    except BaseException as exc:
                        future.set_exception(exc)
                upkeep_due = True
        finally:
            store.close()
            for waiter in self._idle_waiters:
                waiter.set_result(None)

    def _upkeep(self, store: S, runner: Callable[[Callable[[S], Any]], Any]) -> bool:
        """One bounded upkeep step; True while more is left."""
        budget = self._budget
        try:
            more = bool(runner(lambda s: s.maintain(budget)).more)
        except StoreUnavailable as exc:  # the database away: the next idle moment after a call retries
            log.warning("store upkeep postponed: %s", exc)
            more = False
        except Exception:  # upkeep must never kill the owner; the next idle moment retries
            log.exception("store upkeep failed; it will be retried")
            more = False
        if not more:
            waiters, self._idle_waiters = self._idle_waiters, []
            for waiter in waiters:
                waiter.set_result(None)
        return more
