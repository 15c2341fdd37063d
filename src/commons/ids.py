"""Random identifiers: a short type prefix and 12 characters of a lower-case base32 alphabet.

60 bits of randomness: ids never collide in practice within one profile, and an id from another profile is
simply unknown there (never confused with a local one, as sequential numbers would be).
"""

from __future__ import annotations

import secrets

_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"  # Crockford's base32, lower case


def new_id(prefix: str) -> str:
    """Return ``prefix_`` followed by 12 random base32 characters, e.g. ``ses_3k9v0q2m7xab``."""
    value = secrets.randbits(60)
    chars = []
    for _ in range(12):
        chars.append(_ALPHABET[value & 31])
        value >>= 5
    return f"{prefix}_{''.join(chars)}"
