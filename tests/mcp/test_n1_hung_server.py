"""N1: one MCP server that hangs at ``initialize`` delays no session that does not use it, nor the
Gateway's status; a session that uses it waits at most ``[mcp] wait`` and then runs without it, told which
server is missing (a notice for the user, a line of the model's instructions). A real Gateway on a socket,
a real stdio server that never answers."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from tests.fakes.gateways import LiveGateway, WsClient

SILENT = Path(__file__).resolve().parents[1] / "fakes" / "silent_mcp_server.py"


def ended(client: WsClient, session_id: str) -> dict[str, Any]:
    return client.event(
        lambda e: (
            e.get("type") == "execution_state"
            and e.get("session_id") == session_id
            and e.get("state") not in ("running", "retry_wait")
        ),
        timeout=60,
    )


def test_n1_a_hung_server_delays_only_its_own_sessions_and_only_up_to_the_wait(tmp_path: Path) -> None:
    live = LiveGateway(tmp_path)
    # Its own start timeout is ten minutes: anything that waited for it would outlast every timeout here.
    live.profile.config_path.write_text(
        live.profile.config_path.read_text()
        + f'\n[mcp]\nwait = 1\n[mcp.servers.hung]\ncommand = "{sys.executable}"\nargs = ["{SILENT}"]\ntimeout = 600\n'
    )
    with live, live.ws() as client:
        assert client.call("gateway.status")["profile"] == "default"

        live.model.enqueue("without any MCP tool")
        plain = client.call("session.create")
        client.call("events.subscribe", {"session_id": plain["id"]})
        client.call("session.send", {"session_id": plain["id"], "text": "hello"})
        assert ended(client, plain["id"])["state"] == "completed"

        live.model.enqueue("without the hung server's tools")
        user = client.call("session.create")
        client.call("session.tools.configure", {"session_id": user["id"], "enabled": ["mcp_hung_*"], "codemode": False})
        client.call("events.subscribe", {"session_id": user["id"]})
        client.call("session.send", {"session_id": user["id"], "text": "use the server"})
        assert ended(client, user["id"])["state"] == "completed"
        notices = [e for e in client.events if e.get("type") == "notice" and e.get("session_id") == user["id"]]
        assert any("hung (still starting)" in n["text"] for n in notices), notices
        assert client.call("gateway.status")["profile"] == "default"
        # Reloading a session lists the servers again, and reports the hung one rather than waiting for it.
        steps = client.call("session.reload", {"session_id": plain["id"]})
        assert steps[-1]["step"] == "tool servers"
        assert steps[-1]["detail"] == "hung: still starting"

    told = live.model.requests[-1]
    assert "hung (still starting)" in told.system  # the model is told which tools are missing
    assert not any(spec.name.startswith("mcp_hung") for spec in told.tools)
