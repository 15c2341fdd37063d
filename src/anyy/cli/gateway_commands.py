"""``anyy gateway start|stop|status|run``: the profile's Gateway process (SPEC G1).

``start`` runs ``python -m anyy.gateway --profile P --ready-fd FD`` in its own session, its output in
``PROFILE/logs/gateway.out``, and waits for the address it writes on the pipe once it listens. ``stop``
sends SIGTERM to the pid in ``gateway.json`` (and to the profile's other Gateways of a shared store, listed
in ``PROFILE/gateways/``) and waits for each process to exit (a pidfd, no polling).
The Gateway itself holds the profile's lock: a second one refuses to start and says where the first runs.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from anyy.cli.context import with_profile
from anyy.cli.output import echo_json
from anyy.cli.tls_options import tls_argv, tls_options
from anyy.domain.errors import AnyyError
from anyy.profiles.gateway_address import Address, address_path, read_address

if TYPE_CHECKING:
    from anyy.api.gateway import Status
    from anyy.profiles import Profile


class GatewayError(AnyyError):
    pass


def _gateway_argv(profile: Profile, host: str | None, port: int | None) -> list[str]:
    argv = [sys.executable, "-m", "anyy.gateway", "--profile", profile.name]
    if host is not None:
        argv += ["--host", host]
    if port is not None:
        argv += ["--port", str(port)]
    return argv


@click.group()
def gateway() -> None:
    """Start, stop and inspect the profile's Gateway (the process that owns its sessions and runs the
    agent; `anyy chat` and the other clients talk to it)."""


@gateway.command("start")
@with_profile
@click.option("--host", default=None, metavar="HOST", help="Address to listen on (default 127.0.0.1, loopback).")
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=None,
    metavar="PORT",
    help="Port to listen on (default: any free one).",
)
@click.option(
    "--wait",
    "wait_seconds",
    type=float,
    default=30.0,
    show_default=True,
    metavar="SECONDS",
    help="How long to wait for the Gateway to be ready.",
)
@tls_options
def start_command(  # noqa: PLR0917 - click passes options by name
    profile: Profile,
    host: str | None,
    port: int | None,
    wait_seconds: float,
    own_ca: bool,
    tls_cert: str | None,
    tls_key: str | None,
    tls_names: tuple[str, ...],
) -> None:
    """Start the profile's Gateway in the background and print where it listens. Beyond loopback (--host)
    it speaks TLS only: --tls, or --tls-cert and --tls-key (docs/remote.md)."""
    from anyy.client.errors import GatewayStartFailed
    from anyy.client.launch import launch_gateway, output_path

    more = tls_argv(host, own_ca, tls_cert, tls_key, tls_names)
    try:
        address = launch_gateway(profile, host=host, port=port, timeout=wait_seconds, more=more)
    except GatewayStartFailed as exc:
        raise GatewayError(str(exc)) from None
    click.echo(
        f"Gateway of profile {profile.name} running at {address.url} (pid {address.pid}); "
        f"its output goes to {output_path(profile)}"
    )


def _running(profile: Profile, address: Address | None = None) -> tuple[Address, Status] | None:
    """The published address (or ``address``) and that Gateway's own status, or None when nothing answers."""
    from anyy.api.methods import GATEWAY_STATUS
    from anyy.api.params import NoParams
    from anyy.client.errors import GatewayUnavailable
    from anyy.client.sync import connect

    address = read_address(profile) if address is None else address
    if address is None:
        return None
    try:
        with connect(address) as client:
            status = client.call(GATEWAY_STATUS, NoParams(), timeout=10)
    except GatewayUnavailable:
        return None
    except TimeoutError:
        raise GatewayError(
            f"the Gateway of profile {profile.name} at {address.url} (pid {address.pid}) accepted the connection "
            f"but did not answer gateway.status within 10 s; see {profile.path / 'logs'}"
        ) from None
    return address, status


@gateway.command("status")
@with_profile
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def status_command(profile: Profile, as_json: bool) -> None:
    """Say whether the profile's Gateway runs: address, pid, profile, version. Exit status 0 when it
    runs, 1 when it does not."""
    profile.require()
    found = _running(profile)
    if found is None:
        if as_json:
            echo_json({"running": False, "profile": profile.name})
        else:
            click.echo(f"no Gateway is running for profile {profile.name}")
        raise SystemExit(1)
    address, status = found
    record = {
        "running": True,
        "profile": status.profile,
        "url": address.url,
        "host": address.host,
        "port": address.port,
        "pid": status.pid,
        "version": status.version,
        "started_at": status.started_at,
    }
    if status.service:
        record["gateway_id"] = status.gateway_id
        record["service"] = [
            {"id": g.id, "address": g.address, "pid": g.pid, "host": g.host, "alive": g.alive, "sessions": g.sessions}
            for g in status.service
        ]
    if status.hooks:
        record["hooks"] = status.hooks
    if as_json:
        echo_json(record)
        return
    click.echo(
        f"Gateway of profile {record['profile']} running at {address.url} "
        f"(pid {record['pid']}, anyy {record['version']})"
    )
    _echo_service(status)
    for note in status.hooks:  # N6: hooks that do not run, and what to do
        click.echo(f"hooks: {note}")


def _echo_service(status: Status) -> None:
    """The service's Gateways (several on one PostgreSQL store), one line each, with their sessions."""
    if not status.service:
        return
    alive = sum(g.alive for g in status.service)
    click.echo(f"service: {alive} of {len(status.service)} Gateways alive on the shared store")
    for g in status.service:
        mark = "*" if g.id == status.gateway_id else " "
        state = "alive" if g.alive else "gone (its sessions are taken over after its lease)"
        sessions = ", ".join(g.sessions) if g.sessions else "none"
        click.echo(f" {mark} {g.id}  {g.address or '-'}  pid {g.pid} on {g.host}  {state}; sessions: {sessions}")


