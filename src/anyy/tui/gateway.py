"""Finding the profile's Gateway, and starting it when none runs (the TUI does not fail fast as
``anyy chat`` does: it starts ``python -m anyy.gateway`` the way ``anyy gateway start`` does)."""

from __future__ import annotations

from anyy.profiles.gateway_launch import GatewayStartFailed, answering, ensure_gateway

__all__ = ["GatewayStartFailed", "answering", "ensure_gateway"]
