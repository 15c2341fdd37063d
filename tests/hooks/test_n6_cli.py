"""N6: `anyy hooks list|trust|untrust|test`, the user's view of their hooks and of what may run."""

from __future__ import annotations

import json
from pathlib import Path

from tests.fakes.gateways import LiveGateway
from tests.hooks.support import hooks_cli, script

GUARD = """input=$(cat)
case "$input" in
  *'rm -rf'*) echo '{"decision": "deny", "reason": "no recursive removal"}' ;;
esac
"""


def test_n6_hooks_are_listed_trusted_untrusted_and_tested_from_the_command_line(tmp_path: Path) -> None:
    guard = script(tmp_path / "guard.sh", GUARD)
    live = LiveGateway(tmp_path, serve=False)
    path = live.profile.config_path
    path.write_text(path.read_text() + f'\n[[hooks.pre_tool]]\ncommand = "{guard}"\nmatcher = "shell"\ntimeout = 3\n')

    listed = hooks_cli(live, "list")
    assert listed.exit_code == 0, listed.output
    assert "pre_tool:guard.sh [shell]  NOT TRUSTED  (timeout 3 s)" in listed.output
    assert "not run: it is not trusted yet: read it, then run `anyy hooks trust`" in listed.output

    trusted = hooks_cli(live, "trust", "pre_tool:guard.sh")
    assert trusted.exit_code == 0, trusted.output
    assert f"trusted: pre_tool:guard.sh  {guard}" in trusted.output
    [record] = json.loads(hooks_cli(live, "list", "--json").output)
    assert (record["standing"], record["reason"], record["command"]) == ("trusted", "", [str(guard)])
    assert "already trusted" in hooks_cli(live, "trust").output

    tested = hooks_cli(live, "test", "guard.sh", "--arguments", '{"command": "rm -rf /"}')
    assert tested.exit_code == 0, tested.output
    assert "decision: deny" in tested.output
    assert "reason: no recursive removal" in tested.output
    assert "decision: none (the approval rules decide)" in hooks_cli(live, "test", "guard.sh").output

    assert hooks_cli(live, "untrust", "guard.sh").output == "untrusted 1 hook command(s)\n"
    assert "NOT TRUSTED" in hooks_cli(live, "list").output
    unknown = hooks_cli(live, "trust", "nosuch")
    assert unknown.exit_code == 1
    assert "no hook named 'nosuch' in [hooks] (the hooks: pre_tool:guard.sh)" in unknown.output
