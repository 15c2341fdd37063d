"""G1: every request carries the profile's access token, over HTTP and over the WebSocket; the Gateway
listens on loopback by default and publishes its address and token in the profile."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from websockets.exceptions import ConnectionClosed, InvalidStatus

from anyy.gateway.methods import TABLE
from anyy.profiles import create_profile
from commons import jsonrpc
from tests.gateway.live import TIMEOUT, LiveGateway, WsClient, http_post

METHODS = sorted(TABLE.methods)
BAD_TOKENS = [None, "", "wrong-token", "test-token-" + "x" * 19, "Bearer"]


def test_g1_every_method_refuses_a_missing_or_wrong_token_over_http(gateway: LiveGateway) -> None:
    for method in METHODS:
        for token in BAD_TOKENS:
            status, reply = http_post(gateway.port, jsonrpc.request(method, {}, 1), token)
            assert status == 401, (method, token)
            assert reply["error"]["code"] == jsonrpc.UNAUTHORIZED
            assert "access token" in reply["error"]["message"]
            assert "result" not in reply
    # Nothing above ran; the right token works.
    assert gateway.call("session.list")["items"] == []
    status, reply = gateway.http(jsonrpc.request("gateway.status", {}, 1))
    assert status == 200
    assert reply["result"]["profile"] == "default"


def _refused(client: WsClient) -> None:
    first = client.receive()
    assert first["error"]["code"] == jsonrpc.UNAUTHORIZED
    assert first["id"] is None
    with pytest.raises(ConnectionClosed):
        client.receive()
    assert client.conn.close_code == 4401


@pytest.mark.parametrize("token", BAD_TOKENS)
def test_g1_every_method_refuses_a_missing_or_wrong_token_over_websocket(gateway: LiveGateway, token: str) -> None:
    for method in METHODS:
        client = WsClient(gateway.ws_url, token or "")
        try:
            with contextlib.suppress(ConnectionClosed):  # closed before the request could even be sent
                client.request(method, {})
            _refused(client)
        finally:
            client.close()
    assert gateway.call("session.list")["items"] == []  # nothing ran


def test_g1_the_token_may_come_in_the_query_string_of_the_websocket(gateway: LiveGateway) -> None:
    client = WsClient(f"{gateway.ws_url}?token={gateway.token}", "")
    with client:
        assert client.call("gateway.status")["profile"] == "default"
    bad = WsClient(f"{gateway.ws_url}?token=nope", "")
    with bad:
        _refused(bad)


def test_g1_only_rpc_and_ws_paths_exist(gateway: LiveGateway) -> None:
    with pytest.raises(InvalidStatus):
        WsClient(f"ws://127.0.0.1:{gateway.port}/other", gateway.token)


def test_g1_the_gateway_process_binds_loopback_and_publishes_its_address_and_token(tmp_path: Path) -> None:
    """The real process (python -m anyy.gateway) with its defaults: 127.0.0.1, gateway.json 0600."""
    home = tmp_path / "home"
    profile = create_profile(home, "work")
    read_fd, write_fd = os.pipe()
    env = {**os.environ, "ANYY_HOME": str(home)}
    env.pop("ANYY_PROFILE", None)
    process = subprocess.Popen(
        [sys.executable, "-m", "anyy.gateway", "--profile", "work", "--ready-fd", str(write_fd)],
        env=env,
        pass_fds=(write_fd,),
        cwd=tmp_path,
    )
    os.close(write_fd)
    try:
        with os.fdopen(read_fd, "rb") as ready:
            line = ready.readline()
        assert line, "the Gateway exited before it was ready"
        address = json.loads(line)
        assert address["host"] == "127.0.0.1"
        published = profile.path / "gateway.json"
        assert stat.S_IMODE(published.stat().st_mode) == 0o600
        on_disk = json.loads(published.read_text())
        assert on_disk["token"] == address["token"]
        assert on_disk["port"] == address["port"]
        status, _ = http_post(address["port"], jsonrpc.request("gateway.status", {}, 1), None)
        assert status == 401
        status, reply = http_post(address["port"], jsonrpc.request("gateway.status", {}, 1), address["token"])
        assert status == 200
        assert reply["result"]["profile"] == "work"
        assert reply["result"]["pid"] == process.pid
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(TIMEOUT) == 0
    assert not (profile.path / "gateway.json").exists()
