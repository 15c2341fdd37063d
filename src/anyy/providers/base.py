"""The provider protocol and its one error type.

ProviderError(kind=...)
  transient  rate limit, overload, 5xx, a dropped connection or stream: retried by the runtime (R3)
  overflow   the context is too long for the model: compact once, then retry
  fatal      anything else (bad key, unknown model, invalid request): reported, not retried
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Protocol

from anyy.domain.model_io import ErrorClass, ModelRequest, ProviderEvent


class ProviderError(Exception):
    def __init__(
        self, kind: ErrorClass, message: str, *, status: int | None = None, retry_after: float | None = None
    ) -> None:
        super().__init__(message)
        self.kind: ErrorClass = kind
        self.message = message
        self.status = status
        self.retry_after = retry_after

    def __repr__(self) -> str:
        return f"ProviderError({self.kind!r}, {self.message!r}, status={self.status!r})"


class Provider(Protocol):
    """One configured provider. ``stream`` yields the normalised events of one model call, ending with
    a ``StopEvent``, or raises ``ProviderError``. Cancelling the iteration (the task awaiting it) closes
    the underlying request at once."""

    name: str

    def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]: ...

    async def aclose(self) -> None: ...