def _wait_exit(pid: int, timeout: float) -> bool:
    """True once process ``pid`` has exited, False if it still runs after ``timeout`` seconds."""
    try:
        pidfd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        poller = select.poll()
        poller.register(pidfd, select.POLLIN)
        return bool(poller.poll(timeout * 1000))
    finally:
        os.close(pidfd)


@gateway.command("stop")
@with_profile
@click.option(
    "--wait",
    "wait_seconds",
    type=float,
    default=30.0,
    show_default=True,
    metavar="SECONDS",
    help="How long to wait for each Gateway to exit.",
)
@click.option(
    "--all",
    "everywhere",
    is_flag=True,
    help="Also ask every other Gateway of the service (other profiles, other hosts) to stop (docs/scaling.md).",
)
@click.option(
    "--id",
    "gateway_ids",
    multiple=True,
    metavar="GATEWAY",
    help="Ask this Gateway of the service (an id `anyy gateway status` lists) to stop, wherever it runs.",
)
def stop_command(profile: Profile, wait_seconds: float, everywhere: bool, gateway_ids: tuple[str, ...]) -> None:
    """Stop the profile's Gateways on this host: the one that published gateway.json and any more started
    with `anyy gateway run --store`. Requests in flight finish, running work is recorded as interrupted,
    leases are given back. ``--all`` / ``--id``: Gateways elsewhere stop at their next heartbeat."""
    profile.require()
    if not gateway_ids:
        _stop_local(profile, wait_seconds)
    if everywhere or gateway_ids:
        from anyy.cli.gateway_service import stop_service

        stop_service(profile, list(gateway_ids) or None, wait_seconds)


def _stop_local(profile: Profile, wait_seconds: float) -> None:
    from anyy.profiles.gateway_address import read_more_addresses

    targets: list[tuple[Address, Path | None]] = []
    address = read_address(profile)
    if address is not None:
        targets.append((address, None))
    targets += [(more, path) for path, more in read_more_addresses(profile)]
    if not targets:
        click.echo(f"no Gateway is running for profile {profile.name}: nothing to stop")
        return
    for target, path in targets:
        _stop_one(profile, target, path, wait_seconds)


def _stop_one(profile: Profile, address: Address, more: Path | None, wait_seconds: float) -> None:
    """SIGTERM to one Gateway of the profile once it proved (gateway.status, same pid) it is still that one."""
    what = "Gateway" if more is None else "one more Gateway"
    found = _running(profile, address)
    published = address_path(profile) if more is None else more
    if found is None or found[1].pid != address.pid:
        # Nothing answers there: a Gateway killed without cleaning up. The pid may belong to another
        # process by now, so nothing is signalled.
        published.unlink(missing_ok=True)
        click.echo(
            f"no {what} answers for profile {profile.name} at {address.url} (pid {address.pid} is gone or is "
            f"not it); removed its stale {published.name}"
        )
        return
    with contextlib.suppress(ProcessLookupError):  # it exited meanwhile: what stop wanted
        os.kill(address.pid, signal.SIGTERM)
    if not _wait_exit(address.pid, wait_seconds):
        raise GatewayError(
            f"the {what} of profile {profile.name} (pid {address.pid}) is still running {wait_seconds:g} s after "
            f"SIGTERM; see {profile.path / 'logs'}, or end it with `kill -KILL {address.pid}`"
        )
    if published.exists() and (left := _read(published)) is not None and left.pid == address.pid:
        raise GatewayError(f"the {what} of profile {profile.name} exited but left {published} behind; remove it")
    click.echo(f"{what} of profile {profile.name} stopped (pid {address.pid}, {address.url})")


def _read(path: Path) -> Address | None:
    import msgspec

    try:
        return msgspec.json.decode(path.read_bytes(), type=Address)
    except (OSError, msgspec.DecodeError, msgspec.ValidationError):
        return None


@gateway.command("run")
@with_profile
@click.option("--host", default=None, metavar="HOST", help="Address to listen on (default 127.0.0.1, loopback).")
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=None,
    metavar="PORT",
    help="Port to listen on (default: any free one).",
)
@click.option(
    "--store",
    default=None,
    metavar="URL",
    help="A PostgreSQL URL: run one more Gateway of the service that shares this store (docs/scaling.md).",
)
@tls_options
def run_command(  # noqa: PLR0917 - click passes options by name
    profile: Profile,
    host: str | None,
    port: int | None,
    store: str | None,
    own_ca: bool,
    tls_cert: str | None,
    tls_key: str | None,
    tls_names: tuple[str, ...],
) -> None:
    """Run the profile's Gateway in the foreground until Ctrl+C (or SIGTERM); it says where it listens. With
    ``--store`` (or a PostgreSQL [store] url), several Gateways may run at once: they share the sessions."""
    profile.require()
    argv = [*_gateway_argv(profile, host, port), *tls_argv(host, own_ca, tls_cert, tls_key, tls_names), "--announce"]
    if store is not None:
        from anyy.storage.choose import POSTGRES_SCHEMES

        if not store.startswith(POSTGRES_SCHEMES):
            raise GatewayError(f"--store must be a postgresql:// URL (several Gateways share one), not {store!r}")
        os.environ["ANYY_STORE_URL"] = store
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(sys.executable, argv)  # noqa: S606 - our own interpreter and module
