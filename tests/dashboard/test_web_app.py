"""U2, U3: the Dashboard as a web app people know — a phone layout with a drawer, Markdown rendered in
full and sanitised, copy buttons, a Stop button, Enter to send, tool output with its lines, elapsed time
while working, the tab's title and a notification when a question waits, Back that stays in the app, and
AA contrast in both themes. The model is scripted and held by Gates, never by sleeping."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Literal

import pytest
from playwright.sync_api import Browser, FloatRect, Page, ViewportSize, expect

from anyy.domain.entries import EntryKind, NewEntry, ToolCallData, ToolResultData
from anyy.domain.model_io import ToolCallEvent
from tests.dashboard.conftest import Dashboard
from tests.dashboard.test_conversation import held, open_new_session, send_from_page
from tests.gateway.live import LiveGateway

PHONE: ViewportSize = {"width": 390, "height": 844}
DESKTOP: ViewportSize = {"width": 1280, "height": 800}


@pytest.fixture
def phone(browser: Browser, live: LiveGateway) -> Iterator[Dashboard]:
    board = Dashboard(browser, live)
    board.context.close()
    board.context = browser.new_context(viewport=PHONE, is_mobile=True, has_touch=True)
    board.page = board.context.new_page()
    board.page.on("console", board._console)
    board.page.on("pageerror", lambda error: board.errors.append(f"uncaught: {error}"))
    try:
        yield board
        assert board.errors == [], f"the page logged console errors: {board.errors}"
    finally:
        board.close()


def _box(page: Page, selector: str) -> FloatRect:
    box = page.locator(selector).bounding_box()
    assert box is not None, f"{selector} is not laid out"
    return box


def test_u2_phone_layout_puts_the_lists_in_a_drawer(phone: Dashboard) -> None:
    live = phone.live
    first = live.call("session.create", {"title": "groceries"})["id"]
    live.model.enqueue("For Sunday:\n\n- bread\n- **tomatoes**\n- olive oil")
    sent = live.call("session.send", {"session_id": first, "text": "What do we need for Sunday?"})
    assert live.call("session.wait", {"submission_id": sent["id"], "timeout": 30})["state"] == "completed"
    live.call("session.create", {"title": "holiday"})
    page = phone.open()
    # A phone opens on the lists (nothing else to show yet).
    sidebar = page.locator("#sidebar")
    expect(sidebar).to_be_visible()
    page.locator(f'#sessions li[data-id="{first}"] button').click()
    expect(page.locator("#title")).to_have_text("groceries")
    # The conversation takes the whole width; the lists slid away.
    expect(sidebar).to_be_hidden()
    conversation = _box(page, "#conversation")
    assert conversation["x"] == 0
    assert conversation["width"] >= PHONE["width"] - 1
    editor = _box(page, "#editor")
    assert editor["width"] >= 0.6 * PHONE["width"], editor
    expect(page.locator("#entries .kind-assistant").last).to_be_visible()  # the picture shows a conversation
    phone.screenshot("dashboard-phone")
    shot = page.screenshot()  # the picture a person sees: phone-sized, with the conversation in it
    assert shot[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = int.from_bytes(shot[16:20], "big"), int.from_bytes(shot[20:24], "big")
    assert (width, height) == (PHONE["width"], PHONE["height"])
    # The menu button brings the lists back over the conversation; Escape (or a tap beside) closes them.
    page.get_by_role("button", name="Show the sessions").click()
    expect(sidebar).to_be_visible()
    assert _box(page, "#sidebar")["width"] <= 0.9 * PHONE["width"]
    page.keyboard.press("Escape")
    expect(sidebar).to_be_hidden()
    page.get_by_role("button", name="Show the sessions").click()
    expect(sidebar).to_be_visible()
    page.mouse.click(PHONE["width"] - 10, PHONE["height"] // 2)
    expect(sidebar).to_be_hidden()


def test_u2_desktop_layout_keeps_the_lists_beside(dashboard: Dashboard) -> None:
    dashboard.page.set_viewport_size(DESKTOP)
    page, _ = open_new_session(dashboard, "wide")
    expect(page.locator("#sidebar")).to_be_visible()
    expect(page.get_by_role("button", name="Show the sessions")).to_be_hidden()
    sidebar, conversation = _box(page, "#sidebar"), _box(page, "#conversation")
    assert conversation["x"] >= sidebar["x"] + sidebar["width"] - 1


MARKDOWN = """# Plan

1. first
2. second

- apple
- pear

| name | qty |
|------|----:|
| milk | 2 |

> quoted words

```python
def total(items):
    return sum(items)
```

