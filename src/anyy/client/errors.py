"""What :mod:`anyy.client` raises, one hierarchy for both front ends::

    GatewayError (an AnyyError)
    ├── GatewayUnavailable   no Gateway answers for the profile, or it closed the connection
    │   └── GatewayNotAnswering  its process runs and its port accepts, but it did not answer in time
    ├── GatewayStartFailed   a Gateway this client started did not come up
    ├── ProtocolError        the Gateway sent something this client cannot read
    └── CallFailed           the Gateway answered a call with an error (also a commons.jsonrpc.RpcError);
        ├── ParseError, InvalidRequest, MethodNotFound, InvalidParams, InternalError
        ├── Unauthorized, Busy, NotFoundError, StorageFullError, StoreUnavailableError, ConflictError
        one class per stable code of ``commons.jsonrpc``; an unknown code is a plain CallFailed.

A call that outlives its timeout raises the built-in ``TimeoutError``.
"""

from __future__ import annotations

import os
from typing import Any

from anyy.domain.errors import AnyyError
from commons import jsonrpc


class GatewayError(AnyyError):
    """Base of every error the client raises."""


class GatewayUnavailable(GatewayError):
    """No Gateway answers for the profile (never started, stopped, or gone without cleaning up), or the one
    connected to closed the connection."""


class GatewayNotAnswering(GatewayUnavailable):
    """The profile's Gateway process runs and something accepts connections at its address, but the
    WebSocket handshake was not answered in time: overloaded, out of file descriptors, or stuck (D2)."""


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


class StoreUnavailableError(CallFailed):
    """The Gateway cannot reach its session store now; nothing was written: send the same request again."""


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
    jsonrpc.STORE_UNAVAILABLE: StoreUnavailableError,
    jsonrpc.CONFLICT: ConflictError,
}


def call_failed(code: int, message: str, data: Any = None) -> CallFailed:
    """The exception for an error reply with this code."""
    return BY_CODE.get(code, CallFailed)(code, message, data)


def connect_failed(profile_name: str, pid: int, url: str, exc: BaseException) -> GatewayUnavailable:
    """What a failed connection to the address a Gateway published means for the user.

    Refused (nothing listens) or a process that is gone: no Gateway runs. A handshake not answered in time
    (or cut off) while the Gateway's process is alive: it runs but does not answer, and saying "no Gateway
    is running" would send the user to start a second one, which its lock refuses."""
    if isinstance(exc, ConnectionRefusedError) or not _alive(pid):
        return GatewayUnavailable(no_gateway_message(profile_name))
    cut_off = isinstance(exc, TimeoutError | ConnectionResetError | ConnectionAbortedError)
    if cut_off or not isinstance(exc, OSError):  # not an OSError: a handshake the Gateway did not complete
        return GatewayNotAnswering(
            f"the Gateway of profile {profile_name} is running (pid {pid}, {url}) but not answering: it accepted "
            "the connection but did not complete the handshake in time. It may be overloaded or stuck: wait a "
            f"moment and try again, look at its log ({profile_name}'s logs/gateway.log), or restart it with "
            f"`anyy gateway stop --profile {profile_name}` then `anyy gateway start --profile {profile_name}`"
        )
    return GatewayUnavailable(no_gateway_message(profile_name))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process: alive
    return True


def no_gateway_message(profile_name: str) -> str:
    return (
        f"no Gateway is running for profile {profile_name}: start one with "
        f"`anyy gateway start --profile {profile_name}`"
    )
