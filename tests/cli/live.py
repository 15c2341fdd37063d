"""The Gateway process of the CLI and TUI tests moved to :mod:`tests.fakes.gateways` (shared by the whole
suite); these names stay importable from here (``LiveGateway`` is its ``GatewayProcess``)."""

from tests.fakes.gateways import (
    ANYY,
    BIN,
    BROKEN_PROVIDER,
    Hold,
    MakeHold,
    StartGateway,
    chat_json,
    env_for,
    finish,
    hold,
    make_busy,
    run,
    start,
    start_gateway,
    wait_event,
    wait_queued,
)
from tests.fakes.gateways import PROCESS_TIMEOUT as TIMEOUT
from tests.fakes.gateways import GatewayProcess as LiveGateway

__all__ = [
    "ANYY",
    "BIN",
    "BROKEN_PROVIDER",
    "TIMEOUT",
    "Hold",
    "LiveGateway",
    "MakeHold",
    "StartGateway",
    "chat_json",
    "env_for",
    "finish",
    "hold",
    "make_busy",
    "run",
    "start",
    "start_gateway",
    "wait_event",
    "wait_queued",
]
