"""What every built-in tool shares: checked arguments and failures reported to the model, not raised.

A built-in tool subclasses :class:`BuiltinTool` and implements ``execute``. Anything the model got wrong
(a missing argument, a path outside the working directory, a file that does not exist) is raised inside
``execute`` as :class:`ToolFailure`, and ``run`` turns it into an ``is_error`` outcome whose text tells the
model what to do instead. Only a bug or a cancellation leaves ``run`` as an exception.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from anyy.domain.model_io import ToolSpec
from anyy.tools.base import ToolContext, ToolOutcome


class ToolFailure(Exception):
    """A failure the model should read: its message is the tool's result text."""


class Arguments:
    """A tool call's arguments, checked against the tool's JSON Schema properties as they are read.

    Unknown names are refused up front: a misspelt optional argument would otherwise be silently ignored.
    """

    def __init__(self, raw: dict[str, Any], spec: ToolSpec) -> None:
        if not isinstance(raw, dict):
            raise ToolFailure(f"{spec.name} takes a JSON object of arguments, not {type(raw).__name__}")
        known = spec.parameters.get("properties", {})
        unknown = sorted(name for name in raw if name not in known)
        if unknown:
            takes = ", ".join(known) or "no arguments"
            raise ToolFailure(f"{spec.name} got unknown argument(s) {', '.join(unknown)}; it takes: {takes}")
        self._raw = raw
        self._tool = spec.name

    def has(self, name: str) -> bool:
        return self._raw.get(name) is not None

    def value(self, name: str) -> Any:
        """The raw value (None when absent), for arguments that are not plain strings or numbers."""
        return self._raw.get(name)

    def string(self, name: str, *, allow_empty: bool = False) -> str:
        value = self._raw.get(name)
        if value is None:
            raise ToolFailure(f"{self._tool} needs the argument {name!r} (a string)")
        if not isinstance(value, str):
            raise ToolFailure(f"{self._tool}: {name!r} must be a string, not {type(value).__name__}")
        if not value and not allow_empty:
            raise ToolFailure(f"{self._tool}: {name!r} must not be empty")
        return value

    def optional_string(self, name: str, default: str) -> str:
        return self.string(name, allow_empty=True) if self.has(name) else default

    def choice(self, name: str, choices: tuple[str, ...]) -> str:
        value = self.string(name)
        if value not in choices:
            raise ToolFailure(f"{self._tool}: {name!r} must be one of {', '.join(choices)}, not {value!r}")
        return value

    def optional_int(self, name: str, default: int, *, minimum: int) -> int:
        if not self.has(name):
            return default
        value = self._raw[name]
        # bool is an int in Python, but true/false is never a sensible count of lines.
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if not isinstance(value, int) or isinstance(value, bool):
            raise ToolFailure(f"{self._tool}: {name!r} must be an integer, not {type(value).__name__}")
        if value < minimum:
            raise ToolFailure(f"{self._tool}: {name!r} must be at least {minimum}, not {value}")
        return value

    def optional_seconds(self, name: str, default: float) -> float:
        if not self.has(name):
            return default
        value = self._raw[name]
        if not isinstance(value, int | float) or isinstance(value, bool):
            raise ToolFailure(f"{self._tool}: {name!r} must be a number of seconds, not {type(value).__name__}")
        if value <= 0:
            raise ToolFailure(f"{self._tool}: {name!r} must be more than 0 seconds, not {value}")
        return float(value)


class BuiltinTool(ABC):
    """A tool of the built-in set; implements the :class:`anyy.tools.base.Tool` protocol."""

    spec: ToolSpec

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolOutcome:
        try:
            return await self.execute(Arguments(arguments, self.spec), context)
        except ToolFailure as failure:
            return ToolOutcome(text=str(failure), is_error=True)

    @abstractmethod
    async def execute(self, args: Arguments, context: ToolContext) -> ToolOutcome:
        """Do the work; raise :class:`ToolFailure` for anything the model should correct."""


def object_schema(properties: dict[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    """A JSON Schema for an arguments object that refuses extra keys."""
    return {"type": "object", "properties": properties, "required": list(required), "additionalProperties": False}
