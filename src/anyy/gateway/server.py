"""The Gateway process: one per profile (a lock in the profile), loopback only unless configured, its
address and a fresh access token written into the profile (mode 0600), structured logs in the profile.

Start-up order: take the lock, open the store and recover what a crash interrupted (G3), bind the
socket, publish ``gateway.json``, tell the starter it is ready, then serve. Shutdown (SIGTERM, SIGINT)
finishes the requests in flight, closes the store and removes ``gateway.json``.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import fcntl
import logging
import os
import secrets
import signal
import socket
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

import msgspec

from anyy.channels.service import Channels
from anyy.domain.errors import AnyyError, Conflict, InvalidInput
from anyy.gateway.app import create_app
from anyy.gateway.dispatcher import Dispatcher
from anyy.gateway.guard import ACCEPT_BURST, guarded_protocol, raise_fd_limit
from anyy.gateway.logs import setup_logging
from anyy.gateway.methods import TABLE
from anyy.gateway.push import push_loop
from anyy.gateway.state import Gateway
from anyy.profiles.config import GatewaySettings
from anyy.profiles.gateway_address import Address, address_path, read_address, write_address, write_more_address
from anyy.profiles.profile import Profile
from anyy.profiles.tls import TlsFiles, ca_fingerprint, is_address, is_loopback, require_tls
from anyy.runtime.assembly import build_deps, warm_providers
from anyy.runtime.runtime import Runtime
from anyy.runtime.schedule_admin import scheduling_for

log = logging.getLogger("anyy.gateway")

LOCK_FILE = "gateway.lock"


@contextlib.contextmanager
def profile_lock(profile: Profile, *, shared: bool = False) -> Iterator[bool]:
    """Hold the profile's Gateway lock, or say where the Gateway that holds it runs. With a ``shared``
    store (PostgreSQL), more Gateways of the profile may run: one holds the lock and publishes its
    address (yields True), the others serve beside it (False) and are listed by ``gateway status``."""
    path = profile.path / LOCK_FILE
    handle: IO[str] = open(path, "a+")  # noqa: SIM115 - held for the life of the Gateway
    try:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno not in (errno.EAGAIN, errno.EACCES):
                raise
            if shared:
                yield False
                return
            running = read_address(profile)
            where = f" at {running.url} (pid {running.pid})" if running else ""
            raise Conflict(
                f"a Gateway already runs for profile {profile.name!r}{where}: use it, or stop it with "
                f"`anyy gateway stop --profile {profile.name}`"
            ) from None
        yield True
    finally:
        handle.close()


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host``:``port``; InvalidInput / Conflict saying what to change when it cannot be."""
    if not 0 <= port <= 65535:
        raise InvalidInput(f"port {port} is not a port: use 1-65535, or leave --port out to take any free one")
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)  # asyncio then sets TCP_NODELAY
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise _bind_error(host, port, exc) from None
    sock.listen(ACCEPT_BURST)
    sock.set_inheritable(False)
    return sock


def _bind_error(host: str, port: int, exc: OSError) -> AnyyError:
    if exc.errno == errno.EADDRINUSE:
        return Conflict(
            f"port {port} on {host} is in use by another program: choose another with --port, or leave --port "
            "out to take any free one"
        )
    if exc.errno == errno.EACCES:
        return InvalidInput(f"port {port} needs more rights than this user has: use a port above 1023")
    if isinstance(exc, socket.gaierror) or exc.errno == errno.EADDRNOTAVAIL:
        return InvalidInput(
            f"cannot listen on {host!r}: it is not an address of this machine ({exc.strerror or exc}); use "
            "127.0.0.1 (the default), or an address `ip addr` lists"
        )
    return InvalidInput(f"cannot listen on {host}:{port}: {exc.strerror or exc}")


def _server_class() -> Any:
    import uvicorn

    class Server(uvicorn.Server):
        """uvicorn's server, but a signal ends ``serve`` normally (uvicorn re-raises it at the end, which
        would kill the process before the store is closed and gateway.json removed)."""

        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.add_signal_handler(sig, self.handle_exit, sig, None)
            try:
                yield
            finally:
                for sig in (signal.SIGTERM, signal.SIGINT):
                    loop.remove_signal_handler(sig)

    return Server


