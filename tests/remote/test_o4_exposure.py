"""O4: how the Gateway is exposed shows in `gateway status` and `anyy doctor`; authentication failures from
one address are limited."""

from __future__ import annotations

import json
import ssl
from pathlib import Path

import httpx

from anyy.gateway.remote import MAX_AUTH_FAILURES, FailureLimit
from tests.fakes.gateways import StartGateway, run

HOST = "127.0.0.2"


def test_o4_status_and_doctor_show_exposure(home: Path, start_gateway: StartGateway) -> None:
    gateway = start_gateway(start_args=("--host", HOST, "--tls"))
    offer = json.loads(run(home, "devices", "pair", "--json", "--name", "phone").stdout)
    base = f"https://{HOST}:{gateway.address.port}"
    trust = ssl.create_default_context(cafile=home / "profiles" / "default" / "tls" / "ca.pem")
    with httpx.Client(verify=trust, trust_env=False) as http:
        assert http.post(f"{base}/auth/pair", json={"code": offer["code"]}).status_code == 200
        http.get(f"{base}/push/key")
    with gateway.client() as client:
        exposure = client.call("gateway.status", {})["exposure"]
    assert exposure["host"] == HOST
    assert exposure["tls"] == "profile CA"
    assert exposure["ca_fingerprint"] == offer["ca_fingerprint"]
    assert exposure["devices"] == 1
    assert exposure["last_device_use"] is not None
    assert exposure["pairing_open"] == 0  # the one offer was used
    doctor = run(home, "doctor")
    assert f"listens on {HOST} (loopback" in doctor.stdout
    assert "1 paired" in doctor.stdout
    as_json = json.loads(run(home, "doctor", "--json").stdout)
    assert as_json["exposure"]["devices"] == 1


def test_o4_authentication_failures_limited_per_address(home: Path, start_gateway: StartGateway) -> None:
    gateway = start_gateway(start_args=("--host", HOST, "--tls"))
    base = f"https://{HOST}:{gateway.address.port}"
    trust = ssl.create_default_context(cafile=home / "profiles" / "default" / "tls" / "ca.pem")
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "gateway.status", "params": {}})
    with httpx.Client(verify=trust, trust_env=False) as http:
        codes = [
            http.post(f"{base}/rpc", content=body, headers={"Authorization": f"Bearer wrong{i}"}).status_code
            for i in range(MAX_AUTH_FAILURES + 1)
        ]
        assert codes == [401] * MAX_AUTH_FAILURES + [429]
        right = {"Authorization": f"Bearer {gateway.address.token}"}
        assert http.post(f"{base}/rpc", content=body, headers=right).status_code == 429  # even the right one


def test_o4_failure_window_ends() -> None:
    now = [0.0]
    limit = FailureLimit(clock=lambda: now[0])
    for _ in range(MAX_AUTH_FAILURES):
        limit.failed("10.0.0.9")
    assert limit.blocked("10.0.0.9")
    assert not limit.blocked("10.0.0.8")
    now[0] += 601
    assert not limit.blocked("10.0.0.9")
