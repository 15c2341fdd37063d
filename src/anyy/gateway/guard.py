"""Connections the Gateway keeps open, bounded (issue 17, D2): any local process can open sockets to the
Gateway, so idle ones must not exhaust its file descriptors and freeze it.

- **Header timeout**: a connection must send a complete request head (HTTP, or the WebSocket upgrade)
  within :data:`HEADER_TIMEOUT` seconds of being accepted, or it is closed. After a request, uvicorn's
  keep-alive timeout applies; a WebSocket is authenticated by its first request (the app closes one
  without the token at once).
- **A cap on open connections**, below the process's file-descriptor limit: when it is reached, the
  oldest connection that has not sent a request yet (so has not shown a token either) is shed first; a
  newcomer is refused only when every open connection is a client that made a request.

The policy is a small uvicorn HTTP protocol subclass (``Config(http=...)``); uvicorn's own protocol does
the rest.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import resource
from typing import Any

log = logging.getLogger("anyy.gateway")

HEADER_TIMEOUT = 10.0
ACCEPT_BURST = 128  # the listen backlog: asyncio accepts up to this many sockets before any is admitted
FD_RESERVE = 128 + ACCEPT_BURST  # descriptors kept for the store, logs, tool processes, and one burst
MAX_CONNECTIONS = 2048


def raise_fd_limit() -> int:
    """Raise the soft limit on open files to the hard one (as servers do); the limit in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = hard if hard != resource.RLIM_INFINITY else max(soft, 65536)
    if soft != resource.RLIM_INFINITY and soft < wanted:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
            soft = wanted
        except (ValueError, OSError):
            pass
    return soft if soft != resource.RLIM_INFINITY else 1 << 20


def connection_cap() -> int:
    """How many connections may be open at once: under the descriptor limit, with a reserve."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    limit = soft if soft != resource.RLIM_INFINITY else 1 << 20
    return max(16, min(MAX_CONNECTIONS, limit - FD_RESERVE))


class Guard:
    """The connections that have not sent a request yet, oldest first, and the cap."""

    def __init__(self, cap: int, header_timeout: float) -> None:
        self.cap = cap
        self.header_timeout = header_timeout
        self.waiting: collections.OrderedDict[Any, None] = collections.OrderedDict()
        self.shed = 0  # connections closed to make room (a figure for tests and gateway.status)
        self.timed_out = 0

    def admit(self, protocol: Any, open_connections: int) -> bool:
        """Room for a new connection (shedding the oldest idle one if needed); False: refuse it."""
        self.waiting[protocol] = None
        while open_connections > self.cap:
            oldest = next(iter(self.waiting))
            if oldest is protocol:
                self.forget(protocol)
                self.shed += 1
                log.warning("connection refused: %d connections open (the cap), all of them clients", self.cap)
                return False
            self.forget(oldest)
            oldest.transport.close()
            self.shed += 1
            open_connections -= 1
            log.warning("connection cap (%d) reached: closed the oldest connection that sent no request", self.cap)
        return True

    def forget(self, protocol: Any) -> None:
        self.waiting.pop(protocol, None)


def guarded_protocol(cap: int | None = None, header_timeout: float = HEADER_TIMEOUT) -> type[asyncio.Protocol]:
    """uvicorn's h11 protocol with the header timeout and the connection cap of one Guard."""
    from uvicorn.protocols.http.h11_impl import H11Protocol

    guard = Guard(connection_cap() if cap is None else cap, header_timeout)

    class GuardedProtocol(H11Protocol):
        _head_timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            if not guard.admit(self, len(self.connections)):
                transport.close()
                return
            self._head_timer = self.loop.call_later(guard.header_timeout, self._no_request_in_time)

        def handle_events(self) -> None:
            super().handle_events()
            if self.scope is not None and self._head_timer is not None:  # a request head arrived
                self._head_timer.cancel()
                self._head_timer = None
                guard.forget(self)

        def connection_lost(self, exc: Exception | None) -> None:
            if self._head_timer is not None:
                self._head_timer.cancel()
                self._head_timer = None
            guard.forget(self)
            super().connection_lost(exc)

        def _no_request_in_time(self) -> None:
            self._head_timer = None
            if self.scope is None:
                guard.forget(self)
                guard.timed_out += 1
                log.info("closed a connection that sent no request within %g s", guard.header_timeout)
                self.transport.close()

    GuardedProtocol.guard = guard  # type: ignore[attr-defined]
    return GuardedProtocol
