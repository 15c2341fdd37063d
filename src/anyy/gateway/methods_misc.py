"""Goals, reload, tools, models, the Gateway's status, and event subscriptions."""

from __future__ import annotations

import asyncio
import os
from typing import Any

import msgspec

from anyy import __version__
from anyy.api import methods as api
from anyy.api import sessions as wire
from anyy.api.gateway import AliasInfo, DashboardCode, Held, Models, ProviderInfo, ServiceGateway, Status, Subscribed
from anyy.api.params import (
    ApproveParams,
    GoalParams,
    NoParams,
    SessionRef,
    SubscribeParams,
    ToolsParams,
    UnsubscribeParams,
)
from anyy.gateway.codes import CODE_SECONDS
from anyy.gateway.remote import exposure_now
from anyy.gateway.state import Connection, Gateway
from anyy.gateway.table import TABLE
from anyy.runtime import views
from anyy.runtime.memory import resident_bytes


@TABLE.method(api.SESSION_GOAL)
async def goal(gw: Gateway, conn: Connection | None, p: GoalParams) -> wire.GoalResult:
    """The session's optional goal: ``set`` (with text), ``status``, ``pause``, ``resume``, ``clear``.
    Metadata only: it starts, stops and schedules nothing."""
    goal = await gw.runtime.goal(p.session_id, p.action, p.text)
    return wire.GoalResult(goal=None if goal is None else views.convert(goal, wire.Goal))


@TABLE.method(api.SESSION_RELOAD)
async def reload(gw: Gateway, conn: Connection | None, p: SessionRef) -> list[wire.ReloadStep]:
    """Refresh an idle session from the current settings and resources (config.toml, its role, memory,
    its model), keeping history, storage, tools and queue. Steps run in order; each says whether it
    applied; a failed step does not undo the ones before. Never stops work, never starts a turn."""
    return views.convert(await gw.runtime.reload(p.session_id), list[wire.ReloadStep])


@TABLE.method(api.SESSION_APPROVE)
async def approve(gw: Gateway, conn: Connection | None, p: ApproveParams) -> None:
    """Answer the approval request a suspended execution waits on (N2): ``once`` runs the call this time,
    ``session`` also allows the same call for the rest of the session, ``deny`` refuses it (the model is
    told). The execution resumes."""
    await gw.runtime.approve(p.session_id, p.execution_id, p.decision)


@TABLE.method(api.SESSION_TOOLS_CONFIGURE)
async def configure_tools(gw: Gateway, conn: Connection | None, p: ToolsParams) -> wire.Session:
    """Choose the session's tools and Codemode. Only when the session is idle: nothing running, queued
    or being admitted, and no summary in progress; otherwise a conflict."""
    return views.session(await gw.runtime.configure_tools(p.session_id, p.enabled, codemode=p.codemode))


@TABLE.method(api.SESSION_CONTINUE)
async def continue_(gw: Gateway, conn: Connection | None, p: SessionRef) -> None:
    """Start the pending items again after a stop or a failure (nothing restarts by itself)."""
    await gw.runtime.continue_queue(p.session_id)


@TABLE.method(api.MODELS_LIST)
async def models(gw: Gateway, conn: Connection | None, p: NoParams) -> Models:
    """Providers with their models, and virtual models (aliases), for a model selector."""
    registry: Any = gw.deps.models
    catalog = registry.catalog() if hasattr(registry, "catalog") else []
    aliases = registry.aliases() if hasattr(registry, "aliases") else []
    return Models(providers=views.convert(catalog, list[ProviderInfo]), aliases=views.convert(aliases, list[AliasInfo]))


@TABLE.method(api.GATEWAY_STATUS)
async def status(gw: Gateway, conn: Connection | None, p: NoParams) -> Status:
    """Which profile this Gateway serves, its version and process, and what it keeps in memory now (per
    session state, resident memory); with several Gateways on one PostgreSQL store, every Gateway of the
    service and the sessions each holds; the user's hooks that are not run, and why (N6)."""
    cluster = gw.runtime.cluster
    members = await gw.store(lambda s: s.list_gateways()) if cluster.joined else []
    held = msgspec.structs.asdict(gw.runtime.footprint())
    return Status(
        profile=gw.profile.name,
        version=__version__,
        pid=os.getpid(),
        started_at=gw.started_at,
        sandbox=gw.deps.tool_policy.sandbox.note,
        gateway_id=cluster.gateway_id if cluster.joined else "",
        service=[msgspec.convert(msgspec.to_builtins(m), ServiceGateway) for m in members],
        held=Held(**held, rss=resident_bytes()),
        hooks=await asyncio.to_thread(gw.deps.hooks.notes) if gw.deps.hooks is not None else [],
        exposure=await asyncio.to_thread(exposure_now, gw),
    )


@TABLE.method(api.EVENTS_SUBSCRIBE)
async def subscribe(gw: Gateway, conn: Connection | None, p: SubscribeParams) -> Subscribed:
    """Receive the session's events (or every session's) on this WebSocket as ``event`` notifications:
    text deltas, entries appended, queue changed, execution state, retry waits, tool activity, notices."""
    assert conn is not None
    if p.session_id is not None:
        await gw.store(lambda s: s.get_session(p.session_id))  # type: ignore[arg-type]
    conn.next_id += 1
    name = f"sub-{conn.next_id}"
    subscription = gw.runtime.subscribe(p.session_id)
    await gw.runtime.watch(p.session_id)

    async def forward() -> None:
        while True:
            await conn.send_event(await subscription.get())

    conn.subscriptions[name] = (subscription, asyncio.create_task(forward()))
    return Subscribed(subscription=name)


@TABLE.method(api.EVENTS_UNSUBSCRIBE)
async def unsubscribe(gw: Gateway, conn: Connection | None, p: UnsubscribeParams) -> None:
    """Stop a subscription made on this connection."""
    assert conn is not None
    found = conn.subscriptions.pop(p.subscription, None)
    if found is not None:
        found[0].close()
        found[1].cancel()


@TABLE.method(api.DASHBOARD_CODE)
async def dashboard_code(gw: Gateway, conn: Connection | None, p: NoParams) -> DashboardCode:
    """A one-time code that opens the Dashboard: the page at ``/#code=CODE`` trades it for the access
    token (``POST /auth/exchange``), once, within ``expires_in`` seconds. ``anyy dashboard`` uses it so that
    the token never appears on a browser's command line."""
    return DashboardCode(code=gw.codes.issue(CODE_SECONDS), expires_in=CODE_SECONDS)
