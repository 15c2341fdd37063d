"""O1/O2 in a real browser: Chromium opens the Dashboard over HTTPS and WSS on 127.0.0.2 from a TLS
Gateway process, pairs with the QR code's link and with the short code, and loses access when revoked.

Chromium is told to trust the Gateway's key (``--ignore-certificate-errors-spki-list``, its SPKI hash),
the headless stand-in for installing the profile's CA on a phone: any other certificate is still refused."""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from playwright.sync_api import Browser, Dialog, expect, sync_playwright

from tests.dashboard.conftest import CHROMIUM, CHROMIUM_FLAGS, _ensure_chromium
from tests.fakes.gateways import StartGateway, run

HOST = "127.0.0.2"


def _spki(cert_pem: bytes) -> str:
    cert = x509.load_pem_x509_certificate(cert_pem)
    der = cert.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return base64.b64encode(hashlib.sha256(der).digest()).decode()


@pytest.fixture
def tls_browser(home: Path, start_gateway: StartGateway) -> Iterator[tuple[Browser, str]]:
    gateway = start_gateway(start_args=("--host", HOST, "--tls"))
    pin = _spki((home / "profiles" / "default" / "tls" / "server.pem").read_bytes())
    _ensure_chromium()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=[*CHROMIUM_FLAGS, f"--ignore-certificate-errors-spki-list={pin}"]
        )
        try:
            yield browser, f"https://{HOST}:{gateway.address.port}"
        finally:
            browser.close()


def test_o2_chromium_pairs_over_https_and_wss_then_loses_access_when_revoked(
    home: Path, tls_browser: tuple[Browser, str]
) -> None:
    browser, base = tls_browser
    offer = json.loads(run(home, "devices", "pair", "--json").stdout)
    phone = browser.new_context().new_page()
    phone.goto(offer["link"])  # what scanning the QR code opens
    expect(phone.locator("body")).to_have_attribute("data-ready", "true")
    assert phone.url == f"{base}/"  # the secret left the address bar at once
    assert "pair" not in phone.evaluate("document.cookie")  # HttpOnly: the page's scripts cannot read it
    # O3: the Dashboard is an installable web app whose service worker (for Web Push) registers on the device.
    expect(phone.locator("body")).to_have_attribute("data-service-worker", "registered")
    assert phone.evaluate("navigator.serviceWorker.ready.then((r) => r.scope)") == f"{base}/"
    manifest = phone.evaluate("fetch('/manifest.webmanifest').then((r) => r.json())")
    assert manifest["start_url"] == "/"
    expect(phone.locator("#notify")).to_be_visible()
    devices = json.loads(run(home, "devices", "list", "--json").stdout)["devices"]
    assert len(devices) == 1
    assert run(home, "devices", "revoke", devices[0]["id"]).returncode == 0
    expect(phone.locator("body")).to_have_class("offline")  # its open WebSocket was closed

    # The short code, typed on a second device that opens the address by hand.
    typed = json.loads(run(home, "devices", "pair", "--json", "--scope", "reader").stdout)

    def answer(dialog: Dialog) -> None:
        dialog.accept(typed["code"])

    tablet = browser.new_context().new_page()
    tablet.once("dialog", answer)
    tablet.goto(f"{base}/")
    expect(tablet.locator("body")).to_have_attribute("data-ready", "true")
    listed = json.loads(run(home, "devices", "list", "--json").stdout)["devices"]
    assert [d["scope"] for d in listed if d["revoked_at"] is None] == ["reader"]
