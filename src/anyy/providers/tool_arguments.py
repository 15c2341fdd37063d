"""A tool call's arguments, as the model streamed them: JSON text, in pieces."""

from __future__ import annotations

import json
from typing import Any

INVALID_JSON_KEY = "_invalid_json"


def parse_arguments(raw: str) -> dict[str, Any]:
    """The arguments of a tool call. Text that is not a JSON object is kept under ``_invalid_json`` so the
    tool reports it to the model (which can then correct itself) instead of the whole turn failing."""
    if not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        return {INVALID_JSON_KEY: raw}
    return value if isinstance(value, dict) else {INVALID_JSON_KEY: raw}
