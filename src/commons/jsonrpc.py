"""JSON-RPC 2.0 envelopes and the stable error codes of anyy's API, shared by the Gateway and its clients.

code     name             meaning
-32700   parse_error      the frame is not JSON
-32600   invalid_request  not a JSON-RPC 2.0 request (or the frame is too large)
-32601   method_not_found no such method
-32602   invalid_params   the parameters are wrong: missing, mistyped, or a value that can never work
-32603   internal_error   a fault in the Gateway (it is logged; the connection stays up)
-32001   unauthorized     no access token, or the wrong one
-32003   busy             the Gateway cannot take this now (too many requests); try again
-32004   not_found        an id that does not exist in this profile
-32005   store_unavailable the session store cannot be reached now: nothing was written; send the request again
-32007   storage_full     the disk is full: nothing was written
-32009   conflict         the state changed under the caller (a taken queue item, unfinished work…)
"""

from __future__ import annotations

from typing import Any

import msgspec

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
UNAUTHORIZED = -32001
BUSY = -32003
NOT_FOUND = -32004
STORE_UNAVAILABLE = -32005
STORAGE_FULL = -32007
CONFLICT = -32009

ERROR_NAMES = {
    PARSE_ERROR: "parse_error",
    INVALID_REQUEST: "invalid_request",
    METHOD_NOT_FOUND: "method_not_found",
    INVALID_PARAMS: "invalid_params",
    INTERNAL_ERROR: "internal_error",
    UNAUTHORIZED: "unauthorized",
    BUSY: "busy",
    NOT_FOUND: "not_found",
    STORE_UNAVAILABLE: "store_unavailable",
    STORAGE_FULL: "storage_full",
    CONFLICT: "conflict",
}

Id = int | str | None


class RpcError(Exception):
    """An error reply, raised by clients when a call fails and by handlers to choose the code."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    @property
    def name(self) -> str:
        return ERROR_NAMES.get(self.code, "error")

    def __repr__(self) -> str:
        return f"RpcError({self.code}, {self.message!r})"


class ErrorObject(msgspec.Struct, omit_defaults=True):
    code: int
    message: str
    data: Any = None


class Request(msgspec.Struct, omit_defaults=True, forbid_unknown_fields=True):
    jsonrpc: str
    method: str
    params: dict[str, Any] | list[Any] | None = None
    id: Id | msgspec.UnsetType = msgspec.UNSET


class Response(msgspec.Struct):
    # Not omit_defaults: "jsonrpc" and "id" (even null) belong in every reply; result and error are
    # left out only when UNSET.
    id: Id
    jsonrpc: str = "2.0"
    result: Any = msgspec.UNSET
    error: ErrorObject | msgspec.UnsetType = msgspec.UNSET


class Notification(msgspec.Struct):
    """A message the server pushes without a request (anyy's events)."""

    method: str
    params: Any
    jsonrpc: str = "2.0"


_encoder = msgspec.json.Encoder()


def encode(message: Any) -> bytes:
    return _encoder.encode(message)


def request(method: str, params: dict[str, Any] | None, id: Id) -> bytes:
    return _encoder.encode({"jsonrpc": "2.0", "method": method, "params": params or {}, "id": id})


def result_of(reply: dict[str, Any]) -> Any:
    """The result of a decoded reply, or the RpcError it carries."""
    error = reply.get("error")
    if error is not None:
        raise RpcError(int(error.get("code", INTERNAL_ERROR)), str(error.get("message", "")), error.get("data"))
    return reply.get("result")
