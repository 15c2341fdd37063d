"""O2: pairing a device with a single-use code, its scoped credential (an HttpOnly cookie), listed and
revoked (open sockets closed), against a real Gateway process over TLS on a second loopback address."""

from __future__ import annotations

import json
import ssl
import stat
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect as ws_connect
from websockets.typing import Origin

from anyy.gateway.remote import MAX_PAIR_FAILURES, Offers, PairingRefused
from tests.fakes.gateways import GatewayProcess, StartGateway, run

HOST = "127.0.0.2"


def _start(start_gateway: StartGateway) -> GatewayProcess:
    return start_gateway(start_args=("--host", HOST, "--tls"))


def _trust(home: Path) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=home / "profiles" / "default" / "tls" / "ca.pem")


def _offer(home: Path, *args: str) -> dict[str, Any]:
    done = run(home, "devices", "pair", "--json", *args)
    assert done.returncode == 0, done.stderr
    found: dict[str, Any] = json.loads(done.stdout)
    return found


def _rpc(http: httpx.Client, base: str, method: str, params: dict[str, Any] | None = None) -> httpx.Response:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {}})
    return http.post(f"{base}/rpc", content=body, headers={"Origin": base})


def _paired(home: Path, base: str, code: str, name: str) -> httpx.Client:
    http = httpx.Client(verify=_trust(home), trust_env=False)
    reply = http.post(f"{base}/auth/pair", json={"code": code, "name": name}, headers={"Origin": base})
    assert reply.status_code == 200, reply.text
    return http


def test_o2_pair_with_code_use_then_revoke_closes_open_socket(home: Path, start_gateway: StartGateway) -> None:
    gateway = _start(start_gateway)
    base = f"https://{HOST}:{gateway.address.port}"
    offer = _offer(home, "--name", "ada-phone")
    assert offer["urls"] == [base]
    assert offer["link"].startswith(f"{base}/#pair=")
    assert len(offer["ca_fingerprint"]) == 64
    http = httpx.Client(verify=_trust(home), trust_env=False)
    reply = http.post(f"{base}/auth/pair", json={"code": offer["code"].lower()}, headers={"Origin": base})
    assert reply.status_code == 200, reply.text
    cookie = reply.headers["set-cookie"].lower()
    assert "httponly" in cookie
    assert "secure" in cookie
    assert "samesite=strict" in cookie
    assert reply.json()["device"]["name"] == "ada-phone"
    assert offer["code"] not in reply.text  # the credential is only in the cookie
    # The device works without the profile's token, over HTTPS and WSS.
    assert "result" in _rpc(http, base, "session.list").json()
    credential = http.cookies["anyy_device"]
    with ws_connect(
        f"wss://{HOST}:{gateway.address.port}/ws",
        ssl=_trust(home),
        origin=Origin(base),
        additional_headers={"Cookie": f"anyy_device={credential}"},
        proxy=None,
    ) as ws:
        ws.send(json.dumps({"jsonrpc": "2.0", "id": 3, "method": "gateway.status", "params": {}}))
        assert json.loads(ws.recv(timeout=30))["id"] == 3
        listed = json.loads(run(home, "devices", "list", "--json").stdout)["devices"]
        assert [(d["name"], d["scope"], d["last_seen"] is not None) for d in listed] == [
            ("ada-phone", "operator", True)
        ]
        # Secrets at rest: the profile keeps the credential's hash only, readable by its owner only.
        stored = home / "profiles" / "default" / "devices.json"
        assert credential.split(".", 1)[1] not in stored.read_text()
        assert stat.S_IMODE(stored.stat().st_mode) == 0o600
        # Revoked: the open socket is closed now, the next request refused.
        revoked = run(home, "devices", "revoke", "ada-phone")
        assert revoked.returncode == 0, revoked.stderr
        with pytest.raises(ConnectionClosed):
            ws.recv(timeout=30)
        assert ws.close_code == 4401
    assert _rpc(http, base, "session.list").status_code == 401
    listed = json.loads(run(home, "devices", "list", "--json").stdout)["devices"]
    assert listed[0]["revoked_at"] is not None
    log = (home / "profiles" / "default" / "logs").glob("*")
    text = "".join(p.read_text(errors="replace") for p in log if p.is_file())
    assert "ada-phone" in text
    assert "paired" in text
    assert "revoked" in text
    assert credential.split(".", 1)[1] not in text


def test_o2_reader_cannot_send_or_stop_and_no_device_opens_the_token(home: Path, start_gateway: StartGateway) -> None:
    gateway = _start(start_gateway)
    base = f"https://{HOST}:{gateway.address.port}"
    reader = _paired(home, base, _offer(home, "--scope", "reader")["code"], "watch")
    assert "result" in _rpc(reader, base, "session.list").json()
    for method, params in (
        ("session.send", {"text": "hello"}),
        ("session.stop", {"session_id": "x"}),
        ("session.create", {}),
        ("dashboard.code", {}),
        ("devices.pair", {}),
    ):
        refused = _rpc(reader, base, method, params)
        assert refused.status_code == 403, method
        assert "scope" in refused.json()["error"]["message"]
    operator = _paired(home, base, _offer(home)["code"], "laptop")
    assert _rpc(operator, base, "dashboard.code").status_code == 403  # the profile's token is never a device's
    assert _rpc(operator, base, "devices.pair").status_code == 403
    # A page of another site sending the cookie gets nothing (cross-site request forgery).
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "session.list", "params": {}})
    forged = operator.post(f"{base}/rpc", content=body, headers={"Origin": "https://evil.example"})
    assert forged.status_code == 401


def test_o2_reused_secret_refused_and_credential_outlives_restart(home: Path, start_gateway: StartGateway) -> None:
    gateway = _start(start_gateway)
    base = f"https://{HOST}:{gateway.address.port}"
    offer = _offer(home)
    secret = offer["link"].split("#pair=", 1)[1]
    device = _paired(home, base, secret, "tablet")
    again = httpx.post(f"{base}/auth/pair", json={"code": secret}, verify=_trust(home), trust_env=False)
    assert again.status_code == 401  # single use
    assert run(home, "gateway", "stop").returncode == 0
    restarted = run(home, "gateway", "start", "--host", HOST, "--tls")
    assert restarted.returncode == 0, restarted.stderr
    base = f"https://{HOST}:{gateway.address.port}"
    assert "result" in _rpc(device, base, "session.list").json()


def test_o4_wrong_codes_close_pairing(home: Path, start_gateway: StartGateway) -> None:
    gateway = _start(start_gateway)
    base = f"https://{HOST}:{gateway.address.port}"
    offer = _offer(home)
    with httpx.Client(verify=_trust(home), trust_env=False) as http:
        statuses = [
            http.post(f"{base}/auth/pair", json={"code": f"WRONG-{i:05d}"}).status_code
            for i in range(MAX_PAIR_FAILURES)
        ]
        assert statuses == [401] * (MAX_PAIR_FAILURES - 1) + [429]
        assert http.post(f"{base}/auth/pair", json={"code": offer["code"]}).status_code == 401  # withdrawn


def test_o2_expired_offer_refused() -> None:
    now = [1000.0]
    offers = Offers(clock=lambda: now[0])
    secret, code = offers.open("operator", "phone")
    now[0] += 599
    assert offers.redeem(code).name == "phone"
    secret, code = offers.open("reader", "phone")
    now[0] += 601
    with pytest.raises(PairingRefused, match="expired"):
        offers.redeem(secret)
    with pytest.raises(PairingRefused):
        offers.redeem(code)  # spent with its secret
