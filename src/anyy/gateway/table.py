"""The method table: every method of the API, its parameters (a struct that refuses unknown fields) and
its documentation. The dispatcher, the transports and docs/api.md are all made from this one table."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import msgspec

P = TypeVar("P", bound=msgspec.Struct)


class Params(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Base of every method's parameters."""


class NoParams(Params):
    pass


@dataclass(frozen=True)
class Method(Generic[P]):
    name: str
    params: type[P]
    handler: Callable[[Any, Any, P], Awaitable[Any]]  # (gateway, connection or None, params) -> result
    doc: str
    websocket_only: bool = False


class MethodTable:
    def __init__(self) -> None:
        self.methods: dict[str, Method[Any]] = {}

    def method(
        self, name: str, params: type[P], *, websocket_only: bool = False
    ) -> Callable[[Callable[[Any, Any, P], Awaitable[Any]]], Callable[[Any, Any, P], Awaitable[Any]]]:
        def register(handler: Callable[[Any, Any, P], Awaitable[Any]]) -> Callable[[Any, Any, P], Awaitable[Any]]:
            if name in self.methods:
                raise ValueError(f"method {name} is registered twice")
            doc = inspect.cleandoc(handler.__doc__ or "")
            self.methods[name] = Method(name, params, handler, doc, websocket_only)
            return handler

        return register


TABLE = MethodTable()
