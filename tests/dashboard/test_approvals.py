"""N2 in the Dashboard: an approval request shows its three decisions as buttons (session.approve)."""

from __future__ import annotations

import msgspec
from playwright.sync_api import expect

from anyy.domain.model_io import ToolCallEvent
from anyy.tools.approval_rules import ApprovalRules
from tests.dashboard.conftest import Dashboard
from tests.dashboard.test_conversation import open_new_session, send_from_page


def test_n2_an_approval_request_is_answered_with_a_button(dashboard: Dashboard) -> None:
    live = dashboard.live
    assert live.gateway is not None
    deps = live.gateway.deps
    deps.tool_policy = msgspec.structs.replace(deps.tool_policy, approval=ApprovalRules.from_config({"shell": "ask"}))
    page, session_id = open_new_session(dashboard)
    live.model.enqueue([ToolCallEvent(call_id="c1", name="shell", arguments={"command": "echo from-the-button"})])
    send_from_page(page, "run it")
    question = page.locator("#question")
    expect(question).to_contain_text("The agent asks: Approval needed: shell 'echo from-the-button'")
    approval = question.locator(".approval")
    expect(approval.get_by_role("button")).to_have_text(["Approve once", "Approve for this session", "Deny"])
    dashboard.screenshot("dashboard-approval")

    live.model.enqueue("Ran it.")
    approval.get_by_role("button", name="Approve for this session").click()
    expect(question).to_have_count(0)
    expect(page.locator("#entries .kind-assistant").last).to_have_text("Ran it.")
    results = [m for m in live.model.requests[-1].messages if getattr(m, "call_id", "") == "c1"]
    assert results[-1].text.startswith("from-the-button\n")
    assert live.gateway is not None
    stored = live.run(live.gateway.store(lambda s: s.get_session(session_id)))
    assert stored.tools["approved"] == ["shell\necho from-the-button"]
