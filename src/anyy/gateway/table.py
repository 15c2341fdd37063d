"""The method table: every method of the API (its name, parameters and result type come from
``anyy.api.methods``) with the handler that serves it and its documentation. The dispatcher, the
transports and docs/api.md are all made from this one table."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from anyy.api.methods import MethodSpec
from anyy.api.params import Params

P = TypeVar("P", bound=Params)
R = TypeVar("R")
Handler = Callable[[Any, Any, P], Awaitable[R]]  # (gateway, connection or None, params) -> result


@dataclass(frozen=True)
class Method(Generic[P]):
    spec: MethodSpec[P, Any]
    handler: Callable[[Any, Any, P], Awaitable[Any]]
    doc: str

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def params(self) -> type[P]:
        return self.spec.params

    @property
    def websocket_only(self) -> bool:
        return self.spec.websocket_only


class MethodTable:
    def __init__(self) -> None:
        self.methods: dict[str, Method[Any]] = {}

    def method(self, spec: MethodSpec[P, R]) -> Callable[[Handler[P, R]], Handler[P, R]]:
        def register(handler: Handler[P, R]) -> Handler[P, R]:
            if spec.name in self.methods:
                raise ValueError(f"method {spec.name} is registered twice")
            doc = inspect.cleandoc(handler.__doc__ or "")
            self.methods[spec.name] = Method(spec, handler, doc)
            return handler

        return register


TABLE = MethodTable()
