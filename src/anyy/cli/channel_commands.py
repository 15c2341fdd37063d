"""``anyy channel add|list|show|remove|pair|unpair`` (SPEC L1, L2): the profile's channels.

``add`` and ``remove`` edit the profile's ``channels.toml`` (they work with no Gateway running) and tell a
running Gateway to take the change in; the rest goes through the Gateway, which polls the channels and
keeps their senders. A token is never taken on the command line (argv is visible to every user of the
machine): ``--token-env`` names the Gateway's environment variable that holds it.
"""

from __future__ import annotations

import datetime
from typing import Any

import click

from anyy.cli.context import open_store, with_profile
from anyy.cli.output import echo_json
from anyy.domain.channels import RIGHTS, check_rights
from anyy.profiles import Profile
from anyy.profiles.channels_file import KINDS, ChannelSettings, check_channel, load_channels, save_channels

_JSON = click.option("--json", "as_json", is_flag=True, help="Print JSON.")


def _call(profile: Profile, method: str, params: dict[str, Any] | None = None) -> Any:
    from anyy.client.sync import profile_client  # the Gateway client (websockets) only when needed

    with profile_client(profile) as client:
        return client.call(method, params)


def _tell_gateway(profile: Profile, method: str, params: dict[str, Any] | None = None) -> bool:
    """Call a running Gateway; False when none runs (it reads the file when it starts)."""
    from anyy.client.errors import GatewayUnavailable
    from anyy.profiles.gateway_address import read_address

    if read_address(profile) is None:
        return False
    try:
        _call(profile, method, params)
    except GatewayUnavailable:
        return False
    return True


def _when(seconds: float) -> str:
    return datetime.datetime.fromtimestamp(seconds).astimezone().strftime("%Y-%m-%d %H:%M")


@click.group()
def channel() -> None:
    """Channels: reach a session or a resident from Telegram (docs/channels.md)."""


@channel.command("add")
@click.argument("name")
@with_profile
@click.option("--kind", type=click.Choice(KINDS), default="telegram", show_default=True)
@click.option("--token-env", required=True, help="The Gateway's environment variable holding the bot's token.")
@click.option("--session", "session_id", default="", help="The session it feeds (an id).")
@click.option("--resident", default="", help="The resident it feeds (a name).")
@click.option("--api-url", default="", help="Another Bot API server (default: Telegram's).")
@click.option("--poll-seconds", type=click.IntRange(1, 300), default=30, show_default=True)
@click.option("--address", default="", help="E-mail: the agent's own address.")
@click.option("--imap-url", default="", help="E-mail: the mailbox it reads, imaps://host[:port].")
@click.option("--smtp-url", default="", help="E-mail: the server it sends with, smtps://host[:port] or smtp://...")
@click.option("--username", default="", help="E-mail: the login of both servers (default: the address).")
@click.option(
    "--rights",
    default=",".join(RIGHTS),
    show_default=True,
    help="What a paired sender may do, comma-separated: talk, answer (questions, approvals), stop.",
)
@_JSON
def add_command(
    profile: Profile,
    name: str,
    *,
    kind: str,
    token_env: str,
    session_id: str,
    resident: str,
    api_url: str,
    poll_seconds: int,
    rights: str,
    as_json: bool,
    address: str = "",
    imap_url: str = "",
    smtp_url: str = "",
    username: str = "",
) -> None:
    """Add a channel to the profile (channels.toml) and start it if the Gateway runs."""
    profile.require()
    settings = ChannelSettings(
        kind="email" if kind == "email" else "telegram",
        token_env=token_env,
        session=session_id,
        resident=resident,
        api_url=api_url,
        poll_seconds=poll_seconds,
        rights=check_rights([r.strip() for r in rights.split(",") if r.strip()]),
        address=address,
        imap_url=imap_url,
        smtp_url=smtp_url,
        username=username,
    )
    check_channel(name, settings)
    channels = load_channels(profile.path)
    if name in channels:
        raise click.UsageError(
            f"a channel named {name!r} exists: `anyy channel remove {name}` first, or choose another"
        )
    channels[name] = settings
    save_channels(profile.path, channels)
    started = _tell_gateway(profile, "channel.reload")
    if as_json:
        echo_json({"name": name, "started": started})
        return
    click.echo(f"channel {name} added ({settings.kind}, feeds {settings.target()}, token from ${settings.token_env})")
    click.echo("started by the running Gateway" if started else "it starts with the Gateway (`anyy gateway start`)")


