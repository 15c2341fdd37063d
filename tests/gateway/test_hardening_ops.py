"""Issue 17, the operational letters: D2's message when a Gateway runs but does not answer, D9 (the small
ones: a full disk at start, client mistakes in the log, the WAL after a full disk). Real processes, real
sockets; nothing sleeps to synchronise."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import pytest

from anyy.profiles import create_profile
from anyy.profiles.gateway_address import Address, write_address
from tests.cli.live import run
from tests.fakes.disks import fill, small_disk
from tests.killtest.gateway_process import GatewayProcess, RpcFailure


def _publish(home: Path, port: int) -> None:
    """A gateway.json naming this (live) process and ``port``, as a Gateway writes it."""
    profile = create_profile(home, "default")
    address = Address(profile="default", pid=os.getpid(), host="127.0.0.1", port=port, token="t" * 43, started_at=0)
    write_address(profile, address)


def test_d2_the_cli_says_the_gateway_runs_but_does_not_answer(tmp_path: Path) -> None:
    """A socket that accepts (the kernel completes the connection) but whose owner never answers: the CLI
    says the Gateway is running but not answering, and what to do, not that none runs."""
    home = tmp_path / "home"
    with socket.create_server(("127.0.0.1", 0), backlog=8) as stuck:  # listens, never accepts
        _publish(home, stuck.getsockname()[1])
        done = run(home, "chat", "hello")
    assert done.returncode == 1, done.stderr
    assert "is running (pid" in done.stderr, done.stderr
    assert "but not answering" in done.stderr
    assert "no Gateway is running" not in done.stderr
    assert "anyy gateway stop" in done.stderr
    assert "Traceback" not in done.stderr


def test_d2_a_refused_connection_still_says_no_gateway_runs(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with socket.create_server(("127.0.0.1", 0)) as gone:
        port = gone.getsockname()[1]
    _publish(home, port)  # nothing listens there any more
    done = run(home, "chat", "hello")
    assert done.returncode == 1
    assert "no Gateway is running for profile default" in done.stderr, done.stderr


def _gateway(tmp_path: Path) -> GatewayProcess:
    home = tmp_path / "gw-home"
    create_profile(home, "ops")
    (tmp_path / "work").mkdir(exist_ok=True)
    return GatewayProcess(home, "ops", cwd=tmp_path / "work", log=tmp_path / "stderr.log")


def test_d9_client_mistakes_are_logged_at_info_in_one_line(tmp_path: Path) -> None:
    gateway = _gateway(tmp_path)
    gateway.start()
    try:
        client = gateway.client()
        session_id = client.call("session.create")["id"]
        mistakes = [
            ("session.get", {"session_id": "ses_nope"}),
            ("session.send", {"session_id": "ses_nope", "text": "hello"}),
            ("session.send", {"session_id": session_id, "bogus": 1}),
            ("session.queue.cancel", {"submission_id": "sub_nope"}),
            ("session.navigate", {"session_id": session_id, "entry_id": 12345}),  # through the session's actor
            ("no.such.method", {}),
        ]
        for method, params in mistakes:
            with pytest.raises(RpcFailure):
                client.call(method, **params)
        client.close()
    finally:
        gateway.stop()
    lines = [json.loads(line) for line in (gateway.home / "profiles/ops/logs/gateway.log").read_text().splitlines()]
    assert not [line for line in lines if line["level"] != "info"], "a client's mistake was logged above INFO"
    assert not [line for line in lines if "exception" in line], "a client's mistake was logged with a traceback"
    refused = [line["message"] for line in lines if " refused (" in line["message"]]
    assert [message.split(" ")[0] for message in refused] == [method for method, _ in mistakes]
    assert all("\n" not in message for message in refused)


def test_d9_starting_on_a_full_disk_says_the_disk_is_full(tmp_path: Path) -> None:
    with small_disk(tmp_path / "disk", "4m") as disk:
        home = disk / "home"
        assert run(home, "profile", "create", "default").returncode == 0
        fill(disk / "filler")
        refused = run(home, "gateway", "start")
        assert refused.returncode == 1
        assert "the disk holding profile default" in refused.stderr, refused.stderr
        assert "is full" in refused.stderr
        assert "Free some disk space" in refused.stderr
        assert "no output" not in refused.stderr
        (disk / "filler").unlink()  # space comes back: it starts
        started = run(home, "gateway", "start")
        assert started.returncode == 0, started.stderr
        assert run(home, "gateway", "stop").returncode == 0
