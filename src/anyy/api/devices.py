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
