"""The devices paired with a profile (O2): ``PROFILE/devices.json`` (mode 0600), each with a name, a scope,
when it paired and was last seen, and the SHA-256 of its credential, never the credential itself.

A credential is ``ID.SECRET`` (the secret 32 random bytes): it is checked by looking the id up and comparing
the secret's hash in constant time. A revoked device stays listed (with when it was revoked) so that the
log and the list agree; its hash is dropped.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import time
from pathlib import Path

import msgspec

from anyy.api.devices import Device, Scope
from anyy.domain.errors import InvalidInput, NotFound
from anyy.profiles.profile import Profile

DEVICES_FILE = "devices.json"
MAX_NAME = 64
TOUCH_EVERY = 60.0  # seconds between two writes of one device's last-seen time


PUSH_KINDS = ("question", "approval", "failed", "finished")


class PushTarget(msgspec.Struct, kw_only=True):
    """Where a device's browser takes Web Push messages (its push service's endpoint and keys, O3), which
    kinds it wants, and whether a message may carry the conversation's text."""

    endpoint: str
    p256dh: str
    auth: str
    kinds: list[str] = msgspec.field(default_factory=lambda: list(PUSH_KINDS))
    content: bool = False


class _Stored(msgspec.Struct, kw_only=True):
    device: Device
    secret_sha256: str = ""
    push: PushTarget | None = None


class _File(msgspec.Struct, kw_only=True):
    devices: list[_Stored] = msgspec.field(default_factory=list)


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def clean_name(name: str) -> str:
    """A device's name as shown in lists and logs: printable, one line, bounded."""
    cleaned = "".join(ch for ch in name if ch.isprintable()).strip()[:MAX_NAME]
    return cleaned or "device"


class DeviceBook:
    """The profile's devices, read once and written whole on every change (a temporary file, then rename)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._entries: dict[str, _Stored] = {}
        self._written: dict[str, float] = {}
        try:
            found = msgspec.json.decode(path.read_bytes(), type=_File)
        except FileNotFoundError:
            found = _File()
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise InvalidInput(
                f"{path} is not a device list ({exc}): move it away to start with no paired device"
            ) from None
        self._entries = {stored.device.id: stored for stored in found.devices}

    @classmethod
    def of(cls, profile: Profile) -> DeviceBook:
        return cls(profile.path / DEVICES_FILE)

    def devices(self) -> list[Device]:
        return sorted((s.device for s in self._entries.values()), key=lambda d: d.paired_at)

    def add(self, name: str, scope: Scope) -> tuple[Device, str]:
        """A new device and its credential (shown once, to the device)."""
        device = Device(id=secrets.token_hex(8), name=clean_name(name), scope=scope, paired_at=time.time())
        secret = secrets.token_urlsafe(32)
        self._entries[device.id] = _Stored(device=device, secret_sha256=_digest(secret))
        self._save()
        return device, f"{device.id}.{secret}"

    def verify(self, credential: str) -> Device | None:
        """The live device whose credential this is, or None; constant time in the secret."""
        device_id, _, secret = credential.partition(".")
        stored = self._entries.get(device_id)
        expected = stored.secret_sha256 if stored is not None and stored.device.revoked_at is None else ""
        # Always compare (against a dummy when the id is unknown) so timing says nothing of the secret.
        ok = hmac.compare_digest(_digest(secret), expected or "0" * 64)
        return stored.device if ok and stored is not None and expected else None

    def find(self, ref: str) -> Device:
        """A device by id, or by name when exactly one live device has it."""
        if ref in self._entries:
            return self._entries[ref].device
        named = [s.device for s in self._entries.values() if s.device.name == ref and s.device.revoked_at is None]
        if len(named) == 1:
            return named[0]
        if named:
            raise InvalidInput(f"{len(named)} devices are named {ref!r}: give the id `anyy devices list` shows")
        raise NotFound(f"no device {ref!r}: `anyy devices list` shows the paired devices and their ids")

    def revoke(self, ref: str) -> Device:
        stored = self._entries[self.find(ref).id]
        if stored.device.revoked_at is None:
            stored.device.revoked_at = time.time()
            stored.secret_sha256 = ""
            stored.push = None
            stored.device.push_kinds = []
            self._save()
        return stored.device

    def set_push(self, device_id: str, target: PushTarget | None) -> None:
        stored = self._entries[device_id]
        stored.push = target
        stored.device.push_kinds = list(target.kinds) if target is not None else []
        self._save()

    def push_targets(self, kind: str) -> list[tuple[Device, PushTarget]]:
        """The live devices that take pushes of ``kind``."""
        return [
            (s.device, s.push)
            for s in self._entries.values()
            if s.push is not None and s.device.revoked_at is None and kind in s.push.kinds
        ]

    def touch(self, device_id: str) -> None:
        """Note that the device was seen now; written at most once a minute per device."""
        stored = self._entries.get(device_id)
        if stored is None:
            return
        now = time.time()
        stored.device.last_seen = now
        if now - self._written.get(device_id, 0.0) >= TOUCH_EVERY:
            self._written[device_id] = now
            self._save()

    def _save(self) -> None:
        data = msgspec.json.encode(_File(devices=list(self._entries.values())))
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.write(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, self.path)
