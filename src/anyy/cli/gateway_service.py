"""``anyy gateway stop --all`` / ``--id``: Gateways of a service on a shared store, wherever they run.

A Gateway on another host (or of another profile) cannot be signalled from here and its access token is not
known here, so the request is durable: ``gateways.stop_requested``, which that Gateway reads at its next
heartbeat (lease / 3) and answers by stopping cleanly, as SIGTERM would (its row goes with it). This command
waits for the rows to go, and says for each Gateway what happened.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import click

from anyy.cli.context import open_store
from anyy.domain.errors import AnyyError, NotFound

if TYPE_CHECKING:
    from anyy.profiles import Profile
    from anyy.storage.ownership import GatewayInfo

POLL = 0.2  # seconds between looks at the gateways table while Gateways stop


def stop_service(profile: Profile, gateway_ids: list[str] | None, wait_seconds: float) -> None:
    with open_store(profile) as store:
        known = {g.id: g for g in store.list_gateways()}
        unknown = [gid for gid in gateway_ids or [] if gid not in known]
        if unknown:
            raise NotFound(
                f"no Gateway {', '.join(unknown)} in the service of profile {profile.name}; "
                "`anyy gateway status` lists them"
            )
        if gateway_ids is None and not known:
            click.echo("no other Gateway of the service is registered: nothing more to stop")
            return
        asked = store.request_stop(gateway_ids)
        deadline = time.monotonic() + wait_seconds
        left = {gid: known[gid] for gid in asked if gid in known and known[gid].alive}
        for gid in asked:
            if gid in known and not known[gid].alive:
                click.echo(f"Gateway {_named(known[gid])} was not running (it stopped renewing its lease)")
        while left and time.monotonic() < deadline:
            rows = {g.id: g for g in store.list_gateways()}
            for gid in [gid for gid in left if gid not in rows or not rows[gid].alive]:
                click.echo(f"Gateway {_named(left.pop(gid))} stopped")
            if left:
                time.sleep(POLL)
    if left:
        names = "; ".join(_named(g) for g in left.values())
        raise AnyyError(
            f"still running {wait_seconds:g} s after the stop request: {names}. It stops at its next heartbeat "
            "once it reaches the database; see its host's logs"
        )


def _named(gateway: GatewayInfo) -> str:
    return f"{gateway.id} (pid {gateway.pid} on {gateway.host}, {gateway.address or 'no address'})"
