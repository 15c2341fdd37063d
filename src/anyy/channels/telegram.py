"""Telegram (SPEC L1) on python-telegram-bot: long polling of ``getUpdates``, ``sendMessage`` for replies.

The library is imported in a worker thread when a Telegram channel starts, never at the Gateway's start
on the event loop. The bot's token is in every request's URL: the HTTP client's request log is filtered so
that it never writes the token, and errors are reported without it.
"""

from __future__ import annotations

import asyncio
import datetime
import importlib
import logging
from typing import Any

from anyy.channels.links import Message, SendFailed
from anyy.profiles.channels_file import ChannelSettings

TELEGRAM_API = "https://api.telegram.org"
TEXT_LIMIT = 4096  # the Bot API's longest message text


_SECRETS: set[str] = set()  # the tokens of the channels running in this process
_made = logging.getLogRecordFactory()


def _redacting_factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
    """Every log record of the process, a token it would carry replaced: the HTTP client logs each
    request's URL (where the Bot API puts the token), and the library logs its URLs at debug level."""
    record = _made(*args, **kwargs)
    if _SECRETS:
        try:
            message = record.getMessage()
        except Exception:  # arguments that do not fit the message: logging reports it when it formats
            return record
        if any(secret in message for secret in _SECRETS):
            for secret in _SECRETS:
                message = message.replace(secret, "<token>")
            record.msg, record.args = message, None
    return record


class TelegramLink:
    limit = TEXT_LIMIT

    def __init__(self, name: str, settings: ChannelSettings, token: str) -> None:
        self.name = name
        self.settings = settings
        self._token = token
        self._bot: Any = None

    def _clean(self, exc: BaseException) -> str:
        return (str(exc) or type(exc).__name__).replace(self._token, "<token>")

    async def open(self) -> None:
        telegram = await asyncio.to_thread(importlib.import_module, "telegram")
        request_module = await asyncio.to_thread(importlib.import_module, "telegram.request")
        _SECRETS.add(self._token)
        if logging.getLogRecordFactory() is not _redacting_factory:
            logging.setLogRecordFactory(_redacting_factory)
        base = (self.settings.api_url or TELEGRAM_API).rstrip("/")
        poll = self.settings.poll_seconds
        self._bot = telegram.Bot(
            self._token,
            base_url=f"{base}/bot",
            request=request_module.HTTPXRequest(connect_timeout=10.0, read_timeout=30.0),
            get_updates_request=request_module.HTTPXRequest(connect_timeout=10.0, read_timeout=poll + 10.0),
        )
        try:
            await self._bot.initialize()  # getMe: a wrong token is told here, once
        except Exception as exc:
            raise RuntimeError(f"Telegram refused the bot's token or cannot be reached: {self._clean(exc)}") from None

    async def poll(self, position: str) -> list[Message]:
        offset = int(position) + 1 if position else None
        try:
            updates = await self._bot.get_updates(
                offset=offset, timeout=self.settings.poll_seconds, allowed_updates=["message"]
            )
        except Exception as exc:
            raise RuntimeError(f"getUpdates failed: {self._clean(exc)}") from None
        return [_message(update) for update in updates]

    async def send(self, conversation: str, text: str) -> str:
        error = importlib.import_module("telegram.error")
        try:
            sent = await self._bot.send_message(chat_id=int(conversation), text=text)
        except error.RetryAfter as exc:
            wait = exc.retry_after
            seconds = wait.total_seconds() if isinstance(wait, datetime.timedelta) else float(wait)
            raise SendFailed(f"Telegram asks to wait {seconds:.0f} s", retry_after=seconds) from None
        except (error.BadRequest, error.Forbidden) as exc:
            raise SendFailed(f"Telegram refused the message: {self._clean(exc)}", permanent=True) from None
        except Exception as exc:
            raise SendFailed(f"sendMessage failed: {self._clean(exc)}") from None
        return str(sent.message_id)

    async def aclose(self) -> None:
        if self._bot is not None:
            await self._bot.shutdown()
        _SECRETS.discard(self._token)


def _message(update: Any) -> Message:
    key = str(update.update_id)
    message = update.message
    if message is None or message.from_user is None:  # nothing to take: only the position moves
        return Message(key=key, position=key, sender="", conversation="", text="")
    user = message.from_user
    return Message(
        key=key,
        position=key,
        sender=str(user.id),
        conversation=str(message.chat.id),
        text=message.text or message.caption or "",
        label=f"@{user.username}" if user.username else user.full_name,
    )
