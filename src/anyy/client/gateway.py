"""Finding a profile's Gateway: the address it published in ``PROFILE/gateway.json`` (the file's format is
the profile's, :mod:`anyy.profiles.gateway_address`: the Gateway writes it, backups look at it)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from anyy.client.errors import GatewayUnavailable, no_gateway_message
from anyy.profiles import Profile, anyy_home, get_profile
from anyy.profiles.gateway_address import Address, read_address

Locator = Callable[[], Address | None]


def gateway_address(profile: Profile) -> Address:
    """The address the profile's Gateway published, or GatewayUnavailable saying how to start one."""
    profile.require()
    address = read_address(profile)
    if address is None:
        raise GatewayUnavailable(no_gateway_message(profile.name))
    return address


def address_locator(profile_name: str, home: Path | None = None) -> Locator:
    """Reads the named profile's ``gateway.json`` at each call (a restarted Gateway has a new port and
    token), under ``home`` or the anyy home (``$ANYY_HOME``)."""

    def locate() -> Address | None:
        return read_address(get_profile(home if home is not None else anyy_home(), profile_name))

    return locate
