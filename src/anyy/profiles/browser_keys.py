"""Browser keys: what lets an open Dashboard tab come back after its Gateway restarted (U8).

The Gateway's access token changes with every Gateway process, and a tab holds only that token. When a
page trades its one-time code (``POST /auth/exchange``), it also gets a browser key, as an HttpOnly,
SameSite=Strict cookie that only ``/auth/refresh`` receives; that route answers the current access token to
a page of this Gateway that shows a known key. The profile keeps only each key's SHA-256
(``PROFILE/browser-keys.json``, mode 0600), so reading the file opens nothing; ``anyy dashboard --revoke``
forgets them all, at once for a running Gateway too (it reads the file at each refresh).
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import time
from pathlib import Path

import msgspec

from anyy.profiles.profile import Profile

KEYS_FILE = "browser-keys.json"
MAX_KEYS = 32  # browsers remembered at once; the oldest is forgotten first
KEY_DAYS = 30  # a key not used for this long is forgotten


class _Key(msgspec.Struct, kw_only=True):
    hash: str
    created: float
    used: float


class _Keys(msgspec.Struct, kw_only=True):
    keys: list[_Key] = []


def keys_path(profile: Profile) -> Path:
    return profile.path / KEYS_FILE


def _digest(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def _read(profile: Profile) -> list[_Key]:
    try:
        return msgspec.json.decode(keys_path(profile).read_bytes(), type=_Keys).keys
    except (FileNotFoundError, msgspec.DecodeError, msgspec.ValidationError):
        return []


def _write(profile: Profile, keys: list[_Key]) -> None:
    path = keys_path(profile)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, msgspec.json.encode(_Keys(keys=keys)))
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)


def _live(keys: list[_Key], now: float) -> list[_Key]:
    return [key for key in keys if now - key.used <= KEY_DAYS * 86400][-MAX_KEYS:]


def issue_key(profile: Profile) -> str:
    """A new browser key; only its digest is kept."""
    key = secrets.token_urlsafe(32)
    now = time.time()
    keys = _live(_read(profile), now)
    keys.append(_Key(hash=_digest(key), created=now, used=now))
    _write(profile, keys[-MAX_KEYS:])
    return key


def known_key(profile: Profile, key: str) -> bool:
    """Whether ``key`` was issued here and not revoked nor expired (its last use is then recorded)."""
    if not key:
        return False
    digest = _digest(key)
    now = time.time()
    keys = _live(_read(profile), now)
    found = next((k for k in keys if hmac.compare_digest(k.hash, digest)), None)
    if found is None:
        return False
    if now - found.used > 3600:  # recorded at most hourly: a refresh is not a write each time
        found.used = now
        _write(profile, keys)
    return True


def revoke_keys(profile: Profile) -> int:
    """Forget every browser key; how many there were."""
    count = len(_read(profile))
    keys_path(profile).unlink(missing_ok=True)
    return count
