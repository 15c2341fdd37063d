"""A fake model server on loopback: OpenAI Chat Completions and Anthropic Messages, both streamed (SSE).

The real SDKs talk to it over real HTTP, so the adapters are tested with their actual parsers, timeouts
and connection handling. Each request takes the next scripted reply from one queue, whichever API it
uses; a reply is written in neutral terms (:class:`Reply`, :class:`ErrorReply`) and rendered in the
wire format of the endpoint that received it. Every request is recorded (:class:`Received`) with its
JSON body and whether the client went away before the answer was complete.

The server runs uvicorn in a thread of its own, on a socket bound to 127.0.0.1 port 0 before the thread
starts, so it accepts connections at once; ``start`` still waits until uvicorn reports it is serving.
"""

from __future__ import annotations

import collections
import json
import socket
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from anyy.providers.gates import Flag


@dataclass
class ToolCall:
    """A tool call to stream; ``raw_arguments`` replaces the JSON of ``arguments`` (to send broken JSON)."""

    name: str
    arguments: dict[str, Any]
    call_id: str = ""
    raw_arguments: str | None = None

    @property
    def json(self) -> str:
        return self.raw_arguments if self.raw_arguments is not None else json.dumps(self.arguments)


@dataclass
class Reply:
    """A streamed answer. ``text`` pieces become one delta each; ``finish`` is the wire's own word
    (default: tool_calls/tool_use when there are calls, else stop/end_turn).

    Faults, counted in wire events (SSE messages) from the start of the stream:
    ``hold_at``: wait there until ``hold`` is set (tests of cancellation); ``cut_at``: drop the connection
    there without ending the body; ``end_at``: end the body there cleanly, leaving out the rest (no finish,
    no ``[DONE]``); ``error_at``: send the API's in-stream error event there, then end.
    """

    text: Sequence[str] = ()
    thinking: Sequence[str] = ()
    tool_calls: Sequence[ToolCall] = ()
    input_tokens: int = 11
    output_tokens: int = 7
    cache_read: int = 0
    cache_write: int = 0
    usage: bool = True
    finish: str | None = None
    hold_at: int | None = None
    hold: Flag = field(default_factory=Flag)
    cut_at: int | None = None
    end_at: int | None = None
    error_at: int | None = None
    error_type: str = "overloaded_error"
    error_message: str = "Overloaded"


@dataclass
class ErrorReply:
    """An HTTP error answer, rendered as the API's JSON error body."""

    status: int
    message: str
    type: str = "invalid_request_error"
    code: str | None = None
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Received:
    path: str
    body: dict[str, Any]
    headers: dict[str, str]
    disconnected: Flag = field(default_factory=Flag)  # the client left before the answer was complete


class _Cut(Exception):
    """Raised inside the app to make uvicorn drop the connection mid-body."""


