"""What a commit's acknowledgement promises: the profile setting ``[store] durability`` (D10).

- ``process``: the write survives a crash or kill of the Gateway's process. SQLite runs
  ``synchronous=NORMAL`` in WAL mode: a power cut (or a kernel crash) may lose the last commits, never
  corrupting the database. PostgreSQL has every commit once it answers; the server's own
  ``synchronous_commit`` decides what its machine's power cut may lose (``on`` by default: nothing).
- ``power``: the write also survives a power cut. SQLite runs ``synchronous=FULL`` (the WAL is synced to
  the disk at every commit); PostgreSQL commits with ``synchronous_commit = on`` whatever the server's
  default. Both assume a disk that does not lie about its cache.

In the domain (no import but typing): the profile's settings name it without loading the store.
"""

from __future__ import annotations

from typing import Literal

Durability = Literal["process", "power"]
DURABILITIES: tuple[Durability, ...] = ("process", "power")
