"""Devices paired with the Gateway (O2): the wire types of ``devices.pair``, ``devices.list`` and
``devices.revoke``."""

from __future__ import annotations

from typing import Literal

import msgspec

from anyy.api.params import Params

Scope = Literal["operator", "reader"]


class PairParams(Params):
    name: str = ""  # what the device will be called in `anyy devices list` (asked on the device if empty)
    scope: Scope = "operator"


class Pairing(msgspec.Struct, kw_only=True):
    """What `anyy devices pair` shows: a link (the QR code) carrying the single-use secret, a short code to
    type instead, the addresses to open, and the fingerprint of the CA the device should trust."""

    link: str
    code: str
    urls: list[str]
    ca_fingerprint: str  # SHA-256 of the profile CA's certificate; empty without one
    expires_in: float  # seconds
    scope: Scope


class Device(msgspec.Struct, kw_only=True):
    id: str
    name: str
    scope: Scope
    paired_at: float
    last_seen: float | None = None
    revoked_at: float | None = None
    push_kinds: list[str] = []  # what it is told by Web Push (O3): question, approval, failed; none: no push


class DeviceRef(Params):
    device: str  # its id, or its name


class DeviceList(msgspec.Struct, kw_only=True):
    devices: list[Device]


class Exposure(msgspec.Struct, kw_only=True):
    """How the profile's Gateway is reachable (O4): where it listens, with what TLS, by which devices."""

    running: bool
    host: str = ""
    loopback: bool = True
    tls: str = ""  # "profile CA", "own certificate", or "" (plain HTTP, loopback only)
    ca_fingerprint: str = ""
    devices: int = 0  # live paired devices
    revoked: int = 0
    push_devices: int = 0
    last_device_use: float | None = None
    pairing_open: int = 0  # offers not yet used (the running Gateway only)
    refused_addresses: int = 0  # addresses refused now for too many authentication failures
