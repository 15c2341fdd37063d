"""The dispatcher: JSON-RPC frames in, replies out, from the method table. It knows no transport; the
WebSocket and HTTP endpoints (and tests) are thin adapters over :meth:`Dispatcher.handle`.

A bad frame gets an error reply and harms nothing else: no exception escapes, no traceback reaches the
client (faults are logged with an id the reply quotes).
"""

from __future__ import annotations

import difflib
import logging
import secrets
from typing import Any

import msgspec

from anyy.domain.errors import AnyyError, Conflict, InvalidInput, NotFound, StorageFull, StoreUnavailable
from anyy.gateway.state import Connection, Gateway
from anyy.gateway.table import MethodTable
from commons import jsonrpc
from commons.jsonrpc import ErrorObject, Request, Response, RpcError

log = logging.getLogger("anyy.gateway")

MAX_FRAME_BYTES = 8 * 1024 * 1024
MAX_BATCH = 100
MAX_DEPTH = 64  # JSON nesting: far beyond any method's parameters, far below the interpreter's recursion limit

_CODES: list[tuple[type[AnyyError], int]] = [
    (NotFound, jsonrpc.NOT_FOUND),
    (Conflict, jsonrpc.CONFLICT),
    (InvalidInput, jsonrpc.INVALID_PARAMS),
    (StorageFull, jsonrpc.STORAGE_FULL),
    (StoreUnavailable, jsonrpc.STORE_UNAVAILABLE),
]


# Errors that answer a client's mistake (bad parameters, an unknown id, a stale version), not a fault.
_CLIENT_MISTAKES = frozenset(
    {jsonrpc.INVALID_REQUEST, jsonrpc.METHOD_NOT_FOUND, jsonrpc.INVALID_PARAMS, jsonrpc.NOT_FOUND, jsonrpc.CONFLICT}
)


def _error(id: Any, code: int, message: str) -> Response:
    return Response(id=id if isinstance(id, int | str) else None, error=ErrorObject(code=code, message=message))


def _too_deep(data: Any) -> bool:
    """Whether the decoded frame nests lists and objects deeper than :data:`MAX_DEPTH` (no recursion)."""
    stack: list[tuple[Any, int]] = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > MAX_DEPTH:
            return True
        if isinstance(value, dict):
            stack.extend((v, depth + 1) for v in value.values() if isinstance(v, dict | list))
        elif isinstance(value, list):
            stack.extend((v, depth + 1) for v in value if isinstance(v, dict | list))
    return False


def _decode(frame: bytes | str) -> tuple[Any, Response | None]:
    """The frame's JSON, or the parse error to answer (bad JSON, or nested too deeply)."""
    too_deep = _error(None, jsonrpc.PARSE_ERROR, f"JSON nested too deeply: at most {MAX_DEPTH} levels")
    try:
        data = msgspec.json.decode(frame)
    except msgspec.DecodeError as exc:
        return None, _error(None, jsonrpc.PARSE_ERROR, f"not valid JSON: {exc}")
    except RecursionError:  # deeper than the decoder can go
        return None, too_deep
    if isinstance(data, dict | list) and _too_deep(data):
        return None, too_deep
    return data, None


