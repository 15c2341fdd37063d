from __future__ import annotations

from tests.cli.live import start_gateway

__all__ = ["start_gateway"]
