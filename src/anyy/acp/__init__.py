"""``anyy acp``: the Agent Client Protocol (ACP) over stdio, bridged to the profile's Gateway (E1-E3).

An editor (Zed, a JetBrains IDE, Neovim's plugins…) starts ``anyy acp`` and speaks ACP on its stdin and
stdout. The bridge is one more client of the Gateway, through :mod:`anyy.client` only: every ACP session is
an anyy session, and the bridge keeps nothing of a session but the subscription that carries its events,
so an editor (or the Gateway) restarted at any moment finds the whole session again with ``session/load``.

- :mod:`anyy.acp.updates`: anyy's entries and events as ACP ``session/update`` payloads (no I/O);
- :mod:`anyy.acp.bridge`: the ACP agent, one JSON-RPC client of the Gateway;
- :mod:`anyy.acp.serve`: finding or starting the Gateway, then serving ACP on stdio.

The ACP SDK (``agent-client-protocol``, pydantic models of the whole protocol) is imported only by the
command, never when the CLI starts.
"""
