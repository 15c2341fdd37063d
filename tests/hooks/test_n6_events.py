"""N6: hooks that hang are killed at their timeout (the call denied: fail closed) while the Gateway goes on
answering; session_start and submission hooks add context to the model's system prompt, and a submission
hook can keep a message from the model without losing it; execution_end hooks learn how a run ended."""

from __future__ import annotations

import json
import os
import select
from pathlib import Path

from tests.fakes.gateways import busy_session, is_state
from tests.hooks.support import entries, gateway_with, script, shell_calls, tool_results, turn, wait_exit

HANG = """cat > /dev/null
echo $$ > "{pids}"
sleep 1000 &
echo $! >> "{pids}"
wait
"""


def test_n6_a_hung_pre_tool_hook_is_killed_at_its_timeout_and_the_call_denied(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    hang = script(tmp_path / "hang.sh", HANG.format(pids=pids))
    config = f'[[hooks.pre_tool]]\ncommand = ["{hang}"]\ntimeout = 1\n'
    with gateway_with(tmp_path, config) as live:
        live.model.enqueue(shell_calls("echo never > out.txt"), "Blocked, then.")
        session_id, waited = turn(live, "go")
        assert waited["state"] == "completed"
        [result] = tool_results(live, session_id)
        assert result["text"].startswith(
            "Denied by the user's hooks: the hook hang.sh failed (it did not answer within 1 s and was killed), so "
            "the call is blocked."
        )
        assert "did not answer within 1 s" in live.model.requests[-1].messages[-1].text  # the model was told
        [notice] = entries(live, session_id, "notice")
        assert notice["text"] == "The pre_tool hook hang.sh failed: it did not answer within 1 s and was killed."
    hook, child = (int(line) for line in pids.read_text().split())
    assert wait_exit(hook)
    assert wait_exit(child)  # its whole process group went
    assert not (tmp_path / "work" / "out.txt").exists()


HELD = """cat > /dev/null
echo started > "{started}"
read line < "{release}"
echo '{{"decision": "allow", "context": "released"}}'
"""


def test_n6_a_held_hook_leaves_the_gateway_answering_other_requests(tmp_path: Path) -> None:
    started, release = tmp_path / "started", tmp_path / "release"
    os.mkfifo(started)
    os.mkfifo(release)
    held = script(tmp_path / "held.sh", HELD.format(started=started, release=release))
    config = f'[[hooks.pre_tool]]\ncommand = ["{held}"]\ntimeout = 300\n'
    with gateway_with(tmp_path, config) as live:
        live.model.enqueue(shell_calls("echo done"), "Done.")
        session_id = live.call("session.create")["id"]
        sent = live.call("session.send", {"session_id": session_id, "text": "go"})
        reader = os.open(started, os.O_RDONLY | os.O_NONBLOCK)  # no writer yet: not readable until the hook writes
        try:
            readable, _, _ = select.select([reader], [], [], 30)
            assert readable, "the hook did not start"
            assert os.read(reader, 100) == b"started\n"
        finally:
            os.close(reader)
        # The hook is held now. The Gateway's loop answers others meanwhile, over the network too.
        with live.ws() as other:
            other_id = other.call("session.create")["id"]
            assert other.call("session.get", {"session_id": other_id})["waiting_question"] is None
            assert other.call("gateway.status")["profile"] == "default"
            assert (
                live.call("session.wait", {"submission_id": sent["id"], "timeout": 0})["state"] == "taken"
            )  # still held
            other.call("events.subscribe", {"session_id": session_id})
            with open(release, "w") as gate:
                gate.write("go\n")
            assert live.call("session.wait", {"submission_id": sent["id"], "timeout": 60})["state"] == "completed"
        [result] = tool_results(live, session_id)
        assert result["text"].startswith("done\n")
        assert result["text"].endswith("\n\n[hook held.sh: released]")


HELD_PID = """cat > /dev/null
echo $$ > "{pids}"
echo started > "{started}"
read line < "{release}"
"""


def test_n6_a_stop_during_a_pre_tool_hook_kills_it_and_runs_nothing(tmp_path: Path) -> None:
    pids, started, release = tmp_path / "pids", tmp_path / "started", tmp_path / "release"
    os.mkfifo(started)
    os.mkfifo(release)
    held = script(tmp_path / "held.sh", HELD_PID.format(pids=pids, started=started, release=release))
    config = f'[[hooks.pre_tool]]\ncommand = ["{held}"]\ntimeout = 300\n'
    with gateway_with(tmp_path, config) as live:
        live.model.enqueue(shell_calls("echo never > out.txt"))
        session_id = live.call("session.create")["id"]
        sent = live.call("session.send", {"session_id": session_id, "text": "go"})
        reader = os.open(started, os.O_RDONLY | os.O_NONBLOCK)
        try:
            assert select.select([reader], [], [], 30)[0], "the hook did not start"
        finally:
            os.close(reader)
        execution_id = live.call("session.get", {"session_id": session_id})["running_execution"]
        live.call("session.stop", {"session_id": session_id, "execution_id": execution_id})
        assert live.call("session.wait", {"submission_id": sent["id"], "timeout": 60})["state"] == "interrupted"
        [result] = tool_results(live, session_id)
        assert result["text"] == "Not run: the user stopped the response before this call started."
    assert wait_exit(int(pids.read_text()))
    assert not (tmp_path / "work" / "out.txt").exists()


START = 'cat > /dev/null\necho "branch: main, 2 files changed"\n'
SUBMIT = """input=$(cat)
case "$input" in
  *password*) echo "the message holds a password" >&2; exit 2 ;;
esac
echo '{"context": "ticket ABC-1 is open"}'
"""


def test_n6_session_start_and_submission_hooks_add_context_for_the_model(tmp_path: Path) -> None:
    start = script(tmp_path / "start.sh", START)
    submit = script(tmp_path / "submit.sh", SUBMIT)
    config = f'[[hooks.session_start]]\ncommand = ["{start}"]\n[[hooks.submission]]\ncommand = ["{submit}"]\n'
    with gateway_with(tmp_path, config) as live:
        live.model.enqueue("First.", "Second.")
        session_id, waited = turn(live, "hello")
        assert waited["state"] == "completed"
        first = live.model.requests[0].system
        assert "Context from the user's hooks for this response:" in first
        assert "- hook start.sh: branch: main, 2 files changed" in first
        assert "- hook submit.sh: ticket ABC-1 is open" in first
        _, waited = turn(live, "again", session_id=session_id)
        second = live.model.requests[1].system
        assert "branch: main" not in second  # a session starts once
        assert "- hook submit.sh: ticket ABC-1 is open" in second


def test_n6_a_submission_hook_keeps_a_message_from_the_model_and_loses_nothing(tmp_path: Path) -> None:
    submit = script(tmp_path / "submit.sh", SUBMIT)
    config = f'[[hooks.submission]]\ncommand = ["{submit}"]\n'
    with gateway_with(tmp_path, config) as live:
        session_id, waited = turn(live, "my password is hunter2")
        assert waited["state"] == "failed"
        assert live.model.requests == []  # the model never saw it
        [message] = entries(live, session_id, "user")
        assert message["text"] == "my password is hunter2"  # recorded all the same
        [notice] = entries(live, session_id, "notice")
        assert (
            "the message was not sent to the model: the hook submit.sh denied it: the message holds a password"
            in (notice["text"])
        )


END = 'cat >> "{log}"\necho >> "{log}"\n'


def test_n6_an_execution_end_hook_learns_how_the_run_ended(tmp_path: Path) -> None:
    log = tmp_path / "ends.jsonl"
    end = script(tmp_path / "end.sh", END.format(log=log))
    config = f'[[hooks.execution_end]]\ncommand = ["{end}"]\n'
    with gateway_with(tmp_path, config) as live:
        live.model.enqueue("Done.")
        session_id, waited = turn(live, "hello")
        assert waited["state"] == "completed"
    # The Gateway waits for its background hooks as it closes.
    [ended] = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    assert ended["event"] == "execution_end"
    assert ended["state"] == "completed"
    assert (ended["session_id"], ended["execution_id"]) == (session_id, waited["execution_id"])
    assert ended["workdir"] == str(tmp_path / "work")


STEERED = """input=$(cat)
case "$input" in
  *steer-me*) echo "the steering message was seen by the hook" ;;
esac
"""


def test_n6_a_submission_hook_sees_steering_taken_at_a_checkpoint(tmp_path: Path) -> None:
    steered = script(tmp_path / "steered.sh", STEERED)
    config = f'[[hooks.submission]]\ncommand = ["{steered}"]\n'
    with gateway_with(tmp_path, config) as live, live.ws() as client:
        busy = busy_session(live, client)
        live.model.enqueue("Steered.")
        client.call("session.send", {"session_id": busy.id, "text": "steer-me: look at the tests", "kind": "steering"})
        busy.gate.open()
        client.event(is_state("completed", busy.execution_id))
        first, second = live.model.requests
        assert "the steering message was seen" not in first.system
        assert "- hook steered.sh: the steering message was seen by the hook" in second.system
