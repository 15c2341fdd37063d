"""Content-addressed files: ``objects/ab/abcdef…`` named by the SHA-256 of their bytes.

Written to a temporary file, flushed to disk, then renamed into place, so a reader never sees a partial
object and an object referenced by a committed entry is already durable.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
from pathlib import Path

from anyy.domain.errors import InvalidInput, NotFound

_HASH = re.compile(r"^[0-9a-f]{64}$")


def check_hash(object_hash: str) -> str:
    if not isinstance(object_hash, str) or not _HASH.match(object_hash):
        raise InvalidInput(f"{object_hash!r} is not an object hash (64 lower-case hex characters)")
    return object_hash


class ObjectFiles:
    def __init__(self, root: Path) -> None:
        self.root = root

    def path(self, object_hash: str) -> Path:
        check_hash(object_hash)
        return self.root / object_hash[:2] / object_hash

    @staticmethod
    def hash_of(data: bytes) -> str:
        return hashlib.sha256(data).hexdigest()

    def put(self, data: bytes) -> str:
        object_hash = self.hash_of(data)
        target = self.path(object_hash)
        if target.exists():
            return object_hash
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{object_hash}.{os.getpid()}.tmp")
        try:
            with open(tmp, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, target)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()  # a full disk must not leave a partial file behind
            raise
        return object_hash

    def get(self, object_hash: str) -> bytes:
        try:
            return self.path(object_hash).read_bytes()
        except FileNotFoundError:
            raise NotFound(f"object {object_hash} is missing from {self.root}") from None

    def remove(self, object_hash: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.path(object_hash).unlink()
