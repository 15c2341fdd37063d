"""``anyy devices pair|list|revoke``: phones and other devices that reach the profile's Gateway from
elsewhere (O2; docs/remote.md). Everything goes through the running Gateway, which holds the pairing
offers and closes a revoked device's connections at once."""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING, Any

import click

from anyy.cli.context import with_profile
from anyy.cli.output import echo_json
from anyy.domain.errors import AnyyError

if TYPE_CHECKING:
    from anyy.profiles import Profile


class DevicesError(AnyyError):
    pass


def _call(profile: Profile, method: Any, params: Any) -> Any:
    from anyy.client.errors import CallFailed, GatewayUnavailable
    from anyy.client.sync import profile_client

    try:
        with profile_client(profile) as client:
            return client.call(method, params, timeout=10)
    except GatewayUnavailable as exc:
        raise DevicesError(
            f"{exc}; devices are paired and revoked through the running Gateway: start it with "
            f"`anyy gateway start --profile {profile.name} --host ADDRESS --tls`"
        ) from None
    except CallFailed as exc:
        raise DevicesError(exc.message) from None


@click.group()
def devices() -> None:
    """Pair phones and other devices with the profile's Gateway, list them, revoke them (docs/remote.md)."""


@devices.command("pair")
@with_profile
@click.option("--name", default="", metavar="NAME", help="What to call the device (asked on it if left out).")
@click.option(
    "--scope",
    type=click.Choice(["operator", "reader"]),
    default="operator",
    show_default=True,
    help="operator: everything; reader: read, and answer questions and approvals only.",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON (with the link, which holds the secret).")
def pair_command(profile: Profile, name: str, scope: str, as_json: bool) -> None:
    """Show a QR code and a short code that pair one device, once, within 10 minutes."""
    from anyy.api.devices import PairParams
    from anyy.api.methods import DEVICES_PAIR

    pairing = _call(profile, DEVICES_PAIR, PairParams(name=name, scope=scope))  # type: ignore[arg-type]
    if as_json:
        echo_json(pairing)
        return
    import segno

    click.echo("Scan this with the phone's camera (or open one of the addresses below and type the code):")
    segno.make(pairing.link, error="m").terminal(compact=True)
    click.echo(f"Code: {pairing.code}   (single use, expires in {int(pairing.expires_in // 60)} minutes)")
    click.echo(f"Scope: {pairing.scope}")
    for url in pairing.urls:
        click.echo(f"Address: {url}/")
    if pairing.ca_fingerprint:
        pairs = ":".join(pairing.ca_fingerprint[i : i + 2] for i in range(0, len(pairing.ca_fingerprint), 2))
        click.echo(f"Certificate authority (SHA-256), trust it on the phone: {pairs.upper()}")
        click.echo(f"  its file: {profile.path / 'tls' / 'ca.pem'}")


def _when(stamp: float | None) -> str:
    if stamp is None:
        return "never"
    return datetime.datetime.fromtimestamp(stamp).strftime("%Y-%m-%d %H:%M")


@devices.command("list")
@with_profile
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def list_command(profile: Profile, as_json: bool) -> None:
    """The paired devices: id, name, scope, last seen, revoked or not."""
    from anyy.api.methods import DEVICES_LIST
    from anyy.api.params import NoParams

    found = _call(profile, DEVICES_LIST, NoParams())
    if as_json:
        echo_json(found)
        return
    if not found.devices:
        click.echo("No device is paired: `anyy devices pair` pairs one.")
        return
    for d in found.devices:
        state = f"revoked {_when(d.revoked_at)}" if d.revoked_at else f"last seen {_when(d.last_seen)}"
        click.echo(f"{d.id}  {d.name}  {d.scope}  paired {_when(d.paired_at)}  {state}")


@devices.command("revoke")
@with_profile
@click.argument("device")
def revoke_command(profile: Profile, device: str) -> None:
    """Revoke DEVICE (its id, or its name): refused from its next request, its connections closed now."""
    from anyy.api.devices import DeviceRef
    from anyy.api.methods import DEVICES_REVOKE

    revoked = _call(profile, DEVICES_REVOKE, DeviceRef(device=device))
    click.echo(f"Revoked {revoked.name} ({revoked.id}): it can no longer reach the Gateway.")
