"""The Gateway process of the CLI and TUI tests moved to :mod:`tests.fakes.gateways` (shared by the whole
suite); these names stay importable from here. The in-process Gateway is ``tests.fakes.gateways.LiveGateway``;
the process one is ``GatewayProcess`` (they had one name between them)."""

from tests.fakes.gateways import (
    ANYY,
    BIN,
    BROKEN_PROVIDER,
    GatewayProcess,
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

__all__ = [
    "ANYY",
    "BIN",
    "BROKEN_PROVIDER",
    "TIMEOUT",
    "GatewayProcess",
    "Hold",
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