class Dispatcher:
    def __init__(self, gateway: Gateway, table: MethodTable) -> None:
        self.gateway = gateway
        self.table = table

    async def handle(self, frame: bytes | str, conn: Connection | None) -> bytes | None:
        """The reply to one frame (a request, a notification or a batch); None when nothing is owed."""
        size = len(frame)
        if isinstance(frame, str) and size * 4 > MAX_FRAME_BYTES:
            # A text frame (WebSocket) is measured in UTF-8 bytes, as the limit says, not in characters.
            size = len(frame.encode("utf-8", "surrogatepass"))
        if size > MAX_FRAME_BYTES:
            reply: Any = _error(
                None, jsonrpc.INVALID_REQUEST, f"frame too large: {size} bytes, at most {MAX_FRAME_BYTES}"
            )
            return jsonrpc.encode(reply)
        data, error = _decode(frame)
        if error is not None:
            return jsonrpc.encode(error)
        if isinstance(data, list):
            if not data:
                return jsonrpc.encode(_error(None, jsonrpc.INVALID_REQUEST, "an empty batch"))
            if len(data) > MAX_BATCH:
                return jsonrpc.encode(_error(None, jsonrpc.INVALID_REQUEST, f"a batch holds at most {MAX_BATCH} calls"))
            replies = [r for r in [await self.one(item, conn) for item in data] if r is not None]
            return jsonrpc.encode(replies) if replies else None
        reply = await self.one(data, conn)
        return None if reply is None else jsonrpc.encode(reply)

    def busy(self, frame: bytes | str, why: str) -> bytes | None:
        """The reply to a frame the Gateway will not run now: a busy error for each call in it."""
        data, error = _decode(frame)
        if error is not None:
            return jsonrpc.encode(error)
        calls = data if isinstance(data, list) else [data]
        ids = [c.get("id") for c in calls if isinstance(c, dict) and "id" in c]
        replies = [_error(id, jsonrpc.BUSY, f"the Gateway is busy: {why}; try again shortly") for id in ids]
        if not replies:
            return None
        return jsonrpc.encode(replies if isinstance(data, list) else replies[0])

    async def one(self, data: Any, conn: Connection | None) -> Response | None:
        raw_id = data.get("id") if isinstance(data, dict) else None
        try:
            request = msgspec.convert(data, Request)
        except msgspec.ValidationError as exc:
            return _error(raw_id, jsonrpc.INVALID_REQUEST, f"not a JSON-RPC 2.0 request: {exc}")
        if request.jsonrpc != "2.0":
            return _error(raw_id, jsonrpc.INVALID_REQUEST, 'not a JSON-RPC 2.0 request: "jsonrpc" must be "2.0"')
        notification = request.id is msgspec.UNSET
        try:
            result = await self._call(request, conn)
        except RpcError as exc:
            if exc.code in _CLIENT_MISTAKES:
                # The client's mistake, not the Gateway's: one line at INFO, no traceback (D9).
                log.info("%s refused (%d): %s", request.method[:80], exc.code, exc.message[:300])
            return None if notification else _error(raw_id, exc.code, exc.message)
        if notification:
            return None
        return Response(id=request.id if not isinstance(request.id, msgspec.UnsetType) else None, result=result)

    async def _call(self, request: Request, conn: Connection | None) -> Any:
        method = self.table.methods.get(request.method)
        if method is None:
            close = difflib.get_close_matches(request.method, list(self.table.methods), n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            raise RpcError(jsonrpc.METHOD_NOT_FOUND, f"no method {request.method!r}{hint}; see docs/api.md")
        if method.websocket_only and conn is None:
            raise RpcError(jsonrpc.INVALID_REQUEST, f"{method.name} works over the WebSocket only")
        if isinstance(request.params, list):
            raise RpcError(jsonrpc.INVALID_PARAMS, f"{method.name} takes its parameters by name (an object)")
        try:
            params = msgspec.convert(request.params or {}, method.params)
        except msgspec.ValidationError as exc:
            raise RpcError(jsonrpc.INVALID_PARAMS, f"invalid parameters for {method.name}: {exc}") from None
        try:
            return await method.handler(self.gateway, conn, params)
        except RpcError:
            raise
        except AnyyError as exc:
            for kind, code in _CODES:
                if isinstance(exc, kind):
                    raise RpcError(code, str(exc)) from None
            raise RpcError(jsonrpc.INTERNAL_ERROR, str(exc)) from None
        except msgspec.ValidationError as exc:
            raise RpcError(jsonrpc.INVALID_PARAMS, str(exc)) from None
        except Exception:
            incident = secrets.token_hex(4)
            log.exception("method %s failed (incident %s)", method.name, incident)
            raise RpcError(
                jsonrpc.INTERNAL_ERROR,
                f"{method.name} failed inside the Gateway (incident {incident}, in the Gateway's log); "
                "nothing was lost — try again, or report it",
            ) from None
