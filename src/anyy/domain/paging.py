"""Opaque cursors for keyset paging: stable when rows are inserted while a client pages."""

from __future__ import annotations

import base64
import binascii
from typing import Any

import msgspec

from anyy.domain.errors import InvalidInput


def encode_cursor(*values: Any) -> str:
    return base64.urlsafe_b64encode(msgspec.json.encode(list(values))).decode().rstrip("=")


def decode_cursor(cursor: str, arity: int) -> list[Any]:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        values = msgspec.json.decode(raw)
    except (binascii.Error, ValueError, msgspec.DecodeError):
        raise InvalidInput("invalid page cursor: pass back the next_cursor of the previous page") from None
    if not isinstance(values, list) or len(values) != arity:
        raise InvalidInput("invalid page cursor: pass back the next_cursor of the previous page")
    return values


def check_limit(limit: int, maximum: int = 500) -> int:
    if not 1 <= limit <= maximum:
        raise InvalidInput(f"page size must be between 1 and {maximum}, not {limit}")
    return limit
