"""Methods on channels (L1, L2): list and read them, approve a pairing code, remove a sender, and take
a changed ``channels.toml`` in."""

from __future__ import annotations

from anyy.api import channels as wire
from anyy.api import methods as api
from anyy.api.params import NoParams
from anyy.channels.service import Channels
from anyy.domain.channels import Pairing, PendingCode, Reply, check_rights
from anyy.domain.errors import NotFound
from anyy.gateway.state import Connection, Gateway
from anyy.gateway.table import TABLE
from anyy.profiles.channels_file import ChannelSettings, load_channels


def _channels(gw: Gateway) -> Channels:
    if gw.channels is None:
        raise NotFound("this Gateway runs no channels")
    return gw.channels


def _sender(pairing: Pairing) -> wire.ChannelSender:
    return wire.ChannelSender(
        channel=pairing.channel,
        sender=pairing.sender,
        label=pairing.label,
        session_id=pairing.session_id,
        rights=list(pairing.rights),
        owner=pairing.owner,
        paired_at=pairing.paired_at,
    )


def _code(code: PendingCode) -> wire.ChannelCode:
    return wire.ChannelCode(
        channel=code.channel, code=code.code, sender=code.sender, label=code.label, expires_at=code.expires_at
    )


def _reply(reply: Reply) -> wire.ChannelReply:
    return wire.ChannelReply(
        key=reply.key,
        conversation=reply.conversation,
        text=reply.text,
        delivered=reply.delivered_at is not None,
        attempts=reply.attempts,
        error=reply.error,
    )


async def _view(gw: Gateway, name: str, settings: ChannelSettings) -> wire.Channel:
    channels = _channels(gw)
    state, error = channels.status(name)
    running = channels.running.get(name)
    pairings = await gw.store(lambda s: s.list_pairings(name))
    codes = [c for c in await gw.store(lambda s: s.list_channel_codes()) if c.channel == name]
    return wire.Channel(
        name=name,
        kind=settings.kind,
        target=settings.target(),
        session_id=running.session_id if running is not None else "",
        token_env=settings.token_env,
        state=state,
        error=error,
        senders=len(pairings),
        codes=len(codes),
    )


@TABLE.method(api.CHANNEL_LIST)
async def list_(gw: Gateway, conn: Connection | None, p: NoParams) -> list[wire.Channel]:
    """The profile's channels (``channels.toml``) with their state, paired senders and codes waiting."""
    return [await _view(gw, name, settings) for name, settings in load_channels(gw.profile.path).items()]


@TABLE.method(api.CHANNEL_GET)
async def get(gw: Gateway, conn: Connection | None, p: wire.ChannelRef) -> wire.ChannelDetail:
    """One channel: its paired senders with their rights, the pairing codes waiting, the latest replies."""
    settings = load_channels(gw.profile.path).get(p.name)
    if settings is None:
        raise NotFound(f"no channel {p.name!r}: `anyy channel list` shows them")
    pairings = await gw.store(lambda s: s.list_pairings(p.name))
    codes = [c for c in await gw.store(lambda s: s.list_channel_codes()) if c.channel == p.name]
    replies = await gw.store(lambda s: s.list_replies(p.name, 20))
    return wire.ChannelDetail(
        channel=await _view(gw, p.name, settings),
        senders=[_sender(x) for x in pairings],
        codes=[_code(c) for c in codes],
        replies=[_reply(r) for r in replies],
    )


@TABLE.method(api.CHANNEL_PAIR)
async def pair(gw: Gateway, conn: Connection | None, p: wire.ChannelPairParams) -> wire.ChannelSender:
    """Approve the sender a pairing code names, with ``rights`` (talk, answer, stop; empty: the channel's
    configured rights) on the channel's session. The first sender approved on a channel is its owner."""
    rights = check_rights(p.rights) if p.rights else None
    return _sender(await _channels(gw).pair(p.code, rights))


@TABLE.method(api.CHANNEL_UNPAIR)
async def unpair(gw: Gateway, conn: Connection | None, p: wire.ChannelUnpairParams) -> int:
    """Take a sender's rights away on a channel (every session); how many pairings were removed."""
    removed: int = await gw.store(lambda s: s.unpair_sender(p.name, p.sender))
    if not removed:
        raise NotFound(f"sender {p.sender!r} is not paired on channel {p.name!r}: `anyy channel show {p.name}`")
    return removed


@TABLE.method(api.CHANNEL_RELOAD)
async def reload(gw: Gateway, conn: Connection | None, p: NoParams) -> list[str]:
    """Read ``channels.toml`` again: new channels start, changed ones restart, removed ones stop."""
    return await _channels(gw).reload()


@TABLE.method(api.CHANNEL_FORGET)
async def forget(gw: Gateway, conn: Connection | None, p: wire.ChannelRef) -> None:
    """Stop a channel and remove what the Gateway recorded of it (senders, codes, position, replies)."""
    await _channels(gw).forget(p.name)
