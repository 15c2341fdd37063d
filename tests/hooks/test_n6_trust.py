"""N6: a hook runs only while the user trusts its exact content: an untrusted hook never runs (for any
event), a changed script is not run and the user is told why, a hook that would read a file of the
working directory (the agent's to change) is not run; the safety hook that cannot run makes the call ask."""

from __future__ import annotations

from pathlib import Path

from tests.fakes.gateways import is_state
from tests.hooks.support import entries, gateway_with, hooks_cli, script, shell_calls, tool_results, turn

EVENTS = ("pre_tool", "post_tool", "session_start", "submission", "execution_end")


def _marking(tmp_path: Path, marker: Path) -> Path:
    return script(tmp_path / "mark.sh", f'cat > /dev/null\necho "$ANYY_HOOK_EVENT" >> "{marker}"\n')


def test_n6_an_untrusted_hook_never_runs(tmp_path: Path) -> None:
    marker = tmp_path / "ran.txt"
    mark = _marking(tmp_path, marker)
    config = "".join(f'[[hooks.{event}]]\ncommand = ["{mark}"]\n' for event in EVENTS)
    with gateway_with(tmp_path, config, trust=False) as live:
        notes = live.call("gateway.status")["hooks"]
        assert len(notes) == 5
        assert all("is not run: it is not trusted yet" in note for note in notes)
        live.model.enqueue(shell_calls("echo hi > out.txt"), "Fine, not done.")
        session_id, waited = turn(live, "write it")
        # The safety hook could not check the call: it waits for the user's approval instead of running.
        assert waited["state"] == "suspended"
        question = live.call("session.get", {"session_id": session_id})["waiting_question"]
        assert "the hook mark.sh could not check it (it is not trusted yet" in question["question"]
        said = [entry["text"] for entry in entries(live, session_id, "notice")]
        assert "The pre_tool hook mark.sh was not run: it is not trusted yet: read it, then run `anyy hooks " in (
            "\n".join(said)
        )
        with live.ws() as client:
            client.call("events.subscribe", {"session_id": session_id})
            client.call(
                "session.approve",
                {"session_id": session_id, "execution_id": question["execution_id"], "decision": "deny"},
            )
            client.event(is_state("completed", question["execution_id"]))
    assert not marker.exists()  # after the Gateway closed: no execution_end hook ran in the background either
    assert not (tmp_path / "work" / "out.txt").exists()


ALLOW_AND_MARK = """cat > /dev/null
echo run >> "{marker}"
echo '{{"decision": "allow"}}'
"""


def test_n6_a_changed_hook_file_is_not_run_and_says_why(tmp_path: Path) -> None:
    marker = tmp_path / "ran.txt"
    guard = script(tmp_path / "guard.sh", ALLOW_AND_MARK.format(marker=marker))
    config = f'[tools.approval]\nshell = "ask"\n[[hooks.pre_tool]]\ncommand = ["{guard}"]\n'
    with gateway_with(tmp_path, config) as live:
        live.model.enqueue(shell_calls("echo one > one.txt"), "One.")
        session_id, waited = turn(live, "first")
        assert waited["state"] == "completed"  # trusted: it ran, and its allow answered the rule's ask
        assert marker.read_text() == "run\n"

        guard.write_text(guard.read_text() + 'echo changed >> "' + str(marker) + '"\n')
        listed = hooks_cli(live, "list")
        assert "pre_tool:guard.sh [*]  CHANGED" in listed.output
        assert f"{guard} changed since it was trusted" in listed.output
        assert any("guard.sh is not run" in note for note in live.call("gateway.status")["hooks"])

        live.model.enqueue(shell_calls("echo two > two.txt", prefix="d"), "Two.")
        _, waited = turn(live, "second", session_id=session_id)
        assert waited["state"] == "suspended"  # not run: the rule's ask stands, with the reason
        question = live.call("session.get", {"session_id": session_id})["waiting_question"]
        assert f"({guard} changed since it was trusted" in question["question"]
        notices = [entry["text"] for entry in entries(live, session_id, "notice")]
        assert any(
            f"The pre_tool hook guard.sh was not run: {guard} changed since it was trusted" in n for n in notices
        )
        assert marker.read_text() == "run\n"  # the changed file never ran

        # Trusted again, it runs again: no restart needed.
        assert hooks_cli(live, "trust", "guard.sh").exit_code == 0
        with live.ws() as client:
            client.call("events.subscribe", {"session_id": session_id})
            client.call(
                "session.approve",
                {"session_id": session_id, "execution_id": question["execution_id"], "decision": "deny"},
            )
            client.event(is_state("completed", question["execution_id"]))
        live.model.enqueue(shell_calls("echo three > three.txt", prefix="e"), "Three.")
        _, waited = turn(live, "third", session_id=session_id)
        assert waited["state"] == "completed"
    assert marker.read_text() == "run\nrun\nchanged\n"
    assert (tmp_path / "work" / "three.txt").exists()
    assert not (tmp_path / "work" / "two.txt").exists()


def test_n6_a_hook_that_would_read_the_working_directory_is_not_run(tmp_path: Path) -> None:
    marker = tmp_path / "ran.txt"
    config = '[[hooks.pre_tool]]\ncommand = ["/bin/sh", "check.sh"]\nmatcher = "shell"\n'
    with gateway_with(tmp_path, config) as live:
        # The agent (or the repository) puts its own check.sh where the hook would read it.
        script(tmp_path / "work" / "check.sh", f'echo agent >> "{marker}"\necho \'{{"decision": "allow"}}\'\n')
        live.model.enqueue(shell_calls("echo hi"), "Asked.")
        session_id, waited = turn(live, "go")
        assert waited["state"] == "suspended"
        question = live.call("session.get", {"session_id": session_id})["waiting_question"]
        assert "its argument 'check.sh' names a file in the working directory" in question["question"]
        assert tool_results(live, session_id) == []
    assert not marker.exists()


def test_n6_a_hook_command_that_cannot_run_as_meant_is_refused_when_the_config_is_read(tmp_path: Path) -> None:
    from tests.fakes.gateways import LiveGateway

    live = LiveGateway(tmp_path, serve=False)
    path = live.profile.config_path
    base = path.read_text()
    path.write_text(base + '\n[[hooks.pre_tool]]\ncommand = "hooks/guard.sh"\n')
    listed = hooks_cli(live, "list")
    assert listed.exit_code == 1
    assert "[[hooks.pre_tool]] number 1: the program 'hooks/guard.sh' is a relative path" in listed.output
    path.write_text(base + '\n[[hooks.submission]]\ncommand = ["/bin/true"]\nmatcher = "shell"\n')
    listed = hooks_cli(live, "list")
    assert "'matcher' selects tools, so it applies to pre_tool and post_tool only" in listed.output
    path.write_text(base + '\n[[hooks.pre_tool]]\ncommand = ["/bin/true"]\ntimeout = 4000\n')
    assert "timeout" in hooks_cli(live, "list").output
