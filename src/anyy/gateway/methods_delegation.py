"""Methods on delegation (K2): a parent session's children, with their states and answers."""

from __future__ import annotations

import msgspec

from anyy.api import methods as api
from anyy.api import sessions as wire
from anyy.api.params import SessionRef
from anyy.gateway.state import Connection, Gateway
from anyy.gateway.table import TABLE


@TABLE.method(api.SESSION_CHILDREN)
async def children(gw: Gateway, conn: Connection | None, p: SessionRef) -> list[wire.DelegatedTask]:
    """The child Background sessions a session's ``delegate`` calls started, oldest call first, each call's
    tasks in order: state (waiting, running, finished, cancelled) and, once ended, the answer or failure."""
    await gw.store(lambda s: s.get_session(p.session_id))  # a session that does not exist: not found
    tasks = await gw.store(lambda s: s.list_delegated_tasks(parent_session_id=p.session_id))
    return [msgspec.convert(msgspec.to_builtins(task), wire.DelegatedTask, strict=False) for task in tasks]
