"""Devices away from the machine (O2, O4): pairing offers, who a request comes from, what its scope
allows, and the sockets to close when a device is revoked.

Pairing: `anyy devices pair` (``devices.pair``, with the profile's token) opens an offer: a single-use
secret (in the link of the QR code) and a short code to type instead, both valid once, for 10 minutes,
kept in this process only (a restart forgets them). The device trades either for its own credential at
``POST /auth/pair``; the Gateway sets it as an HttpOnly cookie, so the page's scripts never hold it.
Wrong codes are counted: after :data:`MAX_PAIR_FAILURES` every open offer is withdrawn, so a short code
cannot be guessed by trying (the owner pairs again).

A device's requests carry that cookie; the profile's token stays for local clients. ``operator`` devices
may do everything but open the Dashboard's token (``dashboard.code``) or pair more devices; ``reader``
devices read, and answer questions and approvals, only.
"""

from __future__ import annotations

import hashlib
import logging
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import msgspec

from anyy.api.devices import Device, Exposure, Scope
from anyy.profiles.devices import DeviceBook, clean_name
from commons import jsonrpc

log = logging.getLogger("anyy.gateway")

COOKIE = "anyy_device"
MAX_AUTH_FAILURES = 30
FAILURE_WINDOW = 600.0
MAX_TRACKED = 4096
PAIR_SECONDS = 600.0
MAX_PAIR_FAILURES = 5
MAX_OFFERS = 8
CODE_ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"  # no 0/O, 1/I/L: read aloud or typed on a phone
DEVICE_NEVER = frozenset({"dashboard.code", "devices.pair"})
READER_METHODS = frozenset(
    {
        "session.get",
        "session.children",
        "session.list",
        "session.history",
        "session.tree",
        "session.search",
        "session.execution",
        "session.answer",
        "session.approve",
        "session.files.diff",
        "session.queue.peek",
        "session.queue.list",
        "session.queue.modes",
        "session.wait",
        "models.list",
        "gateway.status",
        "events.subscribe",
        "events.unsubscribe",
        "markdown.render",
        "resident.list",
        "resident.get",
        "schedule.list",
        "schedule.get",
        "schedule.runs",
        "devices.list",
    }
)


