"""Issue 17, found by black-box tests of the Gateway: D2 (idle connections cannot freeze it; its log is
bounded), D5 (no token in its log), D6 (deeply nested JSON gets a parse error on both transports), D7
(memory bounded for clients: a chunked body past the limit is refused as it comes, pending calls per
connection are capped with a "busy" answer). Real Gateway processes where the operating system matters
(file descriptors, memory, the log file); nothing sleeps to synchronise: waits are on sockets and events."""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from websockets.sync.client import connect

from anyy.domain.model_io import TextDelta
from anyy.profiles import create_profile
from anyy.providers.gates import Gate
from commons import jsonrpc
from tests.gateway.live import LiveGateway, wait_gate
from tests.killtest.gateway_process import GatewayProcess

DEADLINE = 30.0


@pytest.fixture
def live(tmp_path: Path) -> Iterator[LiveGateway]:
    with LiveGateway(tmp_path) as gateway:
        yield gateway


def _process(tmp_path: Path, config: str = "", fd_limit: int | None = None) -> GatewayProcess:
    home = tmp_path / "home"
    profile = create_profile(home, "hard")
    if config:
        profile.config_path.write_text(profile.config_path.read_text() + "\n" + config)
    (tmp_path / "work").mkdir(exist_ok=True)
    return GatewayProcess(home, "hard", cwd=tmp_path / "work", log=tmp_path / "stderr.log", fd_limit=fd_limit)


@contextlib.contextmanager
def running(gateway: GatewayProcess) -> Iterator[GatewayProcess]:
    gateway.start()
    try:
        yield gateway
    finally:
        gateway.stop()


def _logs(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / "home").rglob("logs/gateway.log*"))


def _log_of(tmp_path: Path) -> str:
    return "".join(path.read_text() for path in _logs(tmp_path))


def _peak_rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM in /proc")


# -- D6 ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("depth", [70, 1_000, 100_000])
def test_d6_deeply_nested_json_gets_a_parse_error_on_both_transports(live: LiveGateway, depth: int) -> None:
    frame = (
        '{"jsonrpc": "2.0", "id": 7, "method": "gateway.status", "params": {"x": ' + "[" * depth + "]" * depth + "}}"
    )
    status, reply = live.http(frame, token=live.token)
    assert status == 200
    assert reply["error"]["code"] == jsonrpc.PARSE_ERROR
    assert "nested too deeply" in reply["error"]["message"]
    with live.ws() as ws:
        ws.send_raw(frame)
        answer = ws.receive()
        assert answer["error"]["code"] == jsonrpc.PARSE_ERROR
        assert ws.call("gateway.status")["profile"] == "default"  # the connection is still usable


# -- D7 ------------------------------------------------------------------------------------------------
def test_d7_pending_calls_on_one_connection_are_capped_with_busy(live: LiveGateway) -> None:
    session_id = live.call("session.create", {})["id"]
    gate = Gate("held")
    live.model.enqueue([TextDelta(text="Work"), gate, TextDelta(text="ed.")])
    sent = live.call("session.send", {"session_id": session_id, "text": "hold"})
    wait_gate(gate)
    with live.ws() as ws:
        ids = [ws.request("session.wait", {"submission_id": sent["id"], "timeout": 60}) for _ in range(300)]
        busy = [ws.reply_to(id) for id in ids[256:]]  # answered at once, while the 256 before them wait
        assert {reply["error"]["code"] for reply in busy} == {jsonrpc.BUSY}
        assert "too many calls pending on this connection" in busy[0]["error"]["message"]
        gate.open()
        done = [ws.reply_to(id) for id in ids[:256]]
        assert {reply["result"]["state"] for reply in done} == {"completed"}
        assert ws.call("gateway.status")["profile"] == "default"


