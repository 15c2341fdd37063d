"""O1: a Gateway beyond loopback speaks TLS only; real handshakes against a real Gateway process, trusting the
profile's own CA (or the user's, made with trustme), over HTTP and WebSocket."""

from __future__ import annotations

import json
import ssl
from pathlib import Path

import httpx
import pytest
import trustme
from websockets.sync.client import connect as ws_connect
from websockets.typing import Origin

from anyy.profiles.gateway_address import read_address
from anyy.profiles.profile import get_profile
from anyy.profiles.tls import ca_fingerprint
from tests.fakes.gateways import StartGateway, run

HOST = "127.0.0.2"  # a second address of loopback: the Gateway binds it as it would bind a LAN address


def _ca_context(home: Path, profile: str = "default") -> ssl.SSLContext:
    return ssl.create_default_context(cafile=home / "profiles" / profile / "tls" / "ca.pem")


@pytest.mark.parametrize("host", ["0.0.0.0", "192.0.2.10", "::"])
def test_o1_bind_beyond_loopback_without_tls_refused(home: Path, host: str) -> None:
    assert run(home, "profile", "create", "default").returncode == 0
    done = run(home, "gateway", "start", "--host", host)
    assert done.returncode != 0
    assert "without TLS" in done.stderr
    assert "--tls" in done.stderr
    assert "Traceback" not in done.stderr
    assert read_address(get_profile(home, "default")) is None


def test_o1_gateway_process_itself_refuses_plain_beyond_loopback(home: Path) -> None:
    """The check is the Gateway's, not only the CLI's: its own entry point refuses too."""
    import subprocess
    import sys

    from tests.fakes.gateways import env_for

    assert run(home, "profile", "create", "default").returncode == 0
    done = subprocess.run(
        [sys.executable, "-m", "anyy.gateway", "--host", "0.0.0.0"],
        capture_output=True,
        text=True,
        env=env_for(home),
        timeout=60,
        check=False,
    )
    assert done.returncode == 1
    assert "without TLS" in done.stderr
    assert "Traceback" not in done.stderr


def test_o1_profile_ca_https_and_wss_with_real_handshake(home: Path, start_gateway: StartGateway) -> None:
    gateway = start_gateway(start_args=("--host", HOST, "--tls"))
    address = gateway.address
    assert address.url.startswith(f"https://{HOST}:")
    trust = _ca_context(home)
    base = f"https://{HOST}:{address.port}"
    with httpx.Client(verify=trust, trust_env=False) as http:
        page = http.get(f"{base}/")
        assert page.status_code == 200
        assert page.headers["strict-transport-security"].startswith("max-age=")
        assert "default-src 'none'" in page.headers["content-security-policy"]  # the Dashboard's CSP kept
        status = http.post(
            f"{base}/rpc",
            content=json.dumps({"jsonrpc": "2.0", "id": 1, "method": "gateway.status", "params": {}}),
            headers={"Authorization": f"Bearer {address.token}"},
        )
        assert status.status_code == 200
        assert "result" in status.json()
        assert http.post(f"{base}/rpc", content=b"{}").status_code == 401
    # Plain HTTP on the same port gets no answer it could use.
    with httpx.Client(trust_env=False) as plain, pytest.raises(httpx.HTTPError):
        plain.get(f"http://{HOST}:{address.port}/health")
    # A client that does not trust the profile's CA refuses the handshake.
    with httpx.Client(trust_env=False) as untrusting, pytest.raises(httpx.ConnectError):
        untrusting.get(f"{base}/health")
    # WebSocket over TLS: the page's own https origin is let in; http and foreign origins are not.
    ws_url = f"wss://{HOST}:{address.port}/ws"
    headers = {"Authorization": f"Bearer {address.token}"}
    with ws_connect(ws_url, ssl=trust, additional_headers=headers, origin=Origin(base), proxy=None) as ws:
        ws.send(json.dumps({"jsonrpc": "2.0", "id": 7, "method": "gateway.status", "params": {}}))
        assert json.loads(ws.recv(timeout=30))["id"] == 7
    for origin in (f"http://{HOST}:{address.port}", "https://evil.example"):
        with ws_connect(ws_url, ssl=trust, additional_headers=headers, origin=Origin(origin), proxy=None) as ws:
            with pytest.raises(Exception):  # noqa: B017, PT011 - closed with 4403 whatever the library raises
                ws.recv(timeout=30)
            assert ws.close_code == 4403
    # The CLI's own clients pin the certificate the Gateway published.
    status_cli = run(home, "gateway", "status", "--json")
    assert status_cli.returncode == 0, status_cli.stderr
    assert json.loads(status_cli.stdout)["url"].startswith("https://")
    fingerprint = ca_fingerprint((home / "profiles" / "default" / "tls" / "ca.pem").read_bytes())
    assert len(fingerprint) == 64


def test_o1_users_own_certificate(home: Path, tmp_path: Path, start_gateway: StartGateway) -> None:
    ca = trustme.CA()
    leaf = ca.issue_cert(HOST)
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    leaf.private_key_pem.write_to_path(str(key))
    leaf.cert_chain_pems[0].write_to_path(str(cert))
    gateway = start_gateway(start_args=("--host", HOST, "--tls-cert", str(cert), "--tls-key", str(key)))
    trust = ssl.create_default_context()
    ca.configure_trust(trust)
    with httpx.Client(verify=trust, trust_env=False) as http:
        assert http.get(f"https://{HOST}:{gateway.address.port}/health").json() == {"ok": True}
    assert not (home / "profiles" / "default" / "tls" / "ca.pem").exists()  # no CA made when the user brings one


def test_o1_bad_certificate_files_said_clearly(home: Path, tmp_path: Path) -> None:
    assert run(home, "profile", "create", "default").returncode == 0
    junk = tmp_path / "junk.pem"
    junk.write_text("not a certificate")
    done = run(home, "gateway", "start", "--host", HOST, "--tls-cert", str(junk), "--tls-key", str(junk))
    assert done.returncode != 0
    assert "not a certificate" in done.stderr
    assert "Traceback" not in done.stderr
    half = run(home, "gateway", "start", "--host", HOST, "--tls-cert", str(junk))
    assert half.returncode != 0
    assert "--tls-key" in half.stderr


def test_o1_loopback_stays_plain_by_default(home: Path, start_gateway: StartGateway) -> None:
    gateway = start_gateway()
    assert gateway.address.url.startswith("http://127.0.0.1:")
    with httpx.Client(trust_env=False) as http:
        reply = http.get(f"{gateway.address.url}/")
    assert reply.status_code == 200
    assert "strict-transport-security" not in reply.headers
