"""What the TUI knows of the session it shows, in one small object whose fields widgets watch.

The app sets the fields from the Gateway's replies and events; each widget that shows one of them
(the status line, the pending queue, the question, the retry countdown) subscribes with :meth:`watch`
and redraws itself when it changes. Nothing else tells a widget to redraw.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeAlias, TypeVar, cast, overload

from anyy.api.entries import Attachment, Usage
from anyy.api.sessions import RetryView, Session, Submission, WaitingQuestion

T = TypeVar("T")
Watcher = Callable[[Any], None]
Waiting: TypeAlias = WaitingQuestion  # a question the agent asked (ask_user); its execution waits for the answer
RetryWait: TypeAlias = RetryView  # an execution waiting to call the model again, ``seconds_left`` from when seen


@dataclass(frozen=True)
class ContextFill:
    """How full the session's context is: what the last response re-read (None before any), against the
    compaction budget (0: unknown)."""

    tokens: int | None = None
    budget: int = 0


@dataclass(frozen=True)
class Spend:
    """What the session (with its delegated children) cost so far and what its last answer cost, in
    nano-dollars (Y3); ``last`` None: the last answer was unpriced; ``unpriced``: calls without a price."""

    total: int = 0
    last: int | None = None
    unpriced: int = 0
    calls: int = 0


class Field(Generic[T]):
    """A watched attribute of :class:`SessionState`: setting a different value calls its watchers."""

    def __init__(self, default: Callable[[], T]) -> None:
        self.default = default
        self.name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, obj: None, owner: type) -> Field[T]: ...
    @overload
    def __get__(self, obj: SessionState, owner: type) -> T: ...
    def __get__(self, obj: SessionState | None, owner: type) -> T | Field[T]:
        if obj is None:
            return self
        if self.name not in obj._values:
            obj._values[self.name] = self.default()
        return cast(T, obj._values[self.name])

    def __set__(self, obj: SessionState, value: T) -> None:
        old = self.__get__(obj, type(obj))
        obj._values[self.name] = value
        if old != value:
            for watcher in list(obj._watchers.get(self.name, ())):
                watcher(value)


class SessionState:
    session: Field[Session | None] = Field(lambda: None)  # the session shown: id, role, provider, model, effort…
    link: Field[str | None] = Field(lambda: "connecting")  # the connection, while it is not simply up
    running: Field[str | None] = Field(lambda: None)  # the execution seen running: what a stop captures
    retrying: Field[str | None] = Field(lambda: None)  # the execution in a retry wait: what Esc cancels
    retry: Field[RetryWait | None] = Field(lambda: None)  # its countdown, once the Gateway said how long
    waiting: Field[Waiting | None] = Field(lambda: None)
    queue: Field[list[Submission]] = Field(list)  # its pending items, as the Gateway last said
    context: Field[ContextFill] = Field(ContextFill)
    usage: Field[Usage | None] = Field(lambda: None)  # the last recorded answer's usage
    spend: Field[Spend] = Field(Spend)  # what the session cost (Y3)
    attachments: Field[list[Attachment]] = Field(list)  # uploaded, to go with the next message (/attach)

    def __init__(self) -> None:
        self._values: dict[str, Any] = {}
        self._watchers: dict[str, list[Watcher]] = {}

    def watch(self, names: str, watcher: Watcher) -> None:
        """Call ``watcher`` with the new value each time one of the fields (space-separated) changes."""
        for name in names.split():
            if not isinstance(getattr(type(self), name, None), Field):
                raise AttributeError(f"SessionState has no watched field {name!r}")
            self._watchers.setdefault(name, []).append(watcher)

    @property
    def session_id(self) -> str:
        return self.session.id if self.session is not None else ""

    @property
    def busy(self) -> bool:
        return self.running is not None

    def forget_work(self) -> None:
        """Nothing seen running, waiting for a retry or for an answer (until the Gateway says so again)."""
        self.running, self.retrying, self.retry, self.waiting = None, None, None, None

    def activity(self) -> str:
        """What the session is doing, for the right of the status line."""
        if self.link is not None:
            return self.link
        if self.retrying is not None:
            return "retry wait · Esc cancels the wait"
        if self.running is not None:
            return "working · Ctrl+C stops"
        if self.waiting is not None:
            return "waiting for your answer"
        return "idle"
