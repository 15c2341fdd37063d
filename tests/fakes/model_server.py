"""A fake model server on loopback: OpenAI Chat Completions, OpenAI Responses and Anthropic Messages, all
streamed (SSE).

The real SDKs, and the real harness CLIs (Claude Code, Codex, pi), talk to it over real HTTP, so they are
tested with their actual parsers, timeouts and connection handling. Each request takes the next scripted
reply from one queue, whichever API it uses, or, when the queue is empty and the server has a
``responder``, the reply that function computes from the request (the harness tests answer from the
conversation they receive). A reply is written in neutral terms (:class:`Reply`, :class:`ErrorReply`,
in :mod:`tests.fakes.wire`) and rendered in the wire format of the endpoint that received it. Every
request is recorded (:class:`Received`) with its JSON body and whether the client went away before the
answer was complete; ``wait_for`` blocks until a recorded request matches.

A request for a session's title (anyy asks for one in the background after a chat's first answer, U1)
is answered apart, with ``TITLE_REPLY``: it takes no scripted reply and is kept in ``title_requests``,
not in ``received``, so tests that script turns are not disturbed by it.

The server runs uvicorn in a thread of its own, on a socket bound to 127.0.0.1 port 0 before the thread
starts, so it accepts connections at once; ``start`` still waits until uvicorn reports it is serving.
"""

from __future__ import annotations

import collections
import json
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from anyy.domain.titles import TITLE_INSTRUCTIONS
from anyy.providers.gates import Flag
from tests.fakes.wire import (
    ErrorReply,
    Reply,
    ToolCall,
    anthropic_events,
    openai_events,
    responses_events,
    sse,
)

__all__ = ["ErrorReply", "FakeModelServer", "Received", "Reply", "Responder", "ToolCall"]


@dataclass
class Received:
    path: str
    body: dict[str, Any]
    headers: dict[str, str]
    disconnected: Flag = field(default_factory=Flag)  # the client left before the answer was complete


class _Cut(Exception):
    """Raised inside the app to make uvicorn drop the connection mid-body."""


Responder = Callable[["Received"], Reply | ErrorReply]
TITLE_REPLY = "Fake model title"
_TITLE_MARK = TITLE_INSTRUCTIONS[:60]


