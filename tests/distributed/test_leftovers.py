"""D3 with several Gateways: the processes a dead owner's tool calls left are ended by the Gateway that
takes its session over, but only on the dead owner's host (a pid names another process on another host).
The service here runs tools unsandboxed: sandboxed, a program dies with its Gateway (--die-with-parent)
and there is nothing left to end."""

from __future__ import annotations

import os
import select
from collections.abc import Iterator

import pytest

from tests.distributed.service import Service, eventually, three_gateways
from tests.distributed.test_any_gateway import wait_final
from tests.distributed.test_failover import running_execution
from tests.fakes.gateways import MakeHold


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    yield from three_gateways(tmp_path_factory, sandbox=False)


def tool_pid(service: Service, execution_id: str) -> int:
    def probe() -> int | None:
        rows = service.sql(
            "SELECT t.pid FROM tool_runs t JOIN executions e ON e.num = t.exe_num WHERE e.id = %s "
            "AND t.pid IS NOT NULL",
            (execution_id,),
        )
        return int(rows[0][0]) if rows else None

    return eventually(probe, 60, f"the tool process of {execution_id} recorded")


def take_over(service: Service, hold: MakeHold, *, elsewhere: bool) -> tuple[int, int]:
    """A held tool call on Gateway 0, which dies (with Gateway 1: Gateway 2 alone takes the session over).
    ``elsewhere``: Gateway 0 is recorded on another host. The tool's process (as a pidfd) and its pid, once
    Gateway 2 announced the execution interrupted (it ends leftovers before it announces)."""
    a = service.rpc(0)
    session = a.call("session.create")["id"]
    sent = a.call("session.send", session_id=session, text=hold().command)
    running = running_execution(a, session)
    pid = tool_pid(service, running)
    process = os.pidfd_open(pid)
    if elsewhere:
        service.sql("UPDATE gateways SET host = 'another-host' WHERE pid = %s", (service.gateways[0].pid,))
    with service.ws(2) as watcher:
        watcher.call("events.subscribe", {"session_id": session})
        service.gateways[0].kill()
        service.gateways[1].kill()
        watcher.event(lambda e: e.get("type") == "execution_state" and e.get("state") == "interrupted", 60)
    assert wait_final(service, 2, sent["id"])["state"] == "interrupted"
    return process, pid


def test_d3_a_dead_owners_tool_processes_are_ended_on_its_host_only(service: Service, hold: MakeHold) -> None:
    process, pid = take_over(service, hold, elsewhere=True)
    try:
        assert select.select([process], [], [], 0)[0] == [], f"pid {pid} of another host was signalled"
    finally:
        os.close(process)
    service.revive()
    process, pid = take_over(service, hold, elsewhere=False)
    try:
        assert select.select([process], [], [], 60)[0] == [process], f"pid {pid} outlived its Gateway"
    finally:
        os.close(process)