async def serve(
    profile: Profile,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    ready_fd: int | None = None,
    on_ready: Callable[[Address], None] | None = None,
    tls: TlsFiles | None = None,
) -> None:
    """Run the Gateway of ``profile`` until SIGTERM or SIGINT; ``on_ready`` is told its address once it
    listens (``anyy gateway run`` prints it). Beyond loopback, only with ``tls`` (O1)."""
    profile.require()
    if is_address(host):
        require_tls(host, tls)
    from anyy.profiles.store import store_backend

    with profile_lock(profile, shared=store_backend(profile) == "postgresql") as primary:
        setup_logging(profile.path)
        raise_fd_limit()
        config = profile.load_config()
        limits = config.gateway
        deps = build_deps(profile, workdir=Path.cwd())
        warm_providers(deps.models, config)  # SDK imports in a thread, never on the loop (G4)
        deps.owner.start()
        runtime = Runtime(deps)
        recovered = await runtime.start()
        schedules = scheduling_for(profile, runtime)
        await schedules.scheduler.start()
        token = secrets.token_urlsafe(32)
        gateway = Gateway(profile=profile, deps=deps, runtime=runtime, token=token, schedules=schedules)
        channels = Channels(runtime, profile.path)  # L1: each configured channel polled in the background
        await channels.start()
        gateway.channels = channels
        app = create_app(Dispatcher(gateway, TABLE), token, tls=tls is not None)
        sock = bind(host, port)
        try:
            require_tls(host, tls)  # a name: refused once known to be an address of this machine
        except InvalidInput:
            sock.close()
            raise
        port = sock.getsockname()[1]
        address = Address(
            profile=profile.name,
            pid=os.getpid(),
            host=host,
            port=port,
            token=token,
            started_at=time.time(),
            tls_cert=str(tls.cert) if tls else "",
        )
        more: Path | None = None
        if primary:
            write_address(profile, address)
        else:  # one more Gateway of a shared store leaves the profile's published address alone
            more = write_more_address(profile, address)
        remote_urls(gateway, host, port, tls)
        await runtime.cluster.set_address(address.url)
        _announce(profile, address, len(recovered), ready_fd)
        if on_ready is not None:
            on_ready(address)
        server = _server_class()(_uvicorn_config(app, limits, tls))
        pushing = asyncio.create_task(push_loop(gateway))  # Web Push to paired devices (O3)
        try:
            await server.serve(sockets=[sock])
        finally:
            pushing.cancel()
            with contextlib.suppress(FileNotFoundError):
                current = read_address(profile)
                if current is not None and current.pid == os.getpid():
                    address_path(profile).unlink()
            if more is not None:
                more.unlink(missing_ok=True)
            await channels.aclose()
            await schedules.scheduler.aclose()
            await runtime.aclose()
            await deps.owner.aclose()
            log.info("gateway stopped")


def remote_urls(gateway: Gateway, host: str, port: int, tls: TlsFiles | None) -> None:
    """What a pairing device is told to open (O2): this Gateway's address (on a wildcard, each of this
    machine's addresses and its name), and the fingerprint of the profile CA it should trust."""
    if gateway.remote is None:
        return
    scheme = "https" if tls else "http"
    gateway.remote.limit_failures = tls is not None  # reachable from elsewhere: failures are counted (O4)
    hosts = [host]
    if host in ("0.0.0.0", "::"):  # noqa: S104 - a wildcard read, not bound
        hosts = [socket.gethostname()]
        with contextlib.suppress(OSError):
            hosts += sorted({str(i[4][0]) for i in socket.getaddrinfo(socket.gethostname(), None)})
        hosts = [h for h in hosts if not is_loopback(h)] or ["127.0.0.1"]
    gateway.remote.urls = [f"{scheme}://{f'[{h}]' if ':' in h else h}:{port}" for h in hosts]
    if tls is not None and tls.ca is not None:
        gateway.remote.ca_fingerprint = ca_fingerprint(tls.ca.read_bytes())


def _announce(profile: Profile, address: Address, recovered: int, ready_fd: int | None) -> None:
    """Log the Gateway's address, and tell the process that started it."""
    log.info(
        "gateway ready on %s for profile %s (%d interrupted executions recovered)", address.url, profile.name, recovered
    )
    if ready_fd is not None:
        os.write(ready_fd, msgspec.json.encode(address) + b"\n")
        os.close(ready_fd)


def _uvicorn_config(app: Any, limits: GatewaySettings, tls: TlsFiles | None = None) -> Any:
    import uvicorn

    return uvicorn.Config(
        app,
        ssl_certfile=str(tls.cert) if tls else None,
        ssl_keyfile=str(tls.key) if tls else None,
        log_config=None,
        access_log=False,
        lifespan="off",
        ws_max_size=16 * 1024 * 1024,
        timeout_graceful_shutdown=5,
        backlog=ACCEPT_BURST,  # also what one round of asyncio's accept loop may take at once
        # A header timeout and a connection cap (D2), and uvicorn's own WebSocket keep-alive pings.
        http=guarded_protocol(limits.max_connections or None, limits.header_timeout),
    )
