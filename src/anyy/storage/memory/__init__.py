"""The in-memory ``SessionStore``: the protocol's reference model, with no database underneath.

It passes the same conformance suite as SQLite, which is how that suite proves the protocol complete: the
runtime and the Gateway can run on any store that keeps these promises. Nothing survives the process.
"""

from anyy.storage.memory.data import MemoryData
from anyy.storage.memory.store import MemoryStore

__all__ = ["MemoryData", "MemoryStore"]
