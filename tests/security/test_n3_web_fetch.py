"""N3: ``web_fetch`` never reaches loopback, private or link-local addresses (however they are written,
redirects and DNS rebinding included) and keeps its whole-transfer deadline.

Each attempt is an escape tried; an escape that worked is a request that reached the internal server.
The counts are printed (``pytest -s``) and must show 0 escapes that worked.
"""

from __future__ import annotations

import socket
import time
from typing import Any

import msgspec
import pytest

from anyy.tools.base import ToolContext
from anyy.tools.policy import ToolPolicy
from anyy.tools.web_fetch import WebFetchTool
from tests.security.conftest import Internal

pytestmark = pytest.mark.anyio

# 93.184.215.14 stands for a public web server; the tests' resolver and connector map it to loopback.
PUBLIC = "93.184.215.14"
UNREACHABLE_PUBLIC = "93.184.215.15"

INTERNAL_HOSTS = [
    "localhost",
    "127.0.0.1",
    "127.1",
    "2130706433",  # decimal
    "0x7f000001",  # hexadecimal
    "0177.0.0.1",  # octal
    "0x7f.0.0.1",
    "017700000001",
    "0.0.0.0",
    "0",
    "[::1]",
    "[::]",
    "[::ffff:127.0.0.1]",  # IPv4-mapped
    "[::ffff:7f00:1]",
    "[0:0:0:0:0:ffff:127.0.0.1]",
    "[::127.0.0.1]",  # IPv4-compatible
    "[64:ff9b::7f00:1]",  # NAT64
    "[2002:7f00:1::]",  # 6to4
    "169.254.169.254",  # cloud metadata (link-local)
    "[fe80::1]",
    "10.0.0.1",
    "172.16.0.1",
    "192.168.0.1",
    "100.64.0.1",  # carrier-grade NAT
    "[fc00::1]",
    "[fd00::1]",
]


async def _fetch(url: str, context: ToolContext) -> tuple[str, bool]:
    outcome = await WebFetchTool().run({"url": url}, context)
    return outcome.text, outcome.is_error


async def test_n3_web_fetch_refuses_every_internal_address_form(internal: Internal, context: ToolContext) -> None:
    tried = worked = 0
    for host in INTERNAL_HOSTS:
        tried += 1
        text, failed = await _fetch(f"http://{host}:{internal.port}/secret", context)
        assert failed, host
        assert "internal secret" not in text
        assert "web_fetch does not reach" in text or "cannot resolve" in text, (host, text)
    worked = len(internal.hits)
    print(f"\nN3 web_fetch address forms: escapes tried {tried}, escapes that worked {worked}")
    assert worked == 0


@pytest.fixture
def public_shim(monkeypatch: pytest.MonkeyPatch, internal: Internal) -> list[str]:
    """``public.test`` resolves to a public address, which connects to the internal server's /redirect;
    ``rebind.test`` resolves to a public address first and to loopback afterwards (DNS rebinding)."""
    real_resolve = socket.getaddrinfo
    real_connect = socket.create_connection
    connected: list[str] = []
    rebinds = {"count": 0}

    def resolve(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        if host == "public.test":
            return real_resolve(PUBLIC, port, *args, **kwargs)
        if host == "rebind.test":
            rebinds["count"] += 1
            first = rebinds["count"] == 1
            return real_resolve(UNREACHABLE_PUBLIC if first else "127.0.0.1", port, *args, **kwargs)
        return real_resolve(host, port, *args, **kwargs)

    def connect(address: tuple[str, int], *args: Any, **kwargs: Any) -> socket.socket:
        connected.append(address[0])
        if address[0] == PUBLIC:
            return real_connect(("127.0.0.1", internal.port), *args, **kwargs)
        if address[0] == UNREACHABLE_PUBLIC:
            raise ConnectionRefusedError(111, "Connection refused")
        return real_connect(address, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", resolve)
    monkeypatch.setattr(socket, "create_connection", connect)
    return connected


async def test_n3_web_fetch_checks_every_redirect(
    internal: Internal, context: ToolContext, public_shim: list[str]
) -> None:
    tried = 0
    port = internal.port
    targets = [
        f"http://127.0.0.1:{port}/secret",
        f"http://2130706433:{port}/secret",
        f"http://[::ffff:127.0.0.1]:{port}/secret",
        "http://169.254.169.254/latest/meta-data",
    ]
    for target in targets:
        tried += 1
        internal.redirect_to = target
        text, failed = await _fetch("http://public.test/redirect", context)
        assert failed, target
        assert "web_fetch does not reach" in text, text
    assert public_shim.count(PUBLIC) == tried  # the public hop was really made, then its redirect refused
    print(f"\nN3 web_fetch redirects: escapes tried {tried}, escapes that worked {len(internal.hits)}")
    assert internal.hits == []


async def test_n3_web_fetch_connects_to_the_address_it_checked(
    internal: Internal, context: ToolContext, public_shim: list[str]
) -> None:
    """DNS rebinding: the name is resolved once per hop; the connection goes to the checked address."""
    _, failed = await _fetch(f"http://rebind.test:{internal.port}/secret", context)
    assert failed
    assert public_shim == [UNREACHABLE_PUBLIC]
    print(f"\nN3 web_fetch DNS rebinding: escapes tried 1, escapes that worked {len(internal.hits)}")
    assert internal.hits == []


async def test_n3_web_fetch_allows_private_addresses_only_when_the_profile_does(
    internal: Internal, context: ToolContext
) -> None:
    allowed = msgspec.structs.replace(context, policy=ToolPolicy(allow_private_network=True))
    text, failed = await _fetch(f"http://127.0.0.1:{internal.port}/page", allowed)
    assert not failed
    assert text.endswith("internal secret")


async def test_n3_web_fetch_keeps_its_whole_transfer_deadline(internal: Internal, context: ToolContext) -> None:
    """A server dribbling one byte at a time cannot hold the call past its deadline."""
    allowed = msgspec.structs.replace(context, timeout=1.0, policy=ToolPolicy(allow_private_network=True))
    started = time.monotonic()
    text, failed = await _fetch(f"http://127.0.0.1:{internal.port}/dribble", allowed)
    elapsed = time.monotonic() - started
    assert failed
    assert "timed out after 1 s" in text
    # Generous for a busy machine, yet far below what per-read timeouts allowed (170 s against 30 s).
    assert elapsed < 6, elapsed