<img src=x onerror="window.pwned=1"> [bad](javascript:window.pwned=2) ![pic](https://example.com/p.png)
"""


def test_u2_markdown_is_rendered_in_full_and_sanitised(dashboard: Dashboard) -> None:
    live = dashboard.live
    page, _ = open_new_session(dashboard)
    live.model.enqueue(MARKDOWN)
    send_from_page(page, "plan it")
    answer = page.locator("#entries .kind-assistant").last
    expect(answer).to_have_attribute("data-rendered", "true")
    expect(answer.locator("h1")).to_have_text("Plan")
    expect(answer.locator("ol li")).to_have_text(["first", "second"])
    expect(answer.locator("ul li")).to_have_text(["apple", "pear"])
    expect(answer.locator("table th")).to_have_text(["name", "qty"])
    expect(answer.locator("table td")).to_have_text(["milk", "2"])
    expect(answer.locator("blockquote")).to_have_text("quoted words")
    code = answer.locator("pre code")
    expect(code).to_contain_text("return sum(items)")
    expect(code.locator("span.k").first).to_have_text("def")  # highlighted
    assert answer.locator("img, script").count() == 0
    expect(answer).to_contain_text("[bad](javascript:window.pwned=2)")
    assert page.evaluate("window.pwned === undefined")
    # The same message opened from history renders the same way.
    page.reload()
    answer = page.locator("#entries .kind-assistant").last
    expect(answer).to_have_attribute("data-rendered", "true")
    expect(answer.locator("table td")).to_have_text(["milk", "2"])


def test_u2_copy_buttons_copy_the_code_and_the_response(dashboard: Dashboard) -> None:
    live = dashboard.live
    dashboard.context.grant_permissions(["clipboard-read", "clipboard-write"])
    page, _ = open_new_session(dashboard)
    live.model.enqueue("Run this:\n\n```sh\nmake test\n```")
    send_from_page(page, "how?")
    answer = page.locator("#entries .kind-assistant").last
    expect(answer).to_have_attribute("data-rendered", "true")
    answer.get_by_role("button", name="Copy this code").click()
    expect(answer.get_by_role("button", name="Copy this code")).to_have_class("copy copied")
    assert page.evaluate("navigator.clipboard.readText()") == "make test\n"
    answer.get_by_role("button", name="Copy this response").click()
    assert page.evaluate("navigator.clipboard.readText()") == "Run this:\n\n```sh\nmake test\n```"


def test_u2_stop_button_stops_the_response_and_keeps_pending(dashboard: Dashboard) -> None:
    live = dashboard.live
    page, session_id = open_new_session(dashboard)
    stop = page.get_by_role("button", name="Stop")
    expect(stop).to_be_hidden()
    gate = held(live, page, "long job")
    send_from_page(page, "then this")  # a follow-up, kept by the stop
    expect(page.locator("#queue li")).to_have_count(1)
    expect(stop).to_be_visible()
    stop.click()
    expect(page.locator("#status")).to_have_text("Stopped")
    expect(stop).to_be_hidden()
    gate.open()
    items = live.call("session.queue.list", {"session_id": session_id})
    assert [item["text"] for item in items] == ["then this"]
    executions = live.call("session.get", {"session_id": session_id})
    assert executions["running_execution"] is None


def test_u2_enter_sends_and_shift_enter_starts_a_new_line(dashboard: Dashboard) -> None:
    live = dashboard.live
    page, _ = open_new_session(dashboard)
    live.model.enqueue("noted")
    editor = page.get_by_label("Message")
    editor.click()
    page.keyboard.type("line one")
    page.keyboard.press("Shift+Enter")
    page.keyboard.type("line two")
    expect(editor).to_have_value("line one\nline two")
    page.keyboard.press("Enter")
    expect(page.locator("#entries .kind-user")).to_have_text(["line one\nline two"])
    expect(editor).to_have_value("")
    expect(page.locator("#entries .kind-assistant")).to_have_text(["noted"])


def test_u2_tool_output_keeps_its_lines_and_unfolds(dashboard: Dashboard) -> None:
    live = dashboard.live
    session_id = live.call("session.create", {"title": "logs"})["id"]
    output = "\n".join(f"line {n}" for n in range(1, 61))
    entries = [
        NewEntry(kind=EntryKind.USER, text="show the log"),
        NewEntry(kind=EntryKind.TOOL_CALL, data=ToolCallData(call_id="c1", name="shell", arguments={"command": "x"})),
        NewEntry(kind=EntryKind.TOOL_RESULT, text=output, data=ToolResultData(call_id="c1", name="shell")),
    ]
    assert live.gateway is not None
    live.run(live.gateway.store(lambda s: s.append_entries(session_id, entries)))
    page = dashboard.open(f"session={session_id}")
    result = page.locator("#entries .kind-tool_result")
    pre = result.locator("pre.output")
    expect(pre).to_have_text(output)  # every line, the newlines kept (nothing cut at 500 characters)
    expect(pre).to_have_class("output folded")
    folded_height = _box(page, "#entries .kind-tool_result pre.output")["height"]
    result.get_by_role("button", name="Show all").click()
    expect(pre).to_have_class("output")
    assert _box(page, "#entries .kind-tool_result pre.output")["height"] > 2 * folded_height
    result.get_by_role("button", name="Show less").click()
    expect(pre).to_have_class("output folded")


def test_u3_working_state_shows_the_elapsed_time(dashboard: Dashboard) -> None:
    page, _ = open_new_session(dashboard)
    gate = held(dashboard.live, page, "think")
    expect(page.locator("#status")).to_have_text(re.compile(r"^Working… \d+ s \(Escape or Stop ends it\)$"))
    gate.open()
    expect(page.locator("#status")).to_have_text("")


NOTIFICATIONS = """
window.__notes = [];
class RecordedNotification extends EventTarget {
  static permission = "granted";
  static requestPermission() { return Promise.resolve("granted"); }
  constructor(title, options) { super(); window.__notes.push({ title, body: options && options.body }); }
  close() {}
}
window.Notification = RecordedNotification;
document.hasFocus = () => false; // the person is in another window
"""


def test_u3_a_waiting_question_shows_in_the_tab_title_and_notifies(dashboard: Dashboard) -> None:
    live = dashboard.live
    dashboard.page.add_init_script(NOTIFICATIONS)
    page, _ = open_new_session(dashboard, "deploy")
    expect(page).to_have_title("deploy · anyy Dashboard")
    live.model.enqueue([ToolCallEvent(call_id="q1", name="ask_user", arguments={"question": "Which branch?"})])
    send_from_page(page, "ship it")
    expect(page.locator("#question")).to_contain_text("Which branch?")
    expect(page).to_have_title("(?) Question waiting · deploy · anyy Dashboard")
    assert page.evaluate("window.__notes") == [{"title": "anyy: the agent asks", "body": "Which branch?"}]
    live.model.enqueue("Shipped.")
    page.get_by_label("Answer").fill("main")
    page.locator("#question").get_by_role("button", name="Answer").click()
    expect(page.locator("#entries .kind-assistant").last).to_have_text("Shipped.")
    expect(page).to_have_title("deploy · anyy Dashboard")


def test_u2_back_stays_in_the_app(dashboard: Dashboard) -> None:
    live = dashboard.live
    first = live.call("session.create", {"title": "first"})["id"]
    second = live.call("session.create", {"title": "second"})["id"]
    page = dashboard.open()
    page.locator(f'#sessions li[data-id="{first}"] button').click()
    expect(page.locator("#title")).to_have_text("first")
    page.locator(f'#sessions li[data-id="{second}"] button').click()
    expect(page.locator("#title")).to_have_text("second")
    page.go_back()
    expect(page.locator("#title")).to_have_text("first")
    assert page.url.startswith(dashboard.base)
    page.go_back()
    expect(page.locator("#conversation")).to_be_hidden()
    expect(page.locator("#empty")).to_be_visible()
    assert page.url.startswith(dashboard.base)
    page.go_forward()
    expect(page.locator("#title")).to_have_text("first")


CONTRAST = """
(selectors) => {
  const rgb = (text) => text.match(/[\\d.]+/g).map(Number);
  const luminance = ([r, g, b]) => {
    const f = (c) => { c /= 255; return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4; };
    return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
  };
  const background = (el) => {
    for (let node = el; node; node = node.parentElement) {
      const value = rgb(getComputedStyle(node).backgroundColor);
      if (value.length < 4 || value[3] > 0) return value.slice(0, 3);
    }
    return rgb(getComputedStyle(document.body).backgroundColor).slice(0, 3);
  };
  const out = {};
  for (const selector of selectors) {
    const el = document.querySelector(selector);
    if (!el) { out[selector] = null; continue; }
    const [a, b] = [luminance(rgb(getComputedStyle(el).color)), luminance(background(el))];
    out[selector] = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
  }
  return out;
}
"""
CHECKED = [
    "#send",
    "#new-session",
    "#stop",
    "#sessions .meta",
    "#status",
    "#entries .kind-user",
    "#entries .kind-assistant",
    "pre .k",
    "pre .s2",
    "pre .c1",
    "pre .mi",
    "pre .nf",
]


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_u2_text_meets_aa_contrast_in_both_themes(dashboard: Dashboard, scheme: Literal["light", "dark"]) -> None:
    live = dashboard.live
    dashboard.page.emulate_media(color_scheme=scheme)
    page, _ = open_new_session(dashboard)
    live.model.enqueue('```python\ndef f(n):\n    # twice\n    return "x" * 2\n```')
    send_from_page(page, "code please")
    expect(page.locator("#entries .kind-assistant")).to_have_attribute("data-rendered", "true")
    held(live, page, "hold on").open()
    page.evaluate("document.getElementById('stop').hidden = false")  # measured as it shows while working
    page.evaluate("document.body.classList.add('busy'); document.getElementById('status').textContent = 'Working'")
    ratios = page.evaluate(CONTRAST, CHECKED)
    low = {selector: round(ratio, 2) for selector, ratio in ratios.items() if ratio is None or ratio < 4.5}
    assert low == {}, f"below WCAG AA (4.5:1) in the {scheme} theme: {low}"