class FakeModelServer:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._replies: collections.deque[Reply | ErrorReply] = collections.deque()
        self._received: list[Received] = []
        self._holds: list[Flag] = []
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._socket.bind(("127.0.0.1", 0))
        self._socket.listen(64)
        self.port: int = self._socket.getsockname()[1]
        app = Starlette(
            routes=[
                Route("/v1/chat/completions", self._openai, methods=["POST"]),
                Route("/v1/messages", self._anthropic, methods=["POST"]),
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

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._replies)

    # -- endpoints ------------------------------------------------------------------------------------
    async def _take(self, request: Request) -> tuple[Received, Reply | ErrorReply]:
        received = Received(path=request.url.path, body=await request.json(), headers=dict(request.headers))
        with self._lock:
            self._received.append(received)
            reply = self._replies.popleft() if self._replies else None
        if reply is None:
            reply = ErrorReply(500, "fake model server: no reply was scripted for this request", type="api_error")
        return received, reply

    async def _openai(self, request: Request) -> Response:
        received, reply = await self._take(request)
        if isinstance(reply, ErrorReply):
            error = {"message": reply.message, "type": reply.type, "param": None, "code": reply.code}
            return JSONResponse({"error": error}, status_code=reply.status, headers=reply.headers)
        return _SSE(list(_openai_events(reply, received.body.get("model", ""))), reply, received)

    async def _anthropic(self, request: Request) -> Response:
        received, reply = await self._take(request)
        if isinstance(reply, ErrorReply):
            error = {"type": reply.type, "message": reply.message}
            return JSONResponse({"type": "error", "error": error}, status_code=reply.status, headers=reply.headers)
        return _SSE(list(_anthropic_events(reply, received.body.get("model", ""))), reply, received)


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
            return _sse({"type": "error", "error": error}, event="error")
        return _sse({"error": error})


def _sse(data: dict[str, Any] | str, event: str | None = None) -> bytes:
    text = data if isinstance(data, str) else json.dumps(data)
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {text}\n\n".encode()


def _pieces(text: str, size: int = 5) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def _openai_events(reply: Reply, model: str) -> Iterator[bytes]:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return _sse(
            {
                "id": "chatcmpl-fake",
                "object": "chat.completion.chunk",
                "created": 0,
                "model": model,
                "choices": [choice],
            }
        )

    yield chunk({"role": "assistant", "content": ""})
    for piece in reply.thinking:
        yield chunk({"reasoning_content": piece})
    for piece in reply.text:
        yield chunk({"content": piece})
    for index, call in enumerate(reply.tool_calls):
        call_id = call.call_id or f"call_{index}"
        head = {"index": index, "id": call_id, "type": "function", "function": {"name": call.name, "arguments": ""}}
        yield chunk({"tool_calls": [head]})
        for piece in _pieces(call.json):
            yield chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
    yield chunk({}, reply.finish or ("tool_calls" if reply.tool_calls else "stop"))
    if reply.usage:
        usage = {
            "prompt_tokens": reply.input_tokens + reply.cache_read,
            "completion_tokens": reply.output_tokens,
            "total_tokens": reply.input_tokens + reply.cache_read + reply.output_tokens,
            "prompt_tokens_details": {"cached_tokens": reply.cache_read},
        }
        yield _sse(
            {
                "id": "chatcmpl-fake",
                "object": "chat.completion.chunk",
                "created": 0,
                "model": model,
                "choices": [],
                "usage": usage,
            }
        )
    yield _sse("[DONE]")


def _anthropic_events(reply: Reply, model: str) -> Iterator[bytes]:
    def event(name: str, **data: Any) -> bytes:
        return _sse({"type": name, **data}, event=name)

    usage = {
        "input_tokens": reply.input_tokens,
        "output_tokens": 1,
        "cache_read_input_tokens": reply.cache_read,
        "cache_creation_input_tokens": reply.cache_write,
    }
    message: dict[str, Any] = {
        "id": "msg_fake",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": usage,
    }
    yield event("message_start", message=message)
    index = 0
    if reply.thinking:
        yield event(
            "content_block_start", index=index, content_block={"type": "thinking", "thinking": "", "signature": ""}
        )
        for piece in reply.thinking:
            yield event("content_block_delta", index=index, delta={"type": "thinking_delta", "thinking": piece})
        yield event("content_block_delta", index=index, delta={"type": "signature_delta", "signature": "sig"})
        yield event("content_block_stop", index=index)
        index += 1
    if reply.text:
        yield event("content_block_start", index=index, content_block={"type": "text", "text": ""})
        yield _sse({"type": "ping"}, event="ping")
        for piece in reply.text:
            yield event("content_block_delta", index=index, delta={"type": "text_delta", "text": piece})
        yield event("content_block_stop", index=index)
        index += 1
    for number, call in enumerate(reply.tool_calls):
        block = {"type": "tool_use", "id": call.call_id or f"toolu_{number}", "name": call.name, "input": {}}
        yield event("content_block_start", index=index, content_block=block)
        for piece in _pieces(call.json):
            yield event("content_block_delta", index=index, delta={"type": "input_json_delta", "partial_json": piece})
        yield event("content_block_stop", index=index)
        index += 1
    stop = reply.finish or ("tool_use" if reply.tool_calls else "end_turn")
    delta_usage = {"output_tokens": reply.output_tokens} if reply.usage else {"output_tokens": 0}
    yield event("message_delta", delta={"stop_reason": stop, "stop_sequence": None}, usage=delta_usage)
    yield event("message_stop")
