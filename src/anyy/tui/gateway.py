"""Finding the profile's Gateway, and starting it when none runs (the TUI does not fail fast as
``anyy chat`` does: it starts ``python -m anyy.gateway`` the way ``anyy gateway start`` does)."""

from __future__ import annotations

from anyy.profiles.gateway_address import Address, read_address
from anyy.profiles.gateway_launch import START_TIMEOUT, GatewayStartFailed, answering, launch_gateway, output_path
from anyy.profiles.profile import Profile

__all__ = ["GatewayStartFailed", "answering", "ensure_gateway"]


def ensure_gateway(profile: Profile, *, timeout: float = START_TIMEOUT) -> tuple[Address, str | None]:
    """The running Gateway's address, starting one first if needed; the second value says so."""
    profile.require()
    found = read_address(profile)
    if found is not None and answering(found):
        return found, None
    address = launch_gateway(profile, timeout=timeout)
    log = output_path(profile)
    return address, f"Started the Gateway of profile {profile.name} at {address.url} (pid {address.pid}); log: {log}"
