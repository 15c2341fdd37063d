"""Where a profile's Gateway listens: ``PROFILE/gateway.json`` (mode 0600), written by the Gateway when it
is ready and removed when it stops. Clients read it to find the Gateway and its access token."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from anyy.profiles.profile import Profile

if TYPE_CHECKING:
    import ssl

ADDRESS_FILE = "gateway.json"


class Address(msgspec.Struct, kw_only=True):
    profile: str
    pid: int
    host: str
    port: int
    token: str
    started_at: float
    tls_cert: str = ""  # the certificate it serves (O1): local clients pin it; empty: plain HTTP on loopback

    @property
    def url(self) -> str:
        return f"{'https' if self.tls_cert else 'http'}://{self.dialled}:{self.port}"

    @property
    def ws_url(self) -> str:
        return f"{'wss' if self.tls_cert else 'ws'}://{self.dialled}:{self.port}/ws"

    @property
    def dialled(self) -> str:
        """The address a local client dials: a wildcard bind is reached on loopback."""
        host = {
            "0.0.0.0": "127.0.0.1",  # noqa: S104 - a wildcard read, not bound
            "::": "::1",
            "": "127.0.0.1",
        }.get(self.host, self.host)
        return f"[{host}]" if ":" in host else host

    def ssl_context(self) -> ssl.SSLContext | None:
        """How a local client trusts this Gateway: the exact certificate it published (None: plain HTTP)."""
        if not self.tls_cert:
            return None
        from anyy.profiles.tls import pinned_context

        return pinned_context(self.tls_cert)


def address_path(profile: Profile) -> Path:
    return profile.path / ADDRESS_FILE


def read_address(profile: Profile) -> Address | None:
    """The address the profile's Gateway published, or None (never started, stopped, or unreadable)."""
    try:
        return msgspec.json.decode(address_path(profile).read_bytes(), type=Address)
    except (FileNotFoundError, PermissionError, msgspec.DecodeError, msgspec.ValidationError):
        return None


def write_address(profile: Profile, address: Address) -> None:
    """Written whole (temporary file, then rename) and readable by the owner only."""
    path = address_path(profile)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, msgspec.json.encode(address))
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)


# More Gateways of one profile on a shared store (``anyy gateway run --store``): only the one holding the
# profile's lock publishes gateway.json; each other one writes its address here, so that `anyy gateway stop`
# finds every Gateway this profile started on this host.
MORE_DIR = "gateways"


def more_address_path(profile: Profile, pid: int) -> Path:
    return profile.path / MORE_DIR / f"{pid}.json"


def write_more_address(profile: Profile, address: Address) -> Path:
    path = more_address_path(profile, address.pid)
    path.parent.mkdir(mode=0o700, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, msgspec.json.encode(address))
    finally:
        os.close(fd)
    return path


def read_more_addresses(profile: Profile) -> list[tuple[Path, Address]]:
    """The addresses the profile's other Gateways wrote (some may be stale: a Gateway killed leaves its file)."""
    found = []
    for path in sorted((profile.path / MORE_DIR).glob("*.json")):
        try:
            found.append((path, msgspec.json.decode(path.read_bytes(), type=Address)))
        except (FileNotFoundError, PermissionError, msgspec.DecodeError, msgspec.ValidationError):
            continue
    return found
