"""The Gateway: one process per profile, the one door to its sessions (JSON-RPC over WebSocket and HTTP)."""
