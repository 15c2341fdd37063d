"""U5 in the Dashboard: an attached text file reaches the model (what the offline model received); an image
for a model that reads text only is refused at attach time with the reason; a failed message can be put
back in the editor with its files (Edit), the failed turn left on a branch, and sent again changed; a Retry
the Gateway refuses leaves the message in the editor instead of failing the same way again."""

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import expect

from anyy.domain.entries import Attachment
from anyy.domain.model_io import UserMessage
from anyy.domain.queue import NewSubmission
from anyy.providers.base import ProviderError
from tests.dashboard.conftest import Dashboard
from tests.dashboard.test_conversation import open_new_session, send_from_page
from tests.fakes.gateways import put_object


def test_u5_a_text_file_attached_in_the_dashboard_reaches_the_model(dashboard: Dashboard, tmp_path: Path) -> None:
    live = dashboard.live
    page, _ = open_new_session(dashboard)
    notes = tmp_path / "notes.md"
    notes.write_bytes(b"# Plan\nship on Friday\n")
    page.locator("#file-input").set_input_files([str(notes)])
    expect(page.locator("#attachments .chip[data-state=attached]")).to_have_count(1)
    live.model.enqueue("Friday.")
    send_from_page(page, "when do we ship?")
    expect(page.locator("#entries .kind-assistant")).to_have_text(["Friday."])
    user = next(m for m in live.model.requests[-1].messages if isinstance(m, UserMessage))
    assert user.text.startswith('when do we ship?\n\n[Attached file "notes.md" (text file, 22 bytes).')
    assert "# Plan\nship on Friday" in user.text


def test_u5_an_image_for_a_text_only_model_is_refused_at_attach_time(dashboard: Dashboard, tmp_path: Path) -> None:
    page, _ = open_new_session(dashboard)
    photo = tmp_path / "photo.png"
    photo.write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00" * 64)
    page.locator("#file-input").set_input_files([str(photo)])
    expect(page.locator("#notice")).to_contain_text("photo.png was not attached: the model")
    expect(page.locator("#notice")).to_contain_text("reads text only and cannot take images")
    expect(page.locator("#attachments .chip")).to_have_count(0)


def test_u5_a_failed_message_goes_back_to_the_editor_with_its_files(dashboard: Dashboard, tmp_path: Path) -> None:
    live = dashboard.live
    page, session_id = open_new_session(dashboard)
    notes = tmp_path / "notes.txt"
    notes.write_bytes(b"remember the milk\n")
    page.locator("#file-input").set_input_files([str(notes)])
    expect(page.locator("#attachments .chip[data-state=attached]")).to_have_count(1)
    live.model.enqueue(ProviderError("fatal", "this model cannot take that"))
    send_from_page(page, "read this")
    failed = page.locator("#entries .failed-turn")
    expect(failed).to_contain_text("this model cannot take that")
    failed.get_by_role("button", name="Edit").click()
    expect(page.get_by_label("Message")).to_have_value("read this")
    expect(page.locator("#attachments .chip[data-state=attached] span")).to_have_text(["notes.txt"])
    expect(failed).to_have_count(0)  # the failed turn is off the path, kept on a branch
    expect(page.locator("#entries .kind-user")).to_have_count(0)

    live.model.enqueue("Milk.")
    page.get_by_label("Message").fill("read this file")
    page.get_by_role("button", name="Send").click()
    expect(page.locator("#entries .kind-assistant")).to_have_text(["Milk."])
    history = live.call("session.history", {"session_id": session_id})["items"]
    assert [(e["kind"], e["text"]) for e in reversed(history)] == [("user", "read this file"), ("assistant", "Milk.")]
    tree = live.call("session.tree", {"session_id": session_id})
    assert sum(node["kind"] == "notice" for node in tree["nodes"]) == 1  # the failure is kept in the tree


def test_u5_a_retry_the_gateway_refuses_leaves_the_message_in_the_editor(dashboard: Dashboard) -> None:
    live = dashboard.live
    page, session_id = open_new_session(dashboard)
    # An image stored in the session before anything refused it (sent by an older client, say): the turn
    # fails, and a Retry is refused by the Gateway before anything is stored.
    image = put_object(live, b"\x89PNG\r\n\x1a\n" + b"\x00" * 16, name="photo.png")
    attachment = Attachment(object=image["object"], name="photo.png", media_type="image/png", size=image["size"])
    assert live.gateway is not None
    live.run(live.gateway.runtime.submit(session_id, NewSubmission(text="see the photo", attachments=[attachment])))
    failed = page.locator("#entries .failed-turn")
    expect(failed).to_contain_text("does not accept images")
    failed.get_by_role("button", name="Retry").click()
    expect(page.locator("#notice")).to_contain_text("Not sent: the model")
    expect(page.locator("#notice")).to_contain_text("reads text only and cannot take the image photo.png")
    expect(page.get_by_label("Message")).to_have_value("see the photo")
    expect(page.locator("#attachments .chip[data-state=attached] span")).to_have_text(["photo.png"])
