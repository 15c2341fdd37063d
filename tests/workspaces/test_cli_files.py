"""W3 from the command line: ``anyy sessions diff`` shows what the agent changed (summary and unified
diff), ``anyy sessions rewind`` previews, then restores on ``--yes``, keeping a file changed by hand."""

from __future__ import annotations

from pathlib import Path

from anyy.profiles import create_profile
from tests.fakes.gateways import run
from tests.killtest.gateway_process import GatewayProcess

TIMEOUT = 60.0


def test_w3_sessions_diff_and_rewind_from_the_command_line(tmp_path: Path) -> None:
    home = tmp_path / "home"
    create_profile(home, "cli")
    work = tmp_path / "work"
    work.mkdir()
    (work / "notes.txt").write_text("kept by the user\n")
    gateway = GatewayProcess(home, "cli", cwd=work, log=tmp_path / "stderr.log")
    gateway.start()
    try:
        rpc = gateway.client()
        session_id = rpc.call("session.create")["id"]
        rpc.call("session.tools.configure", session_id=session_id, enabled=["write_file", "shell"])
        for text in ("write a.txt: alpha", "run: echo beta >> a.txt && rm notes.txt"):
            sent = rpc.call("session.send", session_id=session_id, text=text)
            assert rpc.call("session.wait", submission_id=sent["id"], timeout=TIMEOUT)["state"] == "completed"
        first_user = rpc.call("session.history", session_id=session_id, limit=50)["items"][-1]["id"]

        diff = run(home, "sessions", "diff", session_id, "--profile", "cli")
        assert diff.returncode == 0, diff.stderr
        assert "added (1):\n  + a.txt" in diff.stdout
        assert "+alphabeta" in diff.stdout
        assert "-kept by the user" in diff.stdout

        (work / "a.txt").write_text("changed by hand\n")
        rewind = run(home, "sessions", "rewind", session_id, str(first_user), "--yes", "--profile", "cli")
        assert rewind.returncode == 0, rewind.stderr
        assert "changed by hand since the agent's last capture (1):\n  ! a.txt" in rewind.stdout
        assert "kept (changed by hand) (1):\n  ! a.txt" in rewind.stdout
        assert (work / "notes.txt").read_text() == "kept by the user\n"
        assert (work / "a.txt").read_text() == "changed by hand\n"
    finally:
        gateway.stop()
