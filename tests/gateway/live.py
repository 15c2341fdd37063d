"""The in-process live Gateway moved to :mod:`tests.fakes.gateways` (shared by the whole suite); these
names stay importable from here."""

from tests.fakes.gateways import (
    TIMEOUT,
    TOKEN,
    BusySession,
    LiveGateway,
    WsClient,
    busy_session,
    error_code,
    http_post,
    is_state,
    put_object,
    wait_gate,
)

__all__ = [
    "TIMEOUT",
    "TOKEN",
    "BusySession",
    "LiveGateway",
    "WsClient",
    "busy_session",
    "error_code",
    "http_post",
    "is_state",
    "put_object",
    "wait_gate",
]
