"""Opaque cursors for keyset paging: stable when rows are inserted while a client pages."""

from __future__ import annotations

import base64
import binascii
from typing import Any

import msgspec

from anyy.domain.errors import InvalidInput


def encode_cursor(*values: Any) -> str:
    return base64.urlsafe_b64encode(msgspec.json.encode(list(values))).decode().rstrip("=")


def decode_cursor(cursor: str, *types: type | tuple[type, ...]) -> list[Any]:
    """The values of a cursor, each checked against its type (a tampered cursor is invalid input)."""
    invalid = InvalidInput("invalid page cursor: pass back the next_cursor of the previous page")
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        values = msgspec.json.decode(raw)
    except (binascii.Error, ValueError, msgspec.DecodeError):
        raise invalid from None
    if not isinstance(values, list) or len(values) != len(types):
        raise invalid
    for value, expected in zip(values, types, strict=True):
        if isinstance(value, bool) or not isinstance(value, expected):
            raise invalid
    return values


def check_limit(limit: int, maximum: int = 500) -> int:
    if not 1 <= limit <= maximum:
        raise InvalidInput(f"page size must be between 1 and {maximum}, not {limit}")
    return limit
