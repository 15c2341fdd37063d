"""How a profile's Gateway is exposed (O4), read from the profile's files: the address it published, its
TLS, its paired devices. ``anyy doctor`` shows it without a Gateway; ``gateway.status`` adds what only the
running Gateway knows (open pairing offers, addresses refused)."""

from __future__ import annotations

from anyy.api.devices import Exposure
from anyy.domain.errors import InvalidInput
from anyy.profiles.devices import DeviceBook
from anyy.profiles.gateway_address import read_address
from anyy.profiles.profile import Profile
from anyy.profiles.tls import TLS_DIR, ca_fingerprint, is_loopback


def exposure(profile: Profile) -> Exposure:
    address = read_address(profile)
    try:
        devices = DeviceBook.of(profile).devices()
    except InvalidInput:
        devices = []
    live = [d for d in devices if d.revoked_at is None]
    seen = [d.last_seen for d in live if d.last_seen is not None]
    found = Exposure(
        running=address is not None,
        devices=len(live),
        revoked=len(devices) - len(live),
        push_devices=sum(1 for d in live if d.push_kinds),
        last_device_use=max(seen) if seen else None,
    )
    if address is None:
        return found
    found.host = address.host
    found.loopback = is_loopback(address.host)
    if address.tls_cert:
        ca = profile.path / TLS_DIR / "ca.pem"
        own = address.tls_cert == str(profile.path / TLS_DIR / "server.pem")
        found.tls = "profile CA" if own else "own certificate"
        if own and ca.exists():
            found.ca_fingerprint = ca_fingerprint(ca.read_bytes())
    return found


def exposure_lines(found: Exposure) -> list[str]:
    """For people: one line per fact, a warning where something deserves a look."""
    if not found.running:
        where = "no Gateway runs"
    elif found.loopback:
        where = f"listens on {found.host} (loopback: this machine only)"
    else:
        where = f"listens on {found.host}, reachable from the network, over TLS ({found.tls})"
    lines = [f"  exposure      {where}"]
    if found.ca_fingerprint:
        lines.append(f"  certificate   profile CA, SHA-256 {found.ca_fingerprint}")
    used = "never used" if found.last_device_use is None else "last used " + _when(found.last_device_use)
    lines.append(
        f"  devices       {found.devices} paired ({found.push_devices} with push), {found.revoked} revoked; {used}"
    )
    if found.running and not found.loopback and found.host in ("0.0.0.0", "::"):  # noqa: S104 - read, not bound
        lines.append("  warning       listening on every network of this machine: prefer one address (docs/remote.md)")
    return lines


def _when(stamp: float) -> str:
    import datetime

    return datetime.datetime.fromtimestamp(stamp).strftime("%Y-%m-%d %H:%M")
