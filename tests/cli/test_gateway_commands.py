"""``anyy gateway start|stop|status|run`` against real Gateway processes (SPEC G1)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.cli.live import StartGateway, env_for, run, start_gateway

__all__ = ["start_gateway"]


def alive(pid: int) -> bool:
    """Whether ``pid`` still runs (an exited process nobody reaped yet, a zombie, does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def test_g1_start_prints_the_address_and_status_reports_it(start_gateway: StartGateway, home: Path) -> None:
    live = start_gateway()
    address = live.address
    assert address.host == "127.0.0.1"
    assert (home / "profiles" / "default" / "logs" / "gateway.out").is_file()

    status = run(home, "gateway", "status", "--json")
    assert status.returncode == 0, status.stderr
    record = json.loads(status.stdout)
    assert record["running"] is True
    assert record["profile"] == "default"
    assert record["pid"] == address.pid
    assert record["url"] == address.url
    assert record["version"]

    text = run(home, "gateway", "status")
    assert f"running at {address.url} (pid {address.pid}" in text.stdout


def test_g1_second_start_says_where_the_first_runs(start_gateway: StartGateway, home: Path) -> None:
    live = start_gateway()
    again = run(home, "gateway", "start")
    assert again.returncode == 1
    assert "a Gateway already runs for profile 'default'" in again.stderr
    assert f"{live.address.url} (pid {live.address.pid})" in again.stderr
    assert "anyy gateway stop --profile default" in again.stderr
    assert "Traceback" not in again.stderr
    # The first one is untouched.
    assert run(home, "gateway", "status").returncode == 0


def test_g1_stop_removes_the_address_file(start_gateway: StartGateway, home: Path) -> None:
    live = start_gateway()
    pid = live.address.pid
    address_file = home / "profiles" / "default" / "gateway.json"
    assert address_file.is_file()
    assert oct(address_file.stat().st_mode & 0o777) == oct(0o600)

    stopped = run(home, "gateway", "stop")
    assert stopped.returncode == 0, stopped.stderr
    assert f"stopped (pid {pid}, " in stopped.stdout  # and its address
    assert not address_file.exists()
    assert not alive(pid), f"pid {pid} still runs after `anyy gateway stop`"

    status = run(home, "gateway", "status", "--json")
    assert status.returncode == 1
    assert json.loads(status.stdout) == {"running": False, "profile": "default"}
    again = run(home, "gateway", "stop")
    assert again.returncode == 0
    assert "nothing to stop" in again.stdout


def test_g1_profiles_have_their_own_gateway(start_gateway: StartGateway, home: Path) -> None:
    first = start_gateway("default")
    second = start_gateway("work")
    assert first.address.port != second.address.port
    status = run(home, "gateway", "status", "--json", "--profile", "work")
    assert json.loads(status.stdout)["pid"] == second.address.pid
    env_status = subprocess.run(
        [sys.executable, "-m", "anyy.cli.main", "gateway", "status", "--json"],
        capture_output=True,
        text=True,
        env={**env_for(home), "ANYY_PROFILE": "work"},
        timeout=60,
        check=False,
    )
    assert json.loads(env_status.stdout)["pid"] == second.address.pid


def test_g1_stale_address_file_is_not_a_running_gateway(start_gateway: StartGateway, home: Path) -> None:
    live = start_gateway()
    address_file = home / "profiles" / "default" / "gateway.json"
    saved = address_file.read_bytes()
    assert run(home, "gateway", "stop").returncode == 0
    address_file.write_bytes(saved)  # as if the Gateway had been killed without cleaning up
    assert run(home, "gateway", "status").returncode == 1
    stopped = run(home, "gateway", "stop")
    assert stopped.returncode == 0
    assert "stale" in stopped.stdout
    assert not address_file.exists()
    assert live.profile == "default"


def test_g1_start_needs_an_existing_profile(home: Path) -> None:
    done = run(home, "gateway", "start", "--profile", "nobody")
    assert done.returncode == 1
    assert "profile 'nobody' does not exist" in done.stderr


def test_g1_help_does_not_load_the_gateway_client(home: Path) -> None:
    probe = (
        "import sys\n"
        "from anyy.cli.main import main\n"
        "try:\n"
        "    main(['--help'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "loaded = [m for m in sys.modules if m.startswith(('websockets', 'anyy.gateway', 'anyy.runtime'))]\n"
        "print('loaded:', loaded, file=sys.stderr)\n"
        "sys.exit(1 if loaded else 0)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, env=env_for(home), timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert "gateway" in done.stdout
    assert "chat" in done.stdout


def test_g1_a_port_in_use_is_one_clear_line(home: Path) -> None:
    import socket

    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    try:
        port = taken.getsockname()[1]
        done = run(home, "gateway", "start", "--port", str(port))
    finally:
        taken.close()
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert f"port {port} on 127.0.0.1 is in use" in done.stderr
    assert "--port" in done.stderr


def test_g1_a_port_out_of_range_or_a_bad_host_is_refused_without_traceback(home: Path) -> None:
    out_of_range = run(home, "gateway", "start", "--port", "99999")
    assert out_of_range.returncode == 2
    assert "99999 is not in the range" in out_of_range.stderr
    bad_host = run(home, "gateway", "start", "--host", "300.1.1.1")
    assert bad_host.returncode == 1
    assert "Traceback" not in bad_host.stderr
    assert "cannot listen on '300.1.1.1': it is not an address of this machine" in bad_host.stderr
