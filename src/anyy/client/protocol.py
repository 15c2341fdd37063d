"""The client's one request/response core, without I/O: requests encoded with their ids, the Gateway's
frames decoded at the edge into a :class:`Reply` (its result read into the method's result type of
:mod:`anyy.api`) or an event of the wire's event union (``anyy.api.RuntimeEvent``). Both front ends
(:mod:`anyy.client.sync`, :mod:`anyy.client.aio`) are transports around it, as httpx's clients are around
one model of requests and responses."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeAlias, TypeVar, overload

import msgspec

from anyy.api.events import RuntimeEvent
from anyy.api.methods import MethodSpec
from anyy.client.errors import ProtocolError, call_failed
from commons import jsonrpc

T = TypeVar("T")

# Events and replies may be large (a whole session's history page); the Gateway accepts 16 MiB frames.
MAX_FRAME = 16 * 1024 * 1024
CONNECT_TIMEOUT = 5.0

Event: TypeAlias = RuntimeEvent
Method: TypeAlias = MethodSpec[Any, Any] | str  # a method of anyy.api (its result typed), or a bare name


def connection_options(token: str, *, timeout: float, agent: str, ssl: Any = None) -> dict[str, Any]:
    """How both front ends open their WebSocket (the websockets library's ``connect`` arguments); ``ssl``: the
    context pinning a TLS Gateway's certificate (O1)."""
    extra = {} if ssl is None else {"ssl": ssl}
    return extra | {
        "additional_headers": {"Authorization": f"Bearer {token}"},
        "open_timeout": timeout,
        "max_size": MAX_FRAME,
        "compression": None,  # loopback: deflate would only cost time
        "proxy": None,  # loopback only: never through a proxy from the environment
        "ping_interval": None,  # a long session.wait must not be cut by a missed ping
        "user_agent_header": agent,
    }


def _null() -> msgspec.Raw:
    return msgspec.Raw(b"null")


class _Frame(msgspec.Struct):
    """A reply (``id``, then ``result`` or ``error``) or a notification (``method``, ``params``)."""

    id: jsonrpc.Id | msgspec.UnsetType = msgspec.UNSET
    method: str | msgspec.UnsetType = msgspec.UNSET
    params: msgspec.Raw = msgspec.field(default_factory=_null)
    result: msgspec.Raw = msgspec.field(default_factory=_null)
    error: jsonrpc.ErrorObject | None = None


_frames = msgspec.json.Decoder(_Frame)
_events: msgspec.json.Decoder[Event] = msgspec.json.Decoder(Event)


@dataclass(frozen=True)
class Reply:
    """The answer to one request: :meth:`result` reads it, or raises the error it carries."""

    id: jsonrpc.Id
    raw: msgspec.Raw
    error: jsonrpc.ErrorObject | None = None

    @overload
    def result(self) -> Any: ...
    @overload
    def result(self, type: type[T]) -> T: ...
    def result(self, type: Any = Any) -> Any:
        if self.error is not None:
            raise call_failed(self.error.code, self.error.message, self.error.data)
        try:
            return msgspec.json.decode(self.raw, type=type)
        except msgspec.ValidationError as exc:
            raise ProtocolError(f"the Gateway's reply does not match what this client expects: {exc}") from None


Message: TypeAlias = Reply | Event


def method_name(method: Method) -> str:
    return method if isinstance(method, str) else method.name


def result_type(method: Method) -> Any:
    """What the method's result is read as: its anyy.api type, or plain JSON for a bare name."""
    return Any if isinstance(method, str) else method.result


class Protocol:
    """Request ids and frame decoding for one connection."""

    def __init__(self) -> None:
        self._next_id = 0

    def request(self, method: Method, params: Any = None) -> tuple[int, bytes]:
        """The next request id and its frame; ``params`` an anyy.api params struct (or a dict)."""
        self._next_id += 1
        name = method_name(method)
        frame = jsonrpc.encode({"jsonrpc": "2.0", "method": name, "params": params or {}, "id": self._next_id})
        return self._next_id, frame

    def read(self, frame: bytes | str) -> Message | None:
        """A decoded frame: a reply, an event, or None for a notification this client does not know (a newer
        Gateway's event type)."""
        try:
            decoded = _frames.decode(frame)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise ProtocolError(f"the Gateway sent something that is not a JSON-RPC message: {exc}") from None
        if isinstance(decoded.id, msgspec.UnsetType):
            if decoded.method != "event":
                return None
            try:
                return _events.decode(decoded.params)
            except msgspec.ValidationError:
                return None  # an event type (or field) this client does not know yet: not its business
        return Reply(decoded.id, decoded.result, decoded.error)
