"""What :mod:`anyy.client` raises, one hierarchy for both front ends::

    GatewayError (an AnyyError)
    ├── GatewayUnavailable   no Gateway answers for the profile, or it closed the connection
    ├── GatewayStartFailed   a Gateway this client started did not come up
    ├── ProtocolError        the Gateway sent something this client cannot read
    └── CallFailed           the Gateway answered a call with an error (also a commons.jsonrpc.RpcError);
        ├── ParseError, InvalidRequest, MethodNotFound, InvalidParams, InternalError
        ├── Unauthorized, Busy, NotFoundError, StorageFullError, ConflictError
        one class per stable code of ``commons.jsonrpc``; an unknown code is a plain CallFailed.

A call that outlives its timeout raises the built-in ``TimeoutError``.
"""

from __future__ import annotations

from typing import Any

from anyy.domain.errors import AnyyError
from commons import jsonrpc


class GatewayError(AnyyError):
    """Base of every error the client raises."""


class GatewayUnavailable(GatewayError):
    """No Gateway answers for the profile (never started, stopped, or gone without cleaning up), or the one
    connected to closed the connection."""


class GatewayStartFailed(GatewayError):
    """A Gateway this client started did not come up (what it said is in the message)."""


class ProtocolError(GatewayError):
    """A frame or a result that does not match the wire contract."""


# ``code`` is the wire's int (RpcError's), not AnyyError's name for the kind: ``name`` gives that.
class CallFailed(GatewayError, jsonrpc.RpcError):
    """An error reply: ``code`` is one of the stable codes, ``message`` is meant for people."""

    code: int  # type: ignore[assignment]

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        jsonrpc.RpcError.__init__(self, code, message, data)


class ParseError(CallFailed):
    pass


class InvalidRequest(CallFailed):
    pass


class MethodNotFound(CallFailed):
    pass


class InvalidParams(CallFailed):
    pass


class InternalError(CallFailed):
    pass


class Unauthorized(CallFailed):
    pass


class Busy(CallFailed):
    pass


class NotFoundError(CallFailed):
    pass


class StorageFullError(CallFailed):
    pass


class ConflictError(CallFailed):
    pass


BY_CODE: dict[int, type[CallFailed]] = {
    jsonrpc.PARSE_ERROR: ParseError,
    jsonrpc.INVALID_REQUEST: InvalidRequest,
    jsonrpc.METHOD_NOT_FOUND: MethodNotFound,
    jsonrpc.INVALID_PARAMS: InvalidParams,
    jsonrpc.INTERNAL_ERROR: InternalError,
    jsonrpc.UNAUTHORIZED: Unauthorized,
    jsonrpc.BUSY: Busy,
    jsonrpc.NOT_FOUND: NotFoundError,
    jsonrpc.STORAGE_FULL: StorageFullError,
    jsonrpc.CONFLICT: ConflictError,
}


def call_failed(code: int, message: str, data: Any = None) -> CallFailed:
    """The exception for an error reply with this code."""
    return BY_CODE.get(code, CallFailed)(code, message, data)


def no_gateway_message(profile_name: str) -> str:
    return (
        f"no Gateway is running for profile {profile_name}: start one with "
        f"`anyy gateway start --profile {profile_name}`"
    )
