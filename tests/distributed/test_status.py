"""P3: `anyy gateway run --store URL` starts one more Gateway of the service, beside the profile's own;
`anyy gateway status` lists the service's Gateways and the sessions each holds."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from tests.distributed.service import eventually
from tests.fakes.gateways import run, start
from tests.postgres.server import create_database, require_postgres


def status(home: Path) -> dict[str, Any] | None:
    done = run(home, "gateway", "status", "--json")
    if done.returncode != 0:
        return None
    found: dict[str, Any] = json.loads(done.stdout)
    return found


def test_p3_gateway_run_store_adds_a_gateway_and_status_lists_the_service(tmp_path: Path) -> None:
    require_postgres()
    database = create_database("anyy_dist")
    home = tmp_path / "home"
    assert run(home, "profile", "create", "default").returncode == 0
    started = run(home, "gateway", "start", "--profile", "default", timeout=120)
    assert started.returncode == 0, started.stderr
    second: subprocess.Popen[str] | None = None
    try:
        first = status(home)
        assert first is not None
        assert first.get("service") is None  # SQLite: one Gateway, no service
        assert run(home, "gateway", "stop").returncode == 0
        config = home / "profiles" / "default" / "config.toml"
        config.write_text(config.read_text().replace('\nurl = ""\n', f'\nurl = "{database}"\n', 1))
        started = run(home, "gateway", "start", "--profile", "default", timeout=120)
        assert started.returncode == 0, started.stderr
        second = start(home, "gateway", "run", "--store", database)

        def two_alive() -> dict[str, Any] | None:
            found = status(home)
            return found if found and sum(g["alive"] for g in found.get("service", [])) == 2 else None

        service = eventually(two_alive, 120, "two Gateways listed")
        assert service["gateway_id"] in {g["id"] for g in service["service"]}
        pids = {g["pid"] for g in service["service"]}
        assert second.pid in pids
        assert service["pid"] in pids
        text = run(home, "gateway", "status").stdout
        assert "service: 2 of 2 Gateways alive" in text
    finally:
        if second is not None:
            second.terminate()
            second.communicate(timeout=60)
        run(home, "gateway", "stop")
