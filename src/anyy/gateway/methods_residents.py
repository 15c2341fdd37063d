"""Methods on residents (K3): create, list, read, change, pause, resume and remove them."""

from __future__ import annotations

import msgspec

from anyy.api import methods as api
from anyy.api import residents as wire
from anyy.api.params import NoParams
from anyy.domain.residents import Resident, ResidentPatch
from anyy.domain.sessions import UNSET
from anyy.gateway.state import Connection, Gateway
from anyy.gateway.table import TABLE
from anyy.runtime.assembly import new_session
from anyy.runtime.residents import ResidentSpec


def view(resident: Resident) -> wire.Resident:
    return wire.Resident(
        id=resident.id,
        name=resident.name,
        session_id=resident.session_id,
        instructions=resident.instructions,
        heartbeat_seconds=resident.heartbeat_seconds,
        heartbeat_note=resident.heartbeat_note,
        webhook=resident.webhook,
        webhook_path=f"/hooks/{resident.name}" if resident.webhook else None,
        paused=resident.paused,
        last_wake_at=resident.last_wake_at,
        last_trigger=resident.last_trigger,
        next_wake_at=resident.next_wake_at,
        created_at=resident.created_at,
        updated_at=resident.updated_at,
    )


@TABLE.method(api.RESIDENT_CREATE)
async def create(gw: Gateway, conn: Connection | None, p: wire.ResidentCreateParams) -> wire.ResidentCreated:
    """Create a resident: a Background session (the profile's settings and the given role) with standing
    instructions, a heartbeat (``heartbeat_seconds``, at least 60, with ``heartbeat_note``) and, with
    ``webhook``, its own webhook at ``POST /hooks/NAME``. The webhook's secret is in this reply only."""
    gw.profile.load_role(p.role)  # an unknown role is a clear error listing the roles
    session = msgspec.structs.replace(
        new_session(gw.profile.load_config(), role=p.role, kind="background"), workspace=p.workspace
    )
    spec = ResidentSpec(
        name=p.name,
        instructions=p.instructions,
        heartbeat_seconds=p.heartbeat_seconds,
        heartbeat_note=p.heartbeat_note,
        webhook=p.webhook,
    )
    resident, secret = await gw.runtime.residents.create(spec, session)
    return wire.ResidentCreated(resident=view(resident), secret=secret)


@TABLE.method(api.RESIDENT_LIST)
async def list_(gw: Gateway, conn: Connection | None, p: NoParams) -> list[wire.Resident]:
    """Every resident of the profile by name, with its triggers and its last and next wake."""
    return [view(r) for r in await gw.runtime.residents.list()]


@TABLE.method(api.RESIDENT_GET)
async def get(gw: Gateway, conn: Connection | None, p: wire.ResidentRef) -> wire.Resident:
    """One resident, by name or id."""
    return view(await gw.runtime.residents.get(p.name))


@TABLE.method(api.RESIDENT_UPDATE)
async def update(gw: Gateway, conn: Connection | None, p: wire.ResidentUpdateParams) -> wire.ResidentCreated:
    """Change a resident's instructions or triggers (fields left out stay). Turning the webhook on, or
    ``new_secret``, makes a new secret, returned in this reply only; the old one stops working."""
    residents = gw.runtime.residents
    patch = ResidentPatch(
        instructions=UNSET if p.instructions is None else p.instructions,
        heartbeat_seconds=UNSET if p.heartbeat_seconds is None else p.heartbeat_seconds,
        heartbeat_note=UNSET if p.heartbeat_note is None else p.heartbeat_note,
        webhook=UNSET if p.webhook is None else p.webhook,
    )
    resident, secret = await residents.update(p.name, patch)
    if p.new_secret:
        resident, secret = await residents.new_secret(resident.id)
    return wire.ResidentCreated(resident=view(resident), secret=secret)


@TABLE.method(api.RESIDENT_PAUSE)
async def pause(gw: Gateway, conn: Connection | None, p: wire.ResidentRef) -> wire.Resident:
    """Stop a resident's triggers (no heartbeat; its webhook answers 409) until it is resumed. Its session
    stays usable."""
    return view(await gw.runtime.residents.pause(p.name, True))


@TABLE.method(api.RESIDENT_RESUME)
async def resume(gw: Gateway, conn: Connection | None, p: wire.ResidentRef) -> wire.Resident:
    """Start a paused resident's triggers again; the next heartbeat is an interval from now."""
    return view(await gw.runtime.residents.pause(p.name, False))


@TABLE.method(api.RESIDENT_DELETE)
async def delete(gw: Gateway, conn: Connection | None, p: wire.ResidentRef) -> wire.Resident:
    """Remove a resident and its triggers (its webhook stops at once). Its session stays, with its history,
    in the Background list; delete it with session.delete if it is no longer wanted."""
    return view(await gw.runtime.residents.delete(p.name))
