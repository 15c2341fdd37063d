"""Serving ACP on stdio: the profile's Gateway found (or started, said on stderr), then the bridge.

Standard output carries the protocol and nothing else: every message for a person goes to stderr.
"""

from __future__ import annotations

import asyncio
import sys

import acp

from anyy.acp.bridge import Bridge
from anyy.client.launch import ensure_gateway
from anyy.profiles.gateway_address import Address
from anyy.profiles.profile import Profile


def gateway_of(profile: Profile) -> Address:
    """The profile's running Gateway, started first when none answers (and the person told on stderr)."""
    address, started = ensure_gateway(profile)
    if started:
        print(f"anyy acp: {started}", file=sys.stderr, flush=True)
    return address


async def serve(profile: Profile) -> None:
    bridge = Bridge(profile.name, lambda: gateway_of(profile))
    await bridge.connect()
    try:
        # session/resume and session/close are still marked unstable by the SDK: routed on purpose (offered
        # in the capabilities); the methods anyy does not implement get "method not found" from the SDK.
        await acp.run_agent(bridge, use_unstable_protocol=True)  # type: ignore[arg-type]
    finally:
        await bridge.close()


def run(profile: Profile) -> None:
    asyncio.run(serve(profile))
