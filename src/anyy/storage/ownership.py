"""Which Gateway runs a session's work, when several share one store (SPEC P3-P6).

A store that one Gateway uses alone (SQLite, memory, or PostgreSQL opened by a tool rather than a
Gateway) owns every session: :class:`SoloOwnership` answers every claim with "yours" and has nothing to
renew, recover or relay. A PostgreSQL store a Gateway *joined* (:meth:`join_service`) holds leases with a
fencing epoch on the session rows (``anyy.storage.postgres.leases``). The runtime calls the same methods
either way, so it has one code path.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, Protocol, TypeVar

import msgspec

from anyy.domain.errors import Conflict
from anyy.domain.queue import Execution

T = TypeVar("T")

ControlKind = Literal["stop", "answer"]
HintKind = Literal["work", "control", "change"]


class LeaseLost(Conflict):
    """A write of a session whose lease this Gateway no longer holds (another one took the session over):
    nothing of it was written. The execution that tried stops locally."""

    code = "lease_lost"


class OwnedElsewhere(Conflict):
    """A write that only the session's owner may make, from a Gateway that does not own it."""

    code = "owned_elsewhere"


class ToolProcess(msgspec.Struct, kw_only=True):
    """A process group a tool call of a running execution started: its leader's pid and start time."""

    execution_id: str
    call_id: str
    pid: int
    started: int | None  # clock ticks after boot: with the pid, names one process even after pid reuse


class Claim(msgspec.Struct, kw_only=True):
    owned: bool  # this Gateway holds the session's lease now
    owner: str | None = None  # when not: the Gateway that does
    address: str = ""  # and where it listens
    recovered: list[Execution] = msgspec.field(default_factory=list)  # what a dead owner left, interrupted (G3)
    leftovers: list[ToolProcess] = msgspec.field(default_factory=list)  # its tools' processes, on this host (D3)


class Control(msgspec.Struct, kw_only=True):
    """A stop or an answer sent through another Gateway, for the owner's next checkpoint."""

    session_id: str
    kind: ControlKind
    execution_id: str
    text: str = ""


class Heartbeat(msgspec.Struct, kw_only=True):
    lost: list[str]  # sessions whose lease was taken over: their work stops here, writing nothing
    recovered: list[Execution]  # work of dead Gateways this one marked interrupted
    controls: list[Control]  # stops and answers for sessions this Gateway owns
    woken: list[str] = msgspec.field(default_factory=list)  # claimed here to run an unacknowledged send
    leftovers: list[ToolProcess] = msgspec.field(default_factory=list)  # dead owners' tools on this host (D3)
    stop: bool = False  # asked to stop (`anyy gateway stop --all` or `--id`, from any host)


class GatewayInfo(msgspec.Struct, kw_only=True):
    id: str
    address: str
    pid: int
    host: str
    started: float
    last_seen: float
    alive: bool
    sessions: list[str]  # the sessions it holds a lease on


class Hint(msgspec.Struct, frozen=True):
    """A small wake-up hint between Gateways (never a payload): something changed in a session."""

    kind: HintKind
    session_id: str
    sender: str  # the Gateway id that wrote it

    def encode(self) -> str:
        return f"{self.kind}:{self.session_id}:{self.sender}"

    @classmethod
    def decode(cls, payload: str) -> Hint | None:
        kind, _, rest = payload.partition(":")
        session_id, _, sender = rest.partition(":")
        if kind not in ("work", "control", "change") or not session_id:
            return None
        return cls(kind=kind, session_id=session_id, sender=sender)  # type: ignore[arg-type]


class Listening(Protocol):
    def close(self) -> None: ...


class SoloOwnership:
    """Ownership of a store only one Gateway uses: every session is this Gateway's."""

    def join_service(self, gateway_id: str, *, lease: float, address: str, recovery_note: str) -> bool:
        """Become one Gateway of the service: False when the store has no other Gateways to share with."""
        return False

    def leave_service(self) -> None:
        return None

    def set_gateway_address(self, address: str) -> None:
        return None

    def claim_session(self, session_id: str) -> Claim:
        return Claim(owned=True)

    def release_session(self, session_id: str) -> None:
        return None

    def took_work(self, session_id: str) -> None:
        return None

    def run_unit(self, fn: Callable[[Any], T]) -> T:
        return fn(self)

    def heartbeat(self) -> Heartbeat:
        return Heartbeat(lost=[], recovered=[], controls=[])

    def add_control(self, session_id: str, kind: ControlKind, execution_id: str, text: str = "") -> None:
        raise Conflict("this store has one Gateway, which owns every session: nothing to relay")

    def hint(self, session_id: str, kind: HintKind) -> None:
        return None

    def listen(self, callback: Callable[[Hint], None]) -> Listening | None:
        return None

    def list_gateways(self) -> list[GatewayInfo]:
        return []

    def request_stop(self, gateway_ids: list[str] | None = None) -> list[str]:
        raise Conflict(
            "this store has one Gateway (it is not a PostgreSQL store several Gateways share): "
            "stop it with `anyy gateway stop`"
        )