def _hash(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def normal_code(code: str) -> str:
    """A short code as typed: case, spaces and dashes do not matter."""
    return "".join(ch for ch in code.upper() if ch.isalnum())


@dataclass
class Offer:
    scope: Scope
    name: str
    expires: float


class PairingRefused(Exception):
    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


class Offers:
    """Open pairing offers, by the hash of their secret and of their short code."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._by_hash: dict[str, tuple[int, Offer]] = {}
        self._next = 0
        self.failures = 0

    def open(self, scope: Scope, name: str) -> tuple[str, str]:
        """A new offer: its secret (for the link) and its short code, shown once."""
        self.failures = 0
        secret = secrets.token_urlsafe(32)
        code = "".join(secrets.choice(CODE_ALPHABET) for _ in range(10))
        offer = Offer(scope=scope, name=name, expires=self.clock() + PAIR_SECONDS)
        self._next += 1
        self._by_hash[_hash(secret)] = (self._next, offer)
        self._by_hash[_hash(normal_code(code))] = (self._next, offer)
        while len({n for n, _ in self._by_hash.values()}) > MAX_OFFERS:
            oldest = min(n for n, _ in self._by_hash.values())
            self._drop(oldest)
        return secret, f"{code[:5]}-{code[5:]}"

    def redeem(self, presented: str) -> Offer:
        """The offer this secret or code opens, spent now; PairingRefused saying why not."""
        if not self._by_hash:
            raise PairingRefused("no pairing is open: run `anyy devices pair` on the machine, then try again", 401)
        found = self._by_hash.get(_hash(presented)) or self._by_hash.get(_hash(normal_code(presented)))
        if found is None:
            self.failures += 1
            if self.failures >= MAX_PAIR_FAILURES:
                self._by_hash.clear()
                log.warning("pairing closed after %d wrong codes: every open offer withdrawn", self.failures)
                raise PairingRefused(
                    "too many wrong codes: pairing is closed; run `anyy devices pair` again on the machine", 429
                )
            raise PairingRefused("this code is unknown, used or expired: check it, or run `anyy devices pair`", 401)
        number, offer = found
        self._drop(number)
        if self.clock() > offer.expires:
            raise PairingRefused("this pairing code expired (10 minutes): run `anyy devices pair` again", 401)
        return offer

    def open_count(self) -> int:
        now = self.clock()
        return len({n for n, offer in self._by_hash.values() if offer.expires >= now})

    def _drop(self, number: int) -> None:
        for key in [k for k, (n, _) in self._by_hash.items() if n == number]:
            del self._by_hash[key]


class FailureLimit:
    """Authentication failures by client address (O4): past :data:`MAX_AUTH_FAILURES` within
    :data:`FAILURE_WINDOW` seconds, that address is refused (429), even with the right credential, until
    the window ends. Guessing a token or a device's credential is hopeless anyway (256 bits); this keeps a
    misbehaving device or a scanner from filling the logs and the Gateway's time."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._failures: dict[str, tuple[float, int]] = {}  # address -> (window start, failures)

    def blocked(self, address: str) -> bool:
        found = self._failures.get(address)
        if found is None:
            return False
        start, count = found
        if self.clock() - start > FAILURE_WINDOW:
            del self._failures[address]
            return False
        return count >= MAX_AUTH_FAILURES

    def failed(self, address: str) -> None:
        now = self.clock()
        start, count = self._failures.get(address, (now, 0))
        if now - start > FAILURE_WINDOW:
            start, count = now, 0
        self._failures[address] = (start, count + 1)
        if count + 1 == MAX_AUTH_FAILURES:
            log.warning("%s refused for %g s: %d authentication failures", address, FAILURE_WINDOW, count + 1)
        if len(self._failures) > MAX_TRACKED:
            self._failures.pop(next(iter(self._failures)))

    def refused_now(self) -> int:
        return sum(1 for address in list(self._failures) if self.blocked(address))


@dataclass(frozen=True)
class Caller:
    """Who sent a request: the profile's owner (its token) or a paired device."""

    device: Device | None = None

    @property
    def scope(self) -> str:
        return "owner" if self.device is None else self.device.scope


Closer = Callable[[], Awaitable[None]]


@dataclass
class RemoteAccess:
    """The Gateway's devices, pairing offers, open device sockets, and what to tell a pairing device."""

    book: DeviceBook
    offers: Offers = field(default_factory=Offers)
    urls: list[str] = field(default_factory=list)
    ca_fingerprint: str = ""
    sockets: dict[str, set[Closer]] = field(default_factory=dict)
    failures: FailureLimit = field(default_factory=FailureLimit)
    limit_failures: bool = False  # on a Gateway reachable from elsewhere (TLS); loopback-only ones are not

    def device_of(self, cookies: dict[str, str]) -> Device | None:
        credential = cookies.get(COOKIE, "")
        if not credential:
            return None
        device = self.book.verify(credential)
        if device is not None:
            self.book.touch(device.id)
        return device

    def pair(self, presented: str, name: str) -> tuple[Device, str]:
        offer = self.offers.redeem(presented)
        device, credential = self.book.add(clean_name(name or offer.name), offer.scope)
        log.info("device %r (%s) paired with scope %s", device.name, device.id, device.scope)
        return device, credential

    async def revoke(self, ref: str) -> Device:
        device = self.book.revoke(ref)
        closers = self.sockets.pop(device.id, set())
        log.info("device %r (%s) revoked; %d open connection(s) closed", device.name, device.id, len(closers))
        for close in closers:
            try:
                await close()
            except Exception:  # a socket already gone
                log.debug("closing a revoked device's socket failed", exc_info=True)
        return device

    def live(self, device: Device) -> bool:
        return device.revoked_at is None

    def refusal(self, caller: Caller, frame: bytes | str) -> bytes | None:
        """An error reply when the frame calls a method the caller's scope does not allow; None: allowed."""
        if caller.device is None:
            return None
        if caller.device.revoked_at is not None:  # revoked while this socket was open
            return jsonrpc.encode(
                jsonrpc.Response(id=None, error=jsonrpc.ErrorObject(code=jsonrpc.UNAUTHORIZED, message="revoked"))
            )
        try:
            decoded: Any = msgspec.json.decode(frame)
        except msgspec.DecodeError:
            return None  # the dispatcher says what is wrong with it
        calls = decoded if isinstance(decoded, list) else [decoded]
        for call in calls:
            method = call.get("method") if isinstance(call, dict) else None
            if not isinstance(method, str) or self.allows(caller.device, method):
                continue
            device = caller.device
            log.warning("device %r (%s) refused %s (scope %s)", device.name, device.id, method[:80], device.scope)
            message = (
                f"this device's scope ({device.scope}) does not allow {method[:80]}: pair it as an operator "
                "(`anyy devices pair --scope operator`) or do it on the machine"
            )
            ident = call.get("id") if isinstance(call, dict) and not isinstance(decoded, list) else None
            error = jsonrpc.ErrorObject(code=jsonrpc.UNAUTHORIZED, message=message)
            return jsonrpc.encode(jsonrpc.Response(id=ident, error=error))
        return None

    @staticmethod
    def allows(device: Device, method: str) -> bool:
        if method in DEVICE_NEVER:
            return False
        return device.scope == "operator" or method in READER_METHODS


def exposure_now(gw: Any) -> Exposure:
    """The profile's exposure as its files say, with what only this running Gateway knows (O4)."""
    from anyy.profiles.exposure import exposure

    found = exposure(gw.profile)
    remote: RemoteAccess | None = gw.remote
    if remote is not None:
        found.pairing_open = remote.offers.open_count()
        found.refused_addresses = remote.failures.refused_now()
    return found
