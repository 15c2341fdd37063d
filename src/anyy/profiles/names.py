"""Names of profiles, roles and providers: they become folder and file names, so they are kept plain."""

from __future__ import annotations

import re

from anyy.domain.errors import InvalidInput

_NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")
NAME_RULE = "1 to 64 lower-case letters, digits, '-' or '_', starting with a letter or a digit"


def is_valid_name(name: str) -> bool:
    return _NAME.fullmatch(name) is not None


def check_name(name: str, *, what: str, source: str = "") -> str:
    """Return ``name`` if it is usable as a folder or file name, else raise InvalidInput.

    ``what`` says which kind of name it is ("profile", "role"); ``source`` where it came from
    (e.g. "from ANYY_PROFILE"), so that a bad value set long ago in the environment is easy to find.
    """
    if is_valid_name(name):
        return name
    origin = f" ({source})" if source else ""
    raise InvalidInput(f"invalid {what} name {name!r}{origin}: use {NAME_RULE}")
