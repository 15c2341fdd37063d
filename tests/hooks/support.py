"""Hooks for the N6 tests: small shell scripts written into the test's folder, a Gateway whose profile
runs them, and the real `anyy hooks` command line that trusts them."""

from __future__ import annotations

import os
import select
import stat
from pathlib import Path
from typing import Any

from click.testing import CliRunner, Result

from anyy.cli.main import main
from anyy.domain.model_io import ToolCallEvent
from tests.fakes.gateways import LiveGateway


def script(path: Path, body: str) -> Path:
    """An executable /bin/sh script; it gets the event as JSON on stdin."""
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def hooks_cli(live: LiveGateway, *args: str) -> Result:
    return CliRunner().invoke(main, ["hooks", *args, "--profile", live.profile.name], env={"ANYY_HOME": str(live.home)})


def gateway_with(tmp_path: Path, config: str, *, trust: bool = True, codemode: bool = False) -> LiveGateway:
    """A live Gateway (start it with `with`) whose config.toml ends with ``config``; its hooks trusted by
    `anyy hooks trust`."""
    live = LiveGateway(tmp_path)
    path = live.profile.config_path
    text = path.read_text().replace("codemode = false", f"codemode = {'true' if codemode else 'false'}")
    path.write_text(text + "\n" + config)
    if trust:
        result = hooks_cli(live, "trust")
        assert result.exit_code == 0, result.output
    return live  # started by `with`


def shell_calls(*commands: str, prefix: str = "c") -> list[ToolCallEvent]:
    return [
        ToolCallEvent(call_id=f"{prefix}{index}", name="shell", arguments={"command": command})
        for index, command in enumerate(commands)
    ]


def tool_results(live: LiveGateway, session_id: str) -> list[dict[str, Any]]:
    """The session's tool results, oldest first."""
    return entries(live, session_id, "tool_result")


def entries(live: LiveGateway, session_id: str, kind: str) -> list[dict[str, Any]]:
    """The session's entries of one kind, oldest first."""
    history = live.call("session.history", {"session_id": session_id, "limit": 200})["items"]
    return sorted((entry for entry in history if entry["kind"] == kind), key=lambda entry: int(entry["id"]))


def turn(live: LiveGateway, text: str, *, session_id: str | None = None) -> tuple[str, dict[str, Any]]:
    """Send ``text`` (to a new session unless given one) and wait until its submission settles."""
    if session_id is None:
        session_id = live.call("session.create")["id"]
    sent = live.call("session.send", {"session_id": session_id, "text": text})
    waited = live.call("session.wait", {"submission_id": sent["id"], "timeout": 60})
    return session_id, waited


def wait_exit(pid: int, timeout: float = 10.0) -> bool:
    """True once the process ``pid`` ended (a pidfd turns readable then), False if still alive at the end."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        readable, _, _ = select.select([fd], [], [], timeout)
        return bool(readable)
    finally:
        os.close(fd)
