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


def test_p3_gateway_stop_stops_this_profiles_gateways_and_all_asks_the_others(tmp_path: Path) -> None:
    """`anyy gateway stop` stops every Gateway the profile started on this host and names each; Gateways of
    the service elsewhere (another profile here stands for another host) stop only when asked with --all
    (or --id), at their next heartbeat, and the command says which stopped."""
    require_postgres()
    database = create_database("anyy_dist")
    home, other = tmp_path / "home", tmp_path / "other"
    for each in (home, other):
        assert run(each, "profile", "create", "default").returncode == 0
    config = home / "profiles" / "default" / "config.toml"
    config.write_text(config.read_text().replace('\nurl = ""\n', f'\nurl = "{database}"\n', 1))
    started = run(home, "gateway", "start", timeout=120)
    assert started.returncode == 0, started.stderr
    extra = start(home, "gateway", "run", "--store", database)
    elsewhere = start(other, "gateway", "run", "--store", database)
    try:

        def three_alive() -> dict[str, Any] | None:
            found = status(home)
            return found if found and sum(g["alive"] for g in found.get("service", [])) == 3 else None

        primary = eventually(three_alive, 120, "three Gateways listed")["pid"]
        stopped = run(home, "gateway", "stop", timeout=120)
        assert stopped.returncode == 0, stopped.stderr
        extra.communicate(timeout=60)  # it exited
        assert f"pid {primary}," in stopped.stdout, stopped.stdout
        assert f"pid {extra.pid}," in stopped.stdout, stopped.stdout
        assert elsewhere.poll() is None  # another host's Gateway is not this profile's to stop
        unknown = run(home, "gateway", "stop", "--id", "gw-nobody")
        assert unknown.returncode != 0
        assert "anyy gateway status" in unknown.stderr, unknown.stderr
        everyone = run(home, "gateway", "stop", "--all", timeout=120)
        assert everyone.returncode == 0, everyone.stderr
        elsewhere.communicate(timeout=60)  # it stopped at its next heartbeat
        assert f"pid {elsewhere.pid} on" in everyone.stdout, everyone.stdout
        assert "stopped" in everyone.stdout
    finally:
        for process in (extra, elsewhere):
            if process.poll() is None:
                process.terminate()
                process.communicate(timeout=60)
        run(home, "gateway", "stop")