@channel.command("list")
@with_profile
@_JSON
def list_command(profile: Profile, *, as_json: bool) -> None:
    """The channels with their state, paired senders and pairing codes waiting."""
    channels = _call(profile, "channel.list")
    if as_json:
        echo_json(channels)
        return
    if not channels:
        click.echo("no channels: `anyy channel add NAME --token-env VAR --session ID` adds one")
    for ch in channels:
        error = f" ({ch['error']})" if ch["error"] else ""
        click.echo(
            f"{ch['name']}  {ch['kind']}  {ch['state']}{error}  feeds {ch['target']}  "
            f"{ch['senders']} senders  {ch['codes']} codes waiting"
        )


@channel.command("show")
@click.argument("name")
@with_profile
@_JSON
def show_command(profile: Profile, name: str, *, as_json: bool) -> None:
    """One channel: its senders and their rights, the codes waiting, the latest replies."""
    detail = _call(profile, "channel.get", {"name": name})
    if as_json:
        echo_json(detail)
        return
    ch = detail["channel"]
    error = f" ({ch['error']})" if ch["error"] else ""
    click.echo(f"{ch['name']}  {ch['kind']}  {ch['state']}{error}  feeds {ch['target']}  token ${ch['token_env']}")
    for sender in detail["senders"]:
        owner = " (owner)" if sender["owner"] else ""
        click.echo(
            f"  sender {sender['sender']} {sender['label']}{owner}: {', '.join(sender['rights'])} "
            f"on session {sender['session_id']}, since {_when(sender['paired_at'])}"
        )
    for code in detail["codes"]:
        click.echo(
            f"  code {code['code']} for {code['sender']} {code['label']}, until {_when(code['expires_at'])}: "
            f"`anyy channel pair {code['code']}` approves"
        )
    for reply in detail["replies"]:
        state = "delivered" if reply["delivered"] else f"waiting ({reply['attempts']} attempts)"
        error = f" {reply['error']}" if reply["error"] else ""
        click.echo(f"  reply {reply['key']} to {reply['conversation']}: {state}{error}")


@channel.command("pair")
@click.argument("code")
@with_profile
@click.option("--rights", default="", help="talk, answer, stop, comma-separated (default: the channel's).")
@_JSON
def pair_command(profile: Profile, code: str, *, rights: str, as_json: bool) -> None:
    """Approve the sender that was given CODE (codes expire after an hour)."""
    chosen = [r.strip() for r in rights.split(",") if r.strip()]
    sender = _call(profile, "channel.pair", {"code": code, "rights": chosen})
    if as_json:
        echo_json(sender)
        return
    owner = " as the channel's owner" if sender["owner"] else ""
    click.echo(
        f"paired {sender['sender']} {sender['label']} on {sender['channel']}{owner}: "
        f"{', '.join(sender['rights'])} on session {sender['session_id']}"
    )


@channel.command("unpair")
@click.argument("name")
@click.argument("sender")
@with_profile
def unpair_command(profile: Profile, name: str, sender: str) -> None:
    """Take SENDER's rights away on channel NAME."""
    _call(profile, "channel.unpair", {"name": name, "sender": sender})
    click.echo(f"sender {sender} unpaired from {name}")


@channel.command("remove")
@click.argument("name")
@with_profile
def remove_command(profile: Profile, name: str) -> None:
    """Remove a channel from the profile; the running Gateway stops it and forgets its senders."""
    profile.require()
    channels = load_channels(profile.path)
    if name not in channels:
        raise click.UsageError(f"no channel {name!r}: `anyy channel list` shows them")
    del channels[name]
    save_channels(profile.path, channels)
    if not _tell_gateway(profile, "channel.forget", {"name": name}):
        with open_store(profile) as store:  # no Gateway owns the store now
            store.forget_channel(name)
    click.echo(f"channel {name} removed, with its senders, codes and replies")