class FakeModelServer:
    def __init__(self, responder: Responder | None = None) -> None:
        self.responder = responder
        self._lock = threading.Lock()
        self._arrived = threading.Condition(self._lock)
        self._replies: collections.deque[Reply | ErrorReply] = collections.deque()
        self._received: list[Received] = []
        self.title_requests: list[Received] = []
        self._holds: list[Flag] = []
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._socket.bind(("127.0.0.1", 0))
        self._socket.listen(64)
        self.port: int = self._socket.getsockname()[1]
        app = Starlette(
            routes=[
                Route("/v1/chat/completions", self._openai, methods=["POST"]),
                Route("/v1/messages", self._anthropic, methods=["POST"]),
                Route("/v1/responses", self._responses, methods=["POST"]),
            ]
        )
        config = uvicorn.Config(app, http="h11", lifespan="off", log_level="critical", access_log=False)
        self._server = _Server(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [self._socket]}, daemon=True)

    # -- life -----------------------------------------------------------------------------------------
    @property
    def openai_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def anthropic_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        self._thread.start()
        if not self._server.ready.wait(10):
            raise RuntimeError("the fake model server did not start within 10 s")

    def stop(self) -> None:
        self.reset()
        self._server.should_exit = True
        self._thread.join(10)
        self._socket.close()

    def reset(self) -> None:
        """Forget replies and requests; release any stream still held (between tests)."""
        with self._lock:
            self._replies.clear()
            self._received.clear()
            self.title_requests.clear()
            holds, self._holds = self._holds, []
        for hold in holds:
            hold.set()

    # -- scripting ------------------------------------------------------------------------------------
    def enqueue(self, *replies: Reply | ErrorReply) -> None:
        with self._lock:
            self._replies.extend(replies)
            self._holds.extend(r.hold for r in replies if isinstance(r, Reply))

    @property
    def received(self) -> list[Received]:
        with self._lock:
            return list(self._received)

    def wait_for(self, match: Callable[[Received], bool], timeout: float = 30.0) -> Received:
        """The first recorded request that ``match`` accepts, waiting for it up to ``timeout`` seconds."""
        with self._arrived:
            found: list[Received] = []

            def seen() -> bool:
                found[:] = [r for r in self._received if match(r)][:1]
                return bool(found)

            if not self._arrived.wait_for(seen, timeout):
                raise TimeoutError(f"no matching request reached the fake model server within {timeout:g} s")
            return found[0]

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._replies)

    # -- endpoints ------------------------------------------------------------------------------------
    async def _take(self, request: Request) -> tuple[Received, Reply | ErrorReply]:
        received = Received(path=request.url.path, body=await request.json(), headers=dict(request.headers))
        if _TITLE_MARK in json.dumps(received.body):
            with self._lock:
                self.title_requests.append(received)
            return received, Reply(text=[TITLE_REPLY])
        with self._lock:
            self._received.append(received)
            reply = self._replies.popleft() if self._replies else None
            self._arrived.notify_all()
        if reply is None and self.responder is not None:
            reply = self.responder(received)
            if isinstance(reply, Reply):
                with self._lock:
                    self._holds.append(reply.hold)
        if reply is None:
            reply = ErrorReply(500, "fake model server: no reply was scripted for this request", type="api_error")
        return received, reply

    async def _openai(self, request: Request) -> Response:
        received, reply = await self._take(request)
        if isinstance(reply, ErrorReply):
            error = {"message": reply.message, "type": reply.type, "param": None, "code": reply.code}
            return JSONResponse({"error": error}, status_code=reply.status, headers=reply.headers)
        return _SSE(list(openai_events(reply, received.body.get("model", ""))), reply, received)

    async def _anthropic(self, request: Request) -> Response:
        received, reply = await self._take(request)
        if isinstance(reply, ErrorReply):
            error = {"type": reply.type, "message": reply.message}
            return JSONResponse({"type": "error", "error": error}, status_code=reply.status, headers=reply.headers)
        return _SSE(list(anthropic_events(reply, received.body.get("model", ""))), reply, received)

    async def _responses(self, request: Request) -> Response:
        received, reply = await self._take(request)
        if isinstance(reply, ErrorReply):
            error = {"message": reply.message, "type": reply.type, "param": None, "code": reply.code}
            return JSONResponse({"error": error}, status_code=reply.status, headers=reply.headers)
        return _SSE(list(responses_events(reply, received.body.get("model", ""))), reply, received)


class _Server(uvicorn.Server):
    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.ready = threading.Event()

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        self.ready.set()


class _SSE(Response):
    """Sends the events one by one, applying the reply's faults, and notices a client that goes away."""

    def __init__(self, events: list[bytes], reply: Reply, received: Received) -> None:
        self.status_code = 200
        self.raw_headers = [(b"content-type", b"text/event-stream; charset=utf-8"), (b"cache-control", b"no-cache")]
        self.background = None
        self.events = events
        self.reply = reply
        self.received = received

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        reply = self.reply
        complete = False
        await send({"type": "http.response.start", "status": 200, "headers": self.raw_headers})
        async with anyio.create_task_group() as group:

            async def watch() -> None:
                while (await receive())["type"] != "http.disconnect":
                    pass
                if not complete:
                    self.received.disconnected.set()
                    group.cancel_scope.cancel()

            group.start_soon(watch)
            for index, event in enumerate(self.events):
                if index == reply.hold_at:
                    await reply.hold.wait()
                if index == reply.cut_at:
                    raise _Cut
                if index == reply.end_at:
                    break
                body = self._error_event(scope) if index == reply.error_at else event
                await send({"type": "http.response.body", "body": body, "more_body": True})
                if index == reply.error_at:
                    break
            complete = True
            await send({"type": "http.response.body", "body": b"", "more_body": False})
            group.cancel_scope.cancel()

    def _error_event(self, scope: Scope) -> bytes:
        error = {"type": self.reply.error_type, "message": self.reply.error_message}
        if scope["path"].endswith("/messages"):
            return sse({"type": "error", "error": error}, event="error")
        if scope["path"].endswith("/responses"):
            failed = {"id": "resp_fake", "object": "response", "status": "failed", "error": error, "output": []}
            return sse({"type": "response.failed", "response": failed}, event="response.failed")
        return sse({"error": error})
