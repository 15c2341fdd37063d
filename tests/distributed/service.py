"""Several real Gateway processes on one PostgreSQL database, for the P3-P6 tests.

Each Gateway has a home and profile of its own (as on separate hosts) whose ``[store] url`` names the same
database, with a short lease so takeovers happen within a test's bounds. Processes are started with
``--ready-fd`` (tests/killtest/gateway_process.py), stopped or SIGKILLed and always reaped. Waits are on
RPC replies, events and the database, each with a deadline; nothing sleeps to order anything.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import psycopg
import pytest

from anyy.profiles import create_profile
from tests.fakes.gateways import WsClient
from tests.killtest.gateway_process import GatewayProcess, RpcClient
from tests.postgres.server import create_database, require_postgres

LEASE = 2.0  # seconds: short enough for quick takeovers; 1 s ran out under the stalls of a loaded 2-core machine
BOUND = 8.0  # what a takeover may take beyond the lease on a loaded 2-core machine (heartbeat, recovery)
T = TypeVar("T")


@dataclass
class Service:
    root: Path
    database: str
    gateways: list[GatewayProcess] = field(default_factory=list)
    sandbox: bool = True  # False: tools run unsandboxed (their processes can outlive a killed Gateway)

    def add(self, url: str | None = None) -> GatewayProcess:
        """One more Gateway of the service, started and ready; ``url``: another way to the same database
        (through a proxy the test controls)."""
        number = len(self.gateways)
        home = self.root / f"host{number}"
        profile = create_profile(home, "default")
        config = profile.path / "config.toml"
        text = config.read_text().replace('\nurl = ""\n', f'\nurl = "{url or self.database}"\n', 1)
        text = text.replace("# lease = 3.0", f"lease = {LEASE}", 1).replace(
            '"ask_user", "memory"]', '"ask_user", "memory", "delegate"]', 1
        )
        config.write_text(text + ("" if self.sandbox else "\n[tools.sandbox]\nenabled = false\n"))
        work = self.root / f"work{number}"
        work.mkdir()
        gateway = GatewayProcess(home, "default", cwd=work, log=self.root / f"gateway{number}.err")
        self.gateways.append(gateway)
        gateway.start()
        return gateway

    def revive(self) -> None:
        """Start again every Gateway that is not running (killed or stopped by an earlier test)."""
        for gateway in self.gateways:
            if gateway.proc is None or gateway.proc.poll() is not None:
                if gateway.pidfd is not None:  # it died by itself (a killed one's was closed by kill())
                    os.close(gateway.pidfd)
                    gateway.pidfd = None
                gateway.start()

    def rpc(self, index: int) -> RpcClient:
        return self.gateways[index].client()

    def ws(self, index: int) -> WsClient:
        gateway = self.gateways[index]
        return WsClient(f"ws://{gateway.host}:{gateway.port}/ws", gateway.token)

    def close(self) -> None:
        for gateway in self.gateways:
            if gateway.proc is not None and gateway.proc.poll() is None:
                os.kill(gateway.proc.pid, signal.SIGCONT)  # a stopped one must be able to die
            gateway.stop()

    def sql(self, query: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        with psycopg.connect(self.database, autocommit=True) as conn:
            cur = conn.execute(query, params)
            return cur.fetchall() if cur.description is not None else []

    def log(self, index: int) -> str:
        return (self.root / f"gateway{index}.err").read_text(errors="replace")

    def profile_log(self, index: int) -> str:
        """What the Gateway logged (its profile's logs/gateway.log)."""
        logs = self.gateways[index].home / "profiles" / "default" / "logs" / "gateway.log"
        return logs.read_text(errors="replace") if logs.exists() else ""


def three_gateways(factory: pytest.TempPathFactory, *, sandbox: bool = True) -> Iterator[Service]:
    """A service of three Gateways on a fresh database (a fixture's body); every process reaped after."""
    require_postgres()
    made = Service(root=factory.mktemp("cluster"), database=create_database("anyy_dist"), sandbox=sandbox)
    try:
        for _ in range(3):
            made.add()
        yield made
    finally:
        made.close()


def eventually(probe: Callable[[], T | None], timeout: float, what: str) -> T:
    """``probe()`` once it returns something (not None/False), polled until ``timeout`` seconds pass."""
    deadline = time.monotonic() + timeout
    while True:
        found = probe()
        if found:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout:.0f} s")
        time.sleep(0.05)
