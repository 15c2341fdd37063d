"""Store URLs and the error about them, shared by ``choose`` (which opens a store) and the PostgreSQL
backend (which ``choose`` imports when a URL names it): kept apart, so that no import circle joins them."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

from anyy.domain.errors import AnyyError

POSTGRES_SCHEMES = ("postgresql://", "postgres://")


class StoreSettingError(AnyyError):
    """The store a profile names cannot be used as set: a bad URL, no server, no database, a newer schema,
    or the PostgreSQL extra not installed."""

    code = "store_unavailable"


def redact(url: str) -> str:
    """The URL without its password, for messages and logs."""
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:
        return "<unparsable URL>"
    if password is None:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.replace(f":{password}@", ":***@", 1)))
