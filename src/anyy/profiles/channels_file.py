"""The profile's channels (SPEC L1): ``channels.toml``, one ``[channels.NAME]`` table per connection.

They live in a file of their own, beside ``config.toml``, because ``anyy channel add`` and ``remove``
rewrite it: ``config.toml`` keeps the comments a person wrote. A credential is never written here:
``token_env`` names the environment variable of the Gateway that holds it, as ``api_key_env`` does for
a provider.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Annotated, Literal

import msgspec

from anyy.domain.channels import DEFAULT_RIGHTS, check_rights
from anyy.domain.errors import InvalidInput
from anyy.profiles.names import NAME_RULE, is_valid_name
from anyy.profiles.tomlfile import FileError, convert, read_toml

CHANNELS_FILE = "channels.toml"
KINDS = ("telegram", "email")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class ChannelSettings(msgspec.Struct, kw_only=True, forbid_unknown_fields=True, omit_defaults=True):
    kind: Literal["telegram", "email"]
    token_env: str  # the environment variable holding the bot's token (e-mail: the mailbox's password)
    session: str = ""  # the session it feeds (an id), or
    resident: str = ""  # the resident it feeds (a name)
    api_url: str = ""  # Telegram: the Bot API server; "" is Telegram's own
    poll_seconds: Annotated[int, msgspec.Meta(ge=1, le=300)] = 30  # long polling: seconds a poll waits
    rights: list[str] = msgspec.field(default_factory=lambda: list(DEFAULT_RIGHTS))  # given at pairing
    # e-mail: the agent's own address, its mailbox (IMAP, read) and its outgoing server (SMTP, send)
    address: str = ""
    imap_url: str = ""  # imaps://host[:993] or imap://host:port (plain: loopback only)
    smtp_url: str = ""  # smtps://host[:465], smtp://host:587 (STARTTLS) or smtp://127.0.0.1:port (plain)
    username: str = ""  # the login of both servers; "" is the address

    def target(self) -> str:
        return f"session {self.session}" if self.session else f"resident {self.resident}"


class ChannelsFile(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    channels: dict[str, ChannelSettings] = {}


def channels_path(profile_dir: Path) -> Path:
    return profile_dir / CHANNELS_FILE


def load_channels(profile_dir: Path) -> dict[str, ChannelSettings]:
    """The profile's channels by name (none when the file does not exist), each checked."""
    path = channels_path(profile_dir)
    if not path.exists():
        return {}
    raw = read_toml(path, CHANNELS_FILE)
    loaded = convert(raw, ChannelsFile, label=CHANNELS_FILE, path=path)
    for name, settings in loaded.channels.items():
        try:
            check_channel(name, settings)
        except InvalidInput as exc:
            raise FileError(f"{CHANNELS_FILE} ({path}): {exc}") from None
    return dict(sorted(loaded.channels.items()))


def check_channel(name: str, settings: ChannelSettings) -> None:
    if not is_valid_name(name):
        raise InvalidInput(f"invalid channel name {name!r}: use {NAME_RULE}")
    if not _ENV_NAME.fullmatch(settings.token_env):
        raise InvalidInput(
            f"[channels.{name}] token_env must name an environment variable (e.g. TELEGRAM_BOT_TOKEN), "
            f"not {settings.token_env!r}: the token itself is never written in a file"
        )
    if bool(settings.session) == bool(settings.resident):
        raise InvalidInput(f"[channels.{name}] needs exactly one of 'session' (an id) or 'resident' (a name)")
    if settings.api_url and not settings.api_url.startswith(("http://", "https://")):
        raise InvalidInput(f"[channels.{name}] api_url must start with http:// or https://, not {settings.api_url!r}")
    if settings.kind == "email":
        check_email(name, settings)
    check_rights(settings.rights)


def check_email(name: str, settings: ChannelSettings) -> None:
    if "@" not in settings.address or any(c.isspace() for c in settings.address):
        raise InvalidInput(f'[channels.{name}] an e-mail channel needs its own address (address = "agent@example.org")')
    for key, schemes in (("imap_url", ("imap://", "imaps://")), ("smtp_url", ("smtp://", "smtps://"))):
        value = getattr(settings, key)
        if not value.startswith(schemes):
            raise InvalidInput(
                f"[channels.{name}] an e-mail channel needs {key} starting with {' or '.join(schemes)}, not {value!r}"
            )


def save_channels(profile_dir: Path, channels: dict[str, ChannelSettings]) -> None:
    """Write the file whole, atomically (a crash leaves the old file or the new one)."""
    path = channels_path(profile_dir)
    header = (
        "# anyy channels (docs/channels.md): written by `anyy channel add` and `remove`; edit freely.\n"
        "# Tokens are never written here: token_env names the Gateway's environment variable holding one.\n\n"
    )
    body = "\n".join(_table(name, settings) for name, settings in sorted(channels.items()))
    tmp = path.with_suffix(".toml.tmp")
    tmp.write_text(header + body, encoding="utf-8")
    os.replace(tmp, path)


def _table(name: str, settings: ChannelSettings) -> str:
    """One ``[channels.NAME]`` table: strings, integers and lists of strings (a JSON string is a valid TOML
    basic string; msgspec's TOML writer needs a library anyy does not otherwise use)."""
    lines = [f"[channels.{name}]"]
    for key, value in msgspec.to_builtins(settings).items():
        if isinstance(value, bool | int):
            lines.append(f"{key} = {str(value).lower()}")
        else:
            lines.append(f"{key} = {json.dumps(value, ensure_ascii=False)}")
    return "\n".join(lines) + "\n"
