"""A loopback server speaking Telegram's Bot API over HTTP, as documented (core.telegram.org/bots/api), for
the methods anyy's Telegram channel uses: ``getMe``, ``getUpdates`` and ``sendMessage``.

It is honest where a client could be wrong: a wrong token is refused (401, as Telegram answers), updates
are served from the ``offset`` asked for and those below it are forgotten for good (confirmed, as Telegram
does), ``getUpdates`` holds the request up to ``timeout`` seconds when nothing is waiting (long polling),
and a text longer than 4096 characters, or empty, is refused (400). Parameters come as JSON or as a form
whose values are JSON, as python-telegram-bot sends them.

Tests write as users (:meth:`say`) and read what the bot sent (:meth:`wait_sent`). Runs uvicorn in its own
thread on a socket bound before it starts.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

TEXT_LIMIT = 4096
BOT_ID = 7000001


@dataclass
class Sent:
    chat_id: int
    text: str
    message_id: int


class FakeTelegram:
    def __init__(self, token: str) -> None:
        self.token = token
        self._lock = threading.Condition()
        self._updates: list[dict[str, Any]] = []  # not yet confirmed, in update_id order
        self._served: dict[int, dict[str, Any]] = {}  # every update, by id
        self._again: list[dict[str, Any]] = []  # confirmed updates to serve once more
        self._next_update = 100
        self._next_message = 1
        self.sent: list[Sent] = []
        self.offsets: list[int | None] = []  # the offset of every getUpdates, in order
        self.refuse_sends = 0  # the next N sendMessage calls fail with 500 (a platform outage)
        self._arrived: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._socket.bind(("127.0.0.1", 0))
        self._socket.listen(64)
        self.port: int = self._socket.getsockname()[1]
        app = Starlette(routes=[Route("/bot{token}/{method}", self._method, methods=["GET", "POST"])])
        config = uvicorn.Config(app, http="h11", lifespan="off", log_level="critical", access_log=False)
        self._server = _Server(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [self._socket]}, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> FakeTelegram:
        self._thread.start()
        if not self._server.ready.wait(10):
            raise RuntimeError("the fake Bot API server did not start within 10 s")
        return self

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(10)
        self._socket.close()

    def __enter__(self) -> FakeTelegram:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- what users do -----------------------------------------------------------------------------
    def say(self, user_id: int, text: str, *, chat_id: int | None = None, username: str = "") -> int:
        """A user writes to the bot; the update's id."""
        with self._lock:
            update_id = self._next_update
            self._next_update += 1
            message_id = self._next_message
            self._next_message += 1
            chat = chat_id if chat_id is not None else user_id
            update: dict[str, Any] = {
                "update_id": update_id,
                "message": {
                    "message_id": message_id,
                    "date": int(time.time()),
                    "chat": {"id": chat, "type": "private" if chat == user_id else "group"},
                    "from": {"id": user_id, "is_bot": False, "first_name": f"user{user_id}", "username": username}
                    if username
                    else {"id": user_id, "is_bot": False, "first_name": f"user{user_id}"},
                    "text": text,
                },
            }
            self._updates.append(update)
            self._served[update_id] = update
            self._lock.notify_all()
        self._poke()
        return update_id

    def redeliver(self, update_id: int) -> None:
        """Serve an update again although it was confirmed (a platform may deliver twice)."""
        with self._lock:
            self._again.append(self._served[update_id])
        self._poke()

    def _poke(self) -> None:
        loop, arrived = self._loop, self._arrived
        if loop is not None and arrived is not None:
            loop.call_soon_threadsafe(arrived.set)

    def wait_sent(self, count: int, timeout: float = 30.0) -> list[Sent]:
        """Once the bot sent at least ``count`` messages: all it sent."""
        with self._lock:
            if not self._lock.wait_for(lambda: len(self.sent) >= count, timeout):
                raise AssertionError(f"the bot sent {len(self.sent)} messages, not {count}: {self.sent}")
            return list(self.sent)

    def wait_until(self, done: Callable[[list[Sent]], bool], timeout: float = 60.0) -> list[Sent]:
        """Once ``done`` holds of what the bot sent: all it sent."""
        with self._lock:
            if not self._lock.wait_for(lambda: done(list(self.sent)), timeout):
                raise AssertionError("the bot did not send what was expected:\n" + "\n".join(s.text for s in self.sent))
            return list(self.sent)

    def wait_polled(self, offset: int, timeout: float = 30.0) -> None:
        """Once the bot asked for updates from ``offset`` (it confirmed those below)."""
        with self._lock:
            if not self._lock.wait_for(lambda: any(o is not None and o >= offset for o in self.offsets), timeout):
                raise AssertionError(f"the bot never polled from offset {offset}: {self.offsets}")

    # -- the Bot API -------------------------------------------------------------------------------
    async def _method(self, request: Request) -> JSONResponse:
        if request.path_params["token"] != self.token:
            return _error(401, "Unauthorized")
        params = await _params(request)
        method = request.path_params["method"]
        if method == "getMe":
            return _ok({"id": BOT_ID, "is_bot": True, "first_name": "anyy", "username": "anyy_test_bot"})
        if method == "getUpdates":
            return await self._get_updates(params)
        if method == "sendMessage":
            return self._send_message(params)
        return _error(404, "Not Found")

    async def _get_updates(self, params: dict[str, Any]) -> JSONResponse:
        offset = params.get("offset")
        timeout = float(params.get("timeout") or 0)
        if self._loop is None:
            self._loop, self._arrived = asyncio.get_running_loop(), asyncio.Event()
        assert self._arrived is not None
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            self._arrived.clear()
            with self._lock:
                if offset is not None:  # confirmed: below the offset, forgotten
                    self._updates = [u for u in self._updates if u["update_id"] >= int(offset)]
                found = [*self._again, *self._updates][: int(params.get("limit") or 100)]
                self._again.clear()
                if not self.offsets or self.offsets[-1] != offset:
                    self.offsets.append(offset)
                    self._lock.notify_all()
            left = deadline - asyncio.get_running_loop().time()
            if found or left <= 0:
                return _ok(found)
            try:
                await asyncio.wait_for(self._arrived.wait(), left)
            except TimeoutError:
                return _ok([])

    def _send_message(self, params: dict[str, Any]) -> JSONResponse:
        text = str(params.get("text") or "")
        if not text.strip():
            return _error(400, "Bad Request: message text is empty")
        if len(text) > TEXT_LIMIT:
            return _error(400, "Bad Request: message is too long")
        try:
            chat_id = int(params["chat_id"])
        except (KeyError, ValueError):
            return _error(400, "Bad Request: chat not found")
        with self._lock:
            if self.refuse_sends:
                self.refuse_sends -= 1
                return _error(500, "Internal Server Error")
            message_id = self._next_message
            self._next_message += 1
            self.sent.append(Sent(chat_id=chat_id, text=text, message_id=message_id))
            self._lock.notify_all()
        return _ok(
            {
                "message_id": message_id,
                "date": int(time.time()),
                "chat": {"id": chat_id, "type": "private"},
                "from": {"id": BOT_ID, "is_bot": True, "first_name": "anyy"},
                "text": text,
            }
        )


async def _params(request: Request) -> dict[str, Any]:
    if request.method == "GET":
        raw: dict[str, Any] = dict(request.query_params)
    elif request.headers.get("content-type", "").startswith("application/json"):
        body = await request.body()
        raw = json.loads(body) if body else {}
    else:
        raw = dict(await request.form())
    decoded: dict[str, Any] = {}
    for key, value in raw.items():
        decoded[key] = value
        if isinstance(value, str) and key != "text":  # a text is sent as it is, never as JSON
            with contextlib.suppress(ValueError):
                decoded[key] = json.loads(value)
    return decoded


def _ok(result: Any) -> JSONResponse:
    return JSONResponse({"ok": True, "result": result})


def _error(code: int, description: str) -> JSONResponse:
    return JSONResponse({"ok": False, "error_code": code, "description": description}, status_code=code)


class _Server(uvicorn.Server):
    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.ready = threading.Event()

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        self.ready.set()
