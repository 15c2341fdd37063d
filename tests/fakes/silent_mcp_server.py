"""An MCP server over stdio that never answers: it reads its input (so the client's writes never block)
and says nothing, not even to ``initialize``. A server hung at start, for the tests that must not wait
on it (N1)."""

from __future__ import annotations

import sys

if __name__ == "__main__":
    for _ in sys.stdin.buffer:
        pass
