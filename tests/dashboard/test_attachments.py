"""Q2 (attachments kept with a message): a person attaches files in the Dashboard — with the button, by
dropping them on the composer, or by pasting — sees them above the editor, can remove one, and sends them
with the message; the Gateway stores each once by its hash (``POST /upload``)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from playwright.sync_api import Page, expect

from tests.dashboard.conftest import Dashboard
from tests.dashboard.test_conversation import open_new_session, send_from_page
from tests.gateway.live import LiveGateway

DROP_OR_PASTE = """
([kind, name, text]) => {
  const data = new DataTransfer();
  data.items.add(new File([text], name, { type: "text/plain" }));
  if (kind === "drop") {
    const target = document.getElementById("composer");
    target.dispatchEvent(new DragEvent("dragover", { dataTransfer: data, bubbles: true, cancelable: true }));
    target.dispatchEvent(new DragEvent("drop", { dataTransfer: data, bubbles: true, cancelable: true }));
  } else {
    const target = document.getElementById("editor");
    target.dispatchEvent(new ClipboardEvent("paste", { clipboardData: data, bubbles: true, cancelable: true }));
  }
}
"""


def _sent_attachments(live: LiveGateway, session_id: str) -> list[dict[str, Any]]:
    history = live.call("session.history", {"session_id": session_id})["items"]
    users = [entry for entry in history if entry["kind"] == "user"]
    assert users, history
    attachments: list[dict[str, Any]] = users[0]["data"].get("attachments", [])
    return attachments


def _chips(page: Page) -> list[str]:
    chips = page.locator("#attachments .chip[data-state=attached] span")
    return list(chips.all_inner_texts())


def test_q2_attach_with_the_button_remove_one_and_send(dashboard: Dashboard, tmp_path: Path) -> None:
    live = dashboard.live
    page, session_id = open_new_session(dashboard)
    notes, table = tmp_path / "notes.txt", tmp_path / "table.csv"
    notes.write_bytes(b"remember the milk\n")
    table.write_bytes(b"a,b\n1,2\n")
    page.locator("#file-input").set_input_files([str(notes), str(table)])
    expect(page.locator("#attachments .chip[data-state=attached]")).to_have_count(2)
    page.get_by_role("button", name="Remove table.csv").click()
    expect(page.locator("#attachments .chip")).to_have_count(1)
    live.model.enqueue("Noted.")
    send_from_page(page, "see the file")
    expect(page.locator("#entries .kind-user .files")).to_have_text("📎 notes.txt")
    expect(page.locator("#attachments")).to_be_hidden()
    (attached,) = _sent_attachments(live, session_id)
    assert attached["name"] == "notes.txt"
    assert attached["media_type"] == "text/plain"
    assert attached["size"] == len(b"remember the milk\n")
    assert attached["object"] == hashlib.sha256(b"remember the milk\n").hexdigest()
    assert live.gateway is not None
    stored = live.run(live.gateway.store(lambda s: s.read_object(attached["object"])))
    assert stored == b"remember the milk\n"


def test_q2_attach_by_dropping_or_pasting(dashboard: Dashboard) -> None:
    live = dashboard.live
    page, session_id = open_new_session(dashboard)
    page.evaluate(DROP_OR_PASTE, ["drop", "dropped.txt", "from a drop"])
    page.evaluate(DROP_OR_PASTE, ["paste", "pasted.txt", "from a paste"])
    expect(page.locator("#attachments .chip[data-state=attached]")).to_have_count(2)
    assert sorted(_chips(page)) == ["dropped.txt", "pasted.txt"]
    live.model.enqueue("Both.")
    send_from_page(page, "two files")
    expect(page.locator("#entries .kind-assistant")).to_have_text(["Both."])
    names = sorted(a["name"] for a in _sent_attachments(live, session_id))
    assert names == ["dropped.txt", "pasted.txt"]
