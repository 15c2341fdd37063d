"""A loopback TCP proxy in front of the test's PostgreSQL, to take the database away and bring it back
(SPEC P7) without restarting the machine's shared server: real sockets, real broken connections.

``cut()`` closes every connection through it and refuses new ones until ``restore()`` (what a database
restart or a network outage looks like to a client); ``cut_before(pattern)`` does so just before the next
client bytes holding ``pattern`` would reach the server; ``cut_after(pattern)`` lets the next client bytes
holding ``pattern`` through to the server, then closes that connection before the server's answer comes
back (a connection lost in the middle of a commit: the server did it, the client never heard).
"""

from __future__ import annotations

import contextlib
import socket
import threading
from urllib.parse import urlsplit, urlunsplit


class TcpProxy:
    def __init__(self, target_host: str, target_port: int) -> None:
        self.target = (target_host, target_port)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._pairs: list[tuple[socket.socket, socket.socket]] = []
        self._down = False
        self._cut_pattern: bytes | None = None
        self._drop_pattern: bytes | None = None
        self._drop_after: bytes | None = None  # cut_before's ``following``: armed per connection once seen
        self.cut_done = threading.Event()
        self.accepted = 0
        self.refused = 0  # connections ended at once while cut: each a client's attempt to reconnect
        self._closed = False
        self._thread = threading.Thread(target=self._accept, name="tcp-proxy", daemon=True)
        self._thread.start()

    @classmethod
    def before(cls, url: str) -> tuple[TcpProxy, str]:
        """A proxy in front of the server ``url`` names, and the same URL through the proxy."""
        parts = urlsplit(url)
        proxy = cls(parts.hostname or "127.0.0.1", parts.port or 5432)
        netloc = f"{parts.username}@" if parts.username else ""
        if parts.password:
            netloc = f"{parts.username}:{parts.password}@"
        return proxy, urlunsplit(parts._replace(netloc=f"{netloc}127.0.0.1:{proxy.port}"))

    # -- control -----------------------------------------------------------------------------------
    def cut(self) -> None:
        """Every connection through the proxy ends now; new ones are refused until :meth:`restore`."""
        with self._lock:
            self._down = True
            pairs, self._pairs = self._pairs, []
        for pair in pairs:
            _close(pair)

    def restore(self) -> None:
        with self._lock:
            self._down = False

    def cut_after(self, pattern: bytes) -> None:
        """The next client bytes holding ``pattern`` reach the server; then their connection is closed."""
        self.cut_done.clear()
        with self._lock:
            self._cut_pattern = pattern

    def cut_before(self, pattern: bytes, *, following: bytes | None = None) -> None:
        """The next client bytes holding ``pattern`` never reach the server: their connection is closed
        instead, and the proxy is cut from then on (the database gone just before that statement).
        ``following``: only once client bytes holding it went through on that connection (a statement
        after a given transaction's commit, say)."""
        self.cut_done.clear()
        with self._lock:
            self._drop_pattern = pattern
            self._drop_after = following

    def close(self) -> None:
        self._closed = True
        self.cut()
        with contextlib.suppress(OSError):
            self._listener.close()

    # -- the threads -------------------------------------------------------------------------------
    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            with self._lock:
                down = self._down
            if down:
                client.close()  # as a server that is not there: the connection ends at once
                with self._lock:
                    self.refused += 1
                continue
            try:
                server = socket.create_connection(self.target)
            except OSError:
                client.close()
                continue
            pair = (client, server)
            with self._lock:
                self._pairs.append(pair)
                self.accepted += 1
            threading.Thread(target=self._pump, args=(client, server, pair, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(server, client, pair, False), daemon=True).start()

    def _pump(
        self, source: socket.socket, sink: socket.socket, pair: tuple[socket.socket, socket.socket], upstream: bool
    ) -> None:
        armed = False  # this connection sent cut_before's ``following``
        try:
            while True:
                data = source.recv(65536)
                if not data:
                    break
                if upstream:
                    with self._lock:
                        ready = self._drop_after is None or armed
                        drop = ready and self._drop_pattern is not None and self._drop_pattern in data
                        if drop:
                            self._drop_pattern = self._drop_after = None
                        elif self._drop_after is not None and self._drop_after in data:
                            armed = True
                    if drop:
                        self.cut()
                        self.cut_done.set()
                        break
                sink.sendall(data)
                if upstream:
                    with self._lock:
                        pattern = self._cut_pattern
                        hit = pattern is not None and pattern in data
                        if hit:
                            self._cut_pattern = None
                    if hit:
                        # The server has the bytes (TCP keeps their order before the end of the stream):
                        # it acts on them; the client is cut off before any answer.
                        with contextlib.suppress(OSError):
                            pair[0].shutdown(socket.SHUT_RDWR)
                        pair[0].close()
                        self.cut_done.set()
                        break
        except OSError:
            pass
        finally:
            with self._lock:
                if pair in self._pairs:
                    self._pairs.remove(pair)
            _close(pair)


def _close(pair: tuple[socket.socket, socket.socket]) -> None:
    """Both ends closed (what was sent to the server still reaches it, before the end of the stream). Shut
    down first: a socket another thread is reading would stay open, however often it is closed."""
    for sock in pair:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(OSError):
            sock.close()
