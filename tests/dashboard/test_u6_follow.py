"""U6 in the Dashboard: the view follows the stream on a phone (390x844) and a desktop (1280x800), a
follow-up queued meanwhile included; once the user scrolls up it stays where they are, and "Jump to latest"
brings it back to the stream, which it follows again."""

from __future__ import annotations

from playwright.sync_api import Page, expect

from anyy.domain.model_io import TextDelta
from anyy.providers.gates import Gate
from tests.dashboard.conftest import Dashboard
from tests.dashboard.test_conversation import open_new_session, send_from_page
from tests.dashboard.test_failed_turns import sized
from tests.gateway.live import wait_gate

__all__ = ["sized"]


def _part(name: str) -> str:
    return "".join(f"{name} line {n}\n\n" for n in range(40)) + f"end of {name}\n\n"


def _live_in_view(page: Page) -> bool:
    """Whether the bottom of the streaming answer is inside the scrolled view."""
    result: bool = page.evaluate(
        """() => {
          const box = document.getElementById("messages").getBoundingClientRect();
          const live = document.getElementById("live").getBoundingClientRect();
          return live.bottom <= box.bottom + 2 && live.bottom >= box.top;
        }"""
    )
    return result


def test_u6_the_view_follows_the_stream_until_the_user_scrolls_up(sized: Dashboard) -> None:
    live = sized.live
    page, _ = open_new_session(sized)
    first, second = Gate("first"), Gate("second")
    script: list[TextDelta | Gate] = [
        TextDelta(text=_part("one")),
        first,
        TextDelta(text=_part("two")),
        second,
        TextDelta(text="done"),
    ]
    live.model.enqueue(script)
    send_from_page(page, "a long answer please")
    expect(page.locator("#live")).to_contain_text("end of one")
    wait_gate(first)
    assert _live_in_view(page)
    live.model.enqueue("second answer")
    send_from_page(page, "and a follow-up")  # the queue grows under the view: the view still follows
    expect(page.locator("#queue li.queued")).to_have_count(1)
    first.open()
    expect(page.locator("#live")).to_contain_text("end of two")
    wait_gate(second)
    page.wait_for_function("() => document.getElementById('messages').scrollTop > 0")
    assert _live_in_view(page)
    expect(page.locator("#jump-latest")).to_be_hidden()

    page.locator("#messages").evaluate("el => el.scrollTo(0, 0)")  # the user scrolls up
    second.open()
    expect(page.locator("#entries .kind-assistant").first).to_contain_text("done")
    expect(page.locator("#jump-latest")).to_be_visible()
    assert page.locator("#messages").evaluate("el => el.scrollTop") == 0  # left where the user is
    page.locator("#jump-latest").click()
    expect(page.locator("#jump-latest")).to_be_hidden()
    expect(page.locator("#entries .kind-assistant")).to_have_count(2)  # the follow-up's answer came
    page.wait_for_function(
        "() => { const b = document.getElementById('messages');"
        " return b.scrollHeight - b.scrollTop - b.clientHeight < 40; }"
    )