def test_d7_a_chunked_body_past_the_limit_is_refused_as_it_comes(tmp_path: Path) -> None:
    with running(_process(tmp_path)) as gateway:
        before = _peak_rss_kib(gateway.pid)
        conn = http.client.HTTPConnection(gateway.host, gateway.port, timeout=DEADLINE)
        conn.putrequest("POST", "/rpc")
        conn.putheader("Authorization", f"Bearer {gateway.token}")
        conn.putheader("Transfer-Encoding", "chunked")
        conn.endheaders()
        chunk = b"x" * (1 << 20)
        sent = 0
        with contextlib.suppress(ConnectionError):  # the Gateway may close while the rest is on its way
            for _ in range(100):  # 100 MiB, announced nowhere
                conn.send(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                sent += 1
            conn.send(b"0\r\n\r\n")
        reply = conn.getresponse()
        assert reply.status == 413
        assert json.loads(reply.read())["error"]["code"] == jsonrpc.INVALID_REQUEST
        conn.close()
        grown_mib = (_peak_rss_kib(gateway.pid) - before) / 1024
        print(f"chunked 100 MiB body: {sent} MiB sent before the refusal, peak memory +{grown_mib:.1f} MiB")
        assert grown_mib < 40  # before: the whole body was read first (+68-103 MiB)
        assert gateway.client().call("gateway.status")["profile"] == "hard"


# -- D5 ------------------------------------------------------------------------------------------------
def test_d5_the_token_never_reaches_the_log(tmp_path: Path) -> None:
    gateway = _process(tmp_path)
    with running(gateway):
        url = f"ws://{gateway.host}:{gateway.port}/ws?token={gateway.token}"
        with connect(url, open_timeout=DEADLINE) as ws:  # as the Dashboard does
            ws.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "gateway.status"}))
            assert json.loads(ws.recv(DEADLINE))["result"]["profile"] == "hard"
        with connect(f"ws://{gateway.host}:{gateway.port}/ws?token=wrong-{gateway.token[:8]}", open_timeout=DEADLINE):
            pass
    log = _log_of(tmp_path)
    assert "WebSocket /ws?token=[redacted]" in log  # the line is there, without its secret
    assert gateway.token not in log
    assert gateway.token[:8] not in log


# -- D2 ------------------------------------------------------------------------------------------------
def _idle_connections(host: str, port: int, count: int) -> list[socket.socket]:
    sockets = []
    for _ in range(count):
        sock = socket.create_connection((host, port), timeout=DEADLINE)
        sockets.append(sock)
    return sockets


def _closed_by_peer(sock: socket.socket, deadline: float) -> bool:
    sock.settimeout(max(0.0, deadline - time.monotonic()))
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


def test_d2_idle_connections_cannot_freeze_the_gateway(tmp_path: Path) -> None:
    """1,030 connections that never send a byte, against a Gateway limited to 1,024 open files (as in the
    black-box run): it sheds the oldest idle ones to make room, keeps answering clients with the token,
    closes what stays idle past the header timeout, and its log stays small."""
    gateway = _process(tmp_path, "[gateway]\nheader_timeout = 3.0\n", fd_limit=1024)
    with running(gateway):
        idle = _idle_connections(gateway.host, gateway.port, 1030)
        try:
            began = time.monotonic()
            status = gateway.client(timeout=DEADLINE).call("gateway.status")
            answered = time.monotonic() - began
            assert status["profile"] == "hard"
            deadline = time.monotonic() + DEADLINE
            still_open = [sock for sock in idle if not _closed_by_peer(sock, deadline)]
            assert still_open == []  # every idle connection was shed or timed out
            assert gateway.client().call("gateway.status")["profile"] == "hard"
        finally:
            for sock in idle:
                sock.close()
        print(f"1,030 idle connections under ulimit -n 1024: a client answered in {answered * 1000:.0f} ms")
    log = _log_of(tmp_path)
    size = sum(p.stat().st_size for p in _logs(tmp_path))
    assert size < 256 * 1024, f"the log grew to {size} bytes"
    assert "socket.accept() out of system resource" not in log
    lines: list[dict[str, Any]] = [json.loads(line) for line in log.splitlines()]
    shed = [line for line in lines if "connection cap" in line["message"] or "sent no request" in line["message"]]
    assert 0 < len(shed) <= 80  # rate-limited: at most 20 a kind per 10 s, then one summary


def test_d2_the_log_rotates_and_is_rate_limited() -> None:
    """The log handler's own bounds: a flood of one message is cut to a burst plus a summary."""
    import logging

    from anyy.gateway.logs import RateLimit

    now = [0.0]
    limit = RateLimit(burst=3, window=10.0, clock=lambda: now[0])
    record = logging.LogRecord("asyncio", logging.ERROR, __file__, 1, "accept failed", None, None)
    kept = [limit.filter(record) for _ in range(1000)]
    assert kept.count(True) == 3
    now[0] = 10.0
    later = logging.LogRecord("asyncio", logging.ERROR, __file__, 1, "accept failed", None, None)
    assert limit.filter(later)
    assert later.getMessage() == "accept failed (and 997 more like it in the previous 10 s)"
    assert os.environ.get("ANYY_HOME") != ""  # (no global state touched)
