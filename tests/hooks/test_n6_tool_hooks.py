"""N6: the user's pre_tool and post_tool hooks, through a real Gateway: a deny blocks every matching call
and the model reads why; allow answers a rule's ask but never a rule's deny; ask waits for the user's
approval; post_tool's context reaches the model's next request; a Codemode script's calls are hooked too."""

from __future__ import annotations

from pathlib import Path

from anyy.domain.model_io import ToolCallEvent
from tests.fakes.gateways import is_state
from tests.hooks.support import entries, gateway_with, script, shell_calls, tool_results, turn

GUARD = """input=$(cat)
case "$input" in
  *touch*) echo "touching files is not allowed here" >&2; exit 2 ;;
esac
"""


def test_n6_a_denying_pre_tool_hook_blocks_every_matching_call(tmp_path: Path) -> None:
    guard = script(tmp_path / "guard.sh", GUARD)
    config = f'[[hooks.pre_tool]]\ncommand = ["{guard}"]\nmatcher = "shell"\n'
    batches = [[f"touch marker-{batch}-{index}" for index in range(20)] for batch in range(3)]
    with gateway_with(tmp_path, config) as live:
        live.model.enqueue(
            *[shell_calls(*commands, "echo allowed > kept.txt", prefix=f"b{n}-") for n, commands in enumerate(batches)],
            "Done.",
        )
        session_id, waited = turn(live, "touch them all")
        assert waited["state"] == "completed"
        results = tool_results(live, session_id)
        denied = [r for r in results if r["data"].get("is_error", False)]
        assert len(denied) == 60  # every matching call, 100%
        for result in denied:
            assert result["text"].startswith("Denied by the user's hooks: the hook guard.sh denied it: touching")
        assert len([r for r in results if not r["data"].get("is_error", False)]) == 3  # the others ran
        # The model read the reason with each result.
        seen = [m for request in live.model.requests[1:] for m in request.messages if getattr(m, "call_id", "")]
        assert sum("touching files is not allowed here" in m.text for m in seen) >= 60
    assert not list((tmp_path / "work").glob("marker-*"))
    assert (tmp_path / "work" / "kept.txt").read_text() == "allowed\n"


ALLOW = 'cat > /dev/null\necho \'{"decision": "allow"}\'\n'


def test_n6_a_hook_allow_answers_a_rule_ask_but_never_a_rule_deny(tmp_path: Path) -> None:
    allow = script(tmp_path / "allow.sh", ALLOW)
    config = (
        f'[tools.approval]\nshell = {{ "rm *" = "deny", "*" = "ask" }}\n[[hooks.pre_tool]]\ncommand = ["{allow}"]\n'
    )
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "keep").mkdir()
    with gateway_with(tmp_path, config) as live:
        live.model.enqueue(shell_calls("echo ran > ran.txt", "rm -rf keep"), "Done.")
        session_id, waited = turn(live, "go")
        assert waited["state"] == "completed"  # nothing asked: the hook's allow answered the rule's ask
        ran, removed = tool_results(live, session_id)[-2:]
        assert not ran["data"].get("is_error", False)
        assert removed["text"].startswith("Denied: the profile's approval rules deny shell")
    assert (tmp_path / "work" / "ran.txt").exists()
    assert (tmp_path / "work" / "keep").is_dir()


ASK = """cat > /dev/null
echo '{"decision": "ask", "reason": "writes need a human look"}'
"""


def test_n6_a_hook_ask_waits_for_the_users_approval(tmp_path: Path) -> None:
    ask = script(tmp_path / "ask.sh", ASK)
    started = tmp_path / "started.txt"
    start = script(tmp_path / "start.sh", f'cat > /dev/null\necho started >> "{started}"\n')
    config = (
        f'[[hooks.pre_tool]]\ncommand = ["{ask}"]\nmatcher = "shell"\n[[hooks.session_start]]\ncommand = ["{start}"]\n'
    )
    with gateway_with(tmp_path, config) as live:
        live.model.enqueue(shell_calls("echo yes > out.txt"), "Written.")
        session_id, waited = turn(live, "write it")
        assert waited["state"] == "suspended"
        question = live.call("session.get", {"session_id": session_id})["waiting_question"]
        assert question["question"].startswith("Approval needed: shell 'echo yes > out.txt'")
        assert "the hook ask.sh asks: writes need a human look" in question["question"]
        assert not (tmp_path / "work" / "out.txt").exists()
        with live.ws() as client:
            client.call("events.subscribe", {"session_id": session_id})
            client.call(
                "session.approve",
                {"session_id": session_id, "execution_id": question["execution_id"], "decision": "once"},
            )
            client.event(is_state("completed", question["execution_id"]))
        # A hook that asks again for the same call does not ask twice: the answer covered it.
        assert [r["data"].get("is_error", False) for r in tool_results(live, session_id)] == [False]
    assert (tmp_path / "work" / "out.txt").read_text() == "yes\n"
    assert started.read_text() == "started\n"  # the resumed execution did not start the session again


NOTE = """input=$(cat)
case "$input" in
  *'"tool_name": "shell"'*) echo '{"context": "lint: 3 warnings in app.py"}' ;;
esac
"""


def test_n6_post_tool_context_reaches_the_models_next_request(tmp_path: Path) -> None:
    note = script(tmp_path / "note.sh", NOTE)
    config = f'[[hooks.post_tool]]\ncommand = ["{note}"]\nmatcher = "sh*"\n'
    with gateway_with(tmp_path, config) as live:
        live.model.enqueue(shell_calls("echo checked"), "Noted.")
        session_id, waited = turn(live, "check")
        assert waited["state"] == "completed"
        [result] = tool_results(live, session_id)
        assert result["text"].startswith("checked")
        assert result["text"].endswith("[hook note.sh: lint: 3 warnings in app.py]")
        last = live.model.requests[-1].messages[-1]
        assert "lint: 3 warnings in app.py" in last.text


def test_n6_a_codemode_scripts_calls_meet_the_pre_tool_hook(tmp_path: Path) -> None:
    guard = script(tmp_path / "guard.sh", GUARD)
    config = f'[[hooks.pre_tool]]\ncommand = ["{guard}"]\nmatcher = "shell"\n'
    code = "print(tools.shell(command='touch from-script'))"
    with gateway_with(tmp_path, config, codemode=True) as live:
        live.model.enqueue([ToolCallEvent(call_id="s1", name="run_script", arguments={"script": code})], "Done.")
        session_id, waited = turn(live, "script it")
        assert waited["state"] == "completed"
        [result] = tool_results(live, session_id)
        assert "touching files is not allowed here" in result["text"]
        assert entries(live, session_id, "notice") == []
    assert not (tmp_path / "work" / "from-script").exists()
