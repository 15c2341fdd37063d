"""A2 (clarifications answered inline, tool activity), M6 (a Codemode script's calls under it) and R3/S4
(a retry's countdown, Cancel retry) in the conversation. The model is scripted; a Gate holds it, never a
sleep."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import pytest
from playwright.sync_api import expect

from anyy.domain.model_io import TextDelta, ToolCallEvent
from anyy.providers.base import ProviderError
from anyy.providers.gates import Gate
from tests.dashboard.conftest import Dashboard
from tests.dashboard.test_conversation import open_new_session, send_from_page
from tests.gateway.live import wait_gate


def test_a2_a_question_is_answered_inline_and_the_execution_resumes(dashboard: Dashboard) -> None:
    live = dashboard.live
    page, session_id = open_new_session(dashboard)
    live.model.enqueue([ToolCallEvent(call_id="q1", name="ask_user", arguments={"question": "Which branch?"})])
    send_from_page(page, "merge it")
    question = page.locator("#question")
    expect(question).to_contain_text("The agent asks: Which branch?")
    expect(page.locator("body")).not_to_have_class("busy")
    expect(page.locator("#status")).to_have_text("Waiting for your answer")  # the same words as on opening
    execution = question.get_attribute("data-execution-id")
    assert execution is not None
    assert live.call("session.execution", {"session_id": session_id, "execution_id": execution})["state"] == (
        "suspended"
    )
    dashboard.screenshot("dashboard-question")

    live.model.enqueue("Merged into main.")
    page.get_by_label("Answer").fill("main")
    question.get_by_role("button", name="Answer").click()
    expect(question).to_have_count(0)
    expect(page.locator("#entries .kind-assistant").last).to_have_text("Merged into main.")
    expect(page.locator("#entries .kind-answer")).to_contain_text("main")
    done = live.call("session.execution", {"session_id": session_id, "execution_id": execution})
    assert done["state"] == "completed"
    assert live.model.requests[-1].messages[-1].text == "main"


def test_a2_a_session_opened_while_a_question_waits_offers_the_answer(dashboard: Dashboard) -> None:
    live = dashboard.live
    session_id = live.call("session.create", {"title": "deploy"})["id"]
    live.model.enqueue([ToolCallEvent(call_id="q1", name="ask_user", arguments={"question": "Which branch?"})])
    sent = live.call("session.send", {"session_id": session_id, "text": "deploy it"})
    assert live.call("session.wait", {"submission_id": sent["id"], "timeout": 5})["state"] == "suspended"
    waiting = live.call("session.get", {"session_id": session_id})["waiting_question"]
    assert waiting is not None

    page = dashboard.open(f"session={session_id}")  # loaded after the question was asked: no event to see
    question = page.locator("#question")
    expect(question).to_contain_text("The agent asks: Which branch?")
    expect(question).to_have_attribute("data-execution-id", waiting["execution_id"])
    expect(page.get_by_label("Answer")).to_be_focused()
    expect(page.locator("#status")).to_have_text("Waiting for your answer")
    expect(page.locator("body")).not_to_have_class("busy")

    live.model.enqueue("Deployed from main.")
    page.get_by_label("Answer").fill("main")
    question.get_by_role("button", name="Answer").click()
    expect(question).to_have_count(0)
    expect(page.locator("#entries .kind-assistant").last).to_have_text("Deployed from main.")
    assert live.call("session.wait", {"submission_id": sent["id"], "timeout": 5})["state"] == "completed"
    assert live.model.requests[-1].messages[-1].text == "main"
    assert live.call("session.get", {"session_id": session_id})["waiting_question"] is None


@pytest.mark.parametrize("how", ["button", "escape"])
def test_r3_a_retry_shows_its_countdown_and_cancel_retry_or_escape_ends_it(dashboard: Dashboard, how: str) -> None:
    live = dashboard.live
    page, session_id = open_new_session(dashboard)
    live.model.enqueue(ProviderError("transient", "the model is overloaded", retry_after=30))
    send_from_page(page, "hello")
    retry = page.locator("#retry")
    expect(retry).to_contain_text("the model is overloaded")
    expect(retry).to_contain_text(re.compile(r"retrying in (30|29|28) s"))
    execution = live.call("session.get", {"session_id": session_id})["running_execution"]
    assert execution is not None
    assert live.call("session.execution", {"session_id": session_id, "execution_id": execution})["state"] == (
        "retry_wait"
    )
    if how == "button":
        retry.get_by_role("button", name="Cancel retry").click()
    else:  # the seed: during a retry wait, Dashboard Escape stops the work (S1), as Stop does
        page.keyboard.press("Escape")
    expect(retry).to_have_count(0)
    expect(page.locator("body")).not_to_have_class("busy")
    # The page may settle a moment before the Gateway has recorded the end: wait for the record.
    deadline = time.monotonic() + 60
    ended = live.call("session.execution", {"session_id": session_id, "execution_id": execution})
    while ended["state"] == "retry_wait" and time.monotonic() < deadline:
        time.sleep(0.05)
        ended = live.call("session.execution", {"session_id": session_id, "execution_id": execution})
    assert ended["state"] == "interrupted"
    why = "retry wait was cancelled" if how == "button" else "stopped by the user"
    assert why in (ended["note"] or "")
    assert live.model.pending == 0


def test_a2_tool_activity_lines_follow_the_calls(dashboard: Dashboard) -> None:
    live = dashboard.live
    (live.workdir / "notes.txt").write_text("remember the milk\n")
    page, _ = open_new_session(dashboard)
    gate = Gate("after the tools")
    live.model.enqueue(
        [
            ToolCallEvent(call_id="c1", name="read_file", arguments={"path": "notes.txt"}),
            ToolCallEvent(call_id="c2", name="read_file", arguments={"path": "missing.txt"}),
        ],
        [gate, TextDelta(text="Read it.")],
    )
    send_from_page(page, "read my notes")
    wait_gate(gate)
    lines = page.locator("#activity li")
    expect(lines).to_have_text(["read_file: done", "read_file: failed"])
    expect(lines.nth(0)).to_have_attribute("data-state", "done")
    expect(lines.nth(1)).to_have_attribute("data-state", "failed")
    gate.open()
    expect(page.locator("#entries .kind-assistant").last).to_have_text("Read it.")
    expect(page.locator("#activity")).to_be_hidden()
    # Recorded, the calls say what they did and what came back.
    expect(page.locator("#entries .kind-tool_call")).to_have_text(
        ["⚙ read_file(path=notes.txt)", "⚙ read_file(path=missing.txt)"]
    )
    results = page.locator("#entries .kind-tool_result")
    expect(results.nth(0)).to_have_text(re.compile(r"^read_file returned: remember the milk"))
    expect(results.nth(1)).to_have_text(re.compile(r"^read_file failed: "))


def test_r3_a_session_opened_during_a_retry_wait_shows_what_is_left_of_it(dashboard: Dashboard) -> None:
    live = dashboard.live
    session_id = live.call("session.create", {"title": "flaky"})["id"]
    live.model.enqueue(ProviderError("transient", "the model is overloaded", retry_after=30))
    with live.ws() as client:
        client.call("events.subscribe", {"session_id": session_id})
        client.call("session.send", {"session_id": session_id, "text": "hello"})
        client.event(lambda e: e.get("type") == "retry_wait")
    retry = live.call("session.get", {"session_id": session_id})["retry_wait"]
    assert retry is not None

    page = dashboard.open(f"session={session_id}")  # loaded during the wait: no retry_wait event to see
    box = page.locator("#retry")
    expect(box).to_contain_text("the model is overloaded")
    expect(box).to_contain_text(re.compile(r"retrying in (30|2\d) s \(attempt 1 of 3\)"))
    page.keyboard.press("Escape")  # S4: cancels only the wait
    expect(box).to_have_count(0)
    ended = live.call("session.execution", {"session_id": session_id, "execution_id": retry["execution_id"]})
    assert ended["state"] == "interrupted"


def test_m6_codemode_inner_calls_shown_under_the_script(dashboard: Dashboard) -> None:
    """M6: the tools a Codemode script calls are tool activity: lines under the script's line while it runs
    (from the events), and under its recorded result (``inner_calls``), each unfolding what it returned."""
    live = dashboard.live
    (live.workdir / "notes.txt").write_text("remember the milk\n")
    page, session_id = open_new_session(dashboard)
    live.call("session.tools.configure", {"session_id": session_id, "enabled": ["read_file"], "codemode": True})
    missing = "<b>missing</b>.txt"  # shown as text, never as markup
    script = (
        'print(tools.read_file(path="notes.txt"))\n'
        "try:\n"
        f"    tools.read_file(path={missing!r})\n"
        "except ToolError as error:\n"
        '    print("missing:", error)\n'
    )
    gate = Gate("after the script")
    live.model.enqueue(
        [ToolCallEvent(call_id="s1", name="run_script", arguments={"script": script})],
        [gate, TextDelta(text="Ran it.")],
    )
    send_from_page(page, "run a script")
    wait_gate(gate)
    lines = ["read_file(path=notes.txt) → ok", f"read_file(path={missing}) → error"]
    script_line = page.locator("#activity > li")
    inner = script_line.locator(".inner-calls > li")
    expect(inner).to_have_text(lines)
    expect(script_line).to_have_count(1)  # the script's calls are not lines of their own
    expect(script_line.locator(":scope > span")).to_have_text("run_script: done")
    expect(inner.nth(0)).to_have_attribute("data-state", "done")
    expect(inner.nth(1)).to_have_attribute("data-state", "failed")
    gate.open()
    expect(page.locator("#entries .kind-assistant").last).to_have_text("Ran it.")
    expect(page.locator("#activity")).to_be_hidden()

    def recorded_under_the_result() -> None:
        calls = page.locator("#entries .kind-tool_result .inner-calls > li")
        expect(calls.locator("summary")).to_have_text(lines)
        expect(calls.nth(1)).to_have_attribute("data-state", "failed")
        result = calls.nth(0).locator("pre")
        expect(result).to_be_hidden()  # folded until its line is clicked
        calls.nth(0).locator("summary").click()
        expect(result).to_be_visible()
        expect(result).to_have_text("remember the milk\n")
        expect(page.locator("#entries .inner-calls b")).to_have_count(0)

    recorded_under_the_result()  # appended live
    page.reload()  # and read from the history (the open conversation is in the fragment)
    expect(page.locator("body")).to_have_attribute("data-ready", "true")
    expect(page.locator("#entries .kind-assistant").last).to_have_text("Ran it.")
    recorded_under_the_result()


def test_m6_a_page_opened_while_a_script_runs_puts_its_calls_under_it(dashboard: Dashboard, tmp_path: Path) -> None:
    live = dashboard.live
    fifo = live.workdir / "go.fifo"  # in the working directory: the sandbox gives the script its own /tmp
    os.mkfifo(fifo)
    session_id = live.call("session.create", {"title": "script"})["id"]
    live.call("session.tools.configure", {"session_id": session_id, "enabled": ["shell"], "codemode": True})
    script = f'tools.shell(command="echo one")\ntools.shell(command="head -n 1 {fifo}")\n'
    gate = Gate("after the script")
    live.model.enqueue(
        [ToolCallEvent(call_id="s1", name="run_script", arguments={"script": script})],
        [gate, TextDelta(text="Ran it.")],
    )
    with live.ws() as client:
        client.call("events.subscribe", {"session_id": session_id})
        client.call("session.send", {"session_id": session_id, "text": "run it"})
        client.event(lambda e: e.get("type") == "tool_started" and e.get("call_id") == "s1.2")

    page = dashboard.open(f"session={session_id}")  # the script's start and its calls' came before it
    lines = page.locator("#activity > li")
    # session.get names the calls running now: the script, and its second call under it (the first ended)
    expect(lines.locator(":scope > span")).to_have_text("run_script: running…")
    expect(lines.locator(".inner-calls > li")).to_have_text([re.compile(r"shell\(command=head -n 1 .*\) → running…")])
    with open(fifo, "w", encoding="utf-8") as go:  # lets the second call end
        go.write("go\n")
    wait_gate(gate)  # the script ended; the next response is held while the page is looked at
    expect(lines.locator(".inner-calls > li")).to_have_text([re.compile(r"shell\(command=head -n 1 .*\) → ok")])
    expect(lines).to_have_count(1)  # one line for the script, its call under it
    expect(lines.locator(":scope > span")).to_have_text("run_script: done")
    gate.open()
    expect(page.locator("#entries .kind-assistant").last).to_have_text("Ran it.")
