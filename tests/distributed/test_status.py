"""P3: `anyy gateway run --store URL` starts one more Gateway of the service, beside the profile's own;
`anyy gateway status` lists the service's Gateways and the sessions each holds; `anyy gateway stop` stops
the profile's Gateways on this host, `--all` / `--id` the service's others."""

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


def test_p3_gateway_run_store_adds_a_gateway_status_lists_the_service_and_stop_stops_this_profiles(
    tmp_path: Path,
) -> None:
    """`gateway run --store` adds a Gateway beside the profile's own, and `gateway status` lists both.
    `anyy gateway stop` stops every Gateway the profile started on this host and names each; Gateways of
    the service elsewhere (another profile here stands for another host) stop only when asked with --all
    (or --id), at their next heartbeat, and the command says which stopped."""
    require_postgres()
    database = create_database("anyy_dist")
    home, other = tmp_path / "home", tmp_path / "other"
    for each in (home, other):
        assert run(each, "profile", "create", "default").returncode == 0
    started = run(home, "gateway", "start", "--profile", "default", timeout=120)
    assert started.returncode == 0, started.stderr
    processes: list[subprocess.Popen[str]] = []
    try:
        first = status(home)
        assert first is not None
        assert first.get("service") is None  # SQLite: one Gateway, no service
        assert run(home, "gateway", "stop").returncode == 0
        config = home / "profiles" / "default" / "config.toml"
        config.write_text(config.read_text().replace('\nurl = ""\n', f'\nurl = "{database}"\n', 1))
        started = run(home, "gateway", "start", "--profile", "default", timeout=120)
        assert started.returncode == 0, started.stderr
        extra = start(home, "gateway", "run", "--store", database)
        elsewhere = start(other, "gateway", "run", "--store", database)
        processes += [extra, elsewhere]

        def three_alive() -> dict[str, Any] | None:
            found = status(home)
            return found if found and sum(g["alive"] for g in found.get("service", [])) == 3 else None

        service = eventually(three_alive, 120, "three Gateways listed")
        assert service["gateway_id"] in {g["id"] for g in service["service"]}
        assert {extra.pid, elsewhere.pid, service["pid"]} == {g["pid"] for g in service["service"]}
        assert "service: 3 of 3 Gateways alive" in run(home, "gateway", "status").stdout
        stop_this_profile_then_all(home, service["pid"], extra, elsewhere)
    finally:
        for process in processes:
            if process.poll() is None:
                process.terminate()
                process.communicate(timeout=60)
        run(home, "gateway", "stop")


def stop_this_profile_then_all(
    home: Path, primary: int, extra: subprocess.Popen[str], elsewhere: subprocess.Popen[str]
) -> None:
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
