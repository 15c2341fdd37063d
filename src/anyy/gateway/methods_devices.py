"""``devices.*``: pairing a phone and managing paired devices (O2). Pairing is the owner's (the profile's
token): a device can never pair another, whatever its scope."""

from __future__ import annotations

from anyy.api import methods as api
from anyy.api.devices import Device, DeviceList, DeviceRef, Pairing, PairParams
from anyy.api.params import NoParams
from anyy.gateway.remote import PAIR_SECONDS, RemoteAccess
from anyy.gateway.state import Connection, Gateway
from anyy.gateway.table import TABLE
from anyy.profiles.devices import DeviceBook


def _remote(gw: Gateway) -> RemoteAccess:
    if gw.remote is None:
        gw.remote = RemoteAccess(book=DeviceBook.of(gw.profile))
    return gw.remote


@TABLE.method(api.DEVICES_PAIR)
async def pair(gw: Gateway, conn: Connection | None, p: PairParams) -> Pairing:
    """Open a pairing offer: a link carrying a single-use secret (for a QR code) and a short code to type
    instead, both valid once, for 10 minutes; the device trades either at ``POST /auth/pair`` for a
    credential of ``scope`` (``operator``: everything; ``reader``: read, answer questions and approvals)."""
    remote = _remote(gw)
    secret, code = remote.offers.open(p.scope, p.name)
    base = remote.urls[0] if remote.urls else ""
    return Pairing(
        link=f"{base}/#pair={secret}",
        code=code,
        urls=list(remote.urls),
        ca_fingerprint=remote.ca_fingerprint,
        expires_in=PAIR_SECONDS,
        scope=p.scope,
    )


@TABLE.method(api.DEVICES_LIST)
async def list_(gw: Gateway, conn: Connection | None, p: NoParams) -> DeviceList:
    """The paired devices: name, scope, when paired, last seen, and when revoked (if so)."""
    return DeviceList(devices=_remote(gw).book.devices())


@TABLE.method(api.DEVICES_REVOKE)
async def revoke(gw: Gateway, conn: Connection | None, p: DeviceRef) -> Device:
    """Revoke a device (by id, or by a name only one live device has): its next request is refused and
    its open WebSockets are closed now."""
    return await _remote(gw).revoke(p.device)
