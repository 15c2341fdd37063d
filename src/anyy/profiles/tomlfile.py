"""Reading the profile's TOML files into typed Structs, with errors that name the key, table and file.

msgspec reports a problem as ``Object contains unknown field `x` - at `$.model```; a person editing
``config.toml`` needs ``config.toml (/path): unknown key 'x' in [model]`` and the keys that do exist.
"""

from __future__ import annotations

import re
import typing
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypeVar

import msgspec
import msgspec.toml

from anyy.domain.errors import InvalidInput

T = TypeVar("T", bound=msgspec.Struct)

_LOCATION = re.compile(r"^(?P<message>.*?)(?: - at `(?P<path>[^`]*)`)?$", re.DOTALL)
_PATH_PART = re.compile(r"\.([^.\[]+)|(\[[^\]]*\])")
_UNKNOWN = re.compile(r"^Object contains unknown field `(?P<key>[^`]*)`$")
_MISSING = re.compile(r"^Object missing required field `(?P<key>[^`]*)`$")
_BAD_ENUM = re.compile(r"^Invalid enum value (?P<value>.*)$")


class FileError(InvalidInput):
    """A profile file that can't be used as written. The message names the file and what to fix."""


def read_toml(path: Path, label: str) -> dict[str, Any]:
    """The file's TOML as plain values; ``label`` is how the message names the file."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise FileError(f"{label} ({path}): can't be read: {exc.strerror or exc}") from None
    try:
        value = msgspec.toml.decode(raw)
    except (msgspec.DecodeError, UnicodeDecodeError) as exc:
        raise FileError(f"{label} ({path}): not valid TOML: {exc}") from None
    if not isinstance(value, dict):  # pragma: no cover - a TOML document is always a table
        raise FileError(f"{label} ({path}): not a TOML table")
    return value


def convert(
    value: Any, schema: type[T], *, label: str, path: Path, prefix: Sequence[str] = (), root: type | None = None
) -> T:
    """Check ``value`` against ``schema``. ``prefix`` is where ``value`` sits in the file (for messages)
    and ``root`` the schema of the whole file, used to list the keys a table accepts."""
    try:
        return msgspec.convert(value, schema)
    except msgspec.ValidationError as exc:
        problem = describe(str(exc), root=root or schema, prefix=prefix)
        raise FileError(f"{label} ({path}): {problem}") from None


def describe(error: str, *, root: type, prefix: Sequence[str] = ()) -> str:
    """Turn one msgspec validation message into words about keys and tables."""
    match = _LOCATION.match(error)
    assert match is not None  # the pattern accepts any text
    message = match.group("message")
    parts = [*prefix, *_split_path(match.group("path") or "$")]
    unknown = _UNKNOWN.match(message)
    if unknown:
        known = _keys_of(_type_at(root, parts))
        hint = f" (the keys there are: {', '.join(known)})" if known else ""
        return f"unknown key {unknown.group('key')!r} {_where(parts)}{hint}"
    missing = _MISSING.match(message)
    if missing:
        return f"missing key {missing.group('key')!r} {_where(parts)}"
    if not parts:
        return message
    where = f"key {parts[-1]!r} {_where(parts[:-1])}"
    bad_enum = _BAD_ENUM.match(message)
    if bad_enum:
        allowed = _literal_values(_type_at(root, parts))
        hint = f" (use one of: {', '.join(repr(v) for v in allowed)})" if allowed else ""
        return f"{where}: invalid value {bad_enum.group('value')}{hint}"
    # msgspec speaks JSON; a TOML file has tables where JSON has objects.
    message = message.replace("`object`", "a table").replace("`array`", "an array")
    return f"{where}: {message[:1].lower()}{message[1:]}"


def _split_path(path: str) -> list[str]:
    """``$.tools.enabled[1]`` → ``["tools", "enabled[1]"]`` (an index stays with its key)."""
    parts: list[str] = []
    for name, index in _PATH_PART.findall(path.removeprefix("$")):
        if name:
            parts.append(name)
        elif parts:
            parts[-1] += index
        else:
            parts.append(index)
    return parts


def _where(section: Sequence[str]) -> str:
    return f"in [{'.'.join(section)}]" if section else "at the top level"


def _type_at(root: type, parts: Sequence[str]) -> Any:
    """The declared type at a path of the file, or None when the path leaves the schema."""
    current: Any = root
    for part in parts:
        if "[" in part:
            return None
        current = _strip_annotated(current)
        if isinstance(current, type) and issubclass(current, msgspec.Struct):
            fields = {f.encode_name: f.type for f in msgspec.structs.fields(current)}
            if part not in fields:
                return None
            current = fields[part]
        elif typing.get_origin(current) is dict:
            current = typing.get_args(current)[1]
        else:
            return None
    return _strip_annotated(current)


def _strip_annotated(tp: Any) -> Any:
    return typing.get_args(tp)[0] if typing.get_origin(tp) is typing.Annotated else tp


def _keys_of(tp: Any) -> list[str]:
    if isinstance(tp, type) and issubclass(tp, msgspec.Struct):
        return sorted(f.encode_name for f in msgspec.structs.fields(tp))
    return []


def _literal_values(tp: Any) -> tuple[Any, ...]:
    return typing.get_args(tp) if typing.get_origin(tp) is typing.Literal else ()
