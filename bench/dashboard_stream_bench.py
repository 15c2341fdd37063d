"""Benchmark of the Dashboard's streaming, live lists and reconnection (issue 27: U6, U7, U8), in Debian's
Chromium against an in-process Gateway with the scripted offline model.

    .venv/bin/python -m bench.dashboard_stream_bench [--runs 3] [--seconds 10]

Measured, each ``--runs`` times, median and worst:

1. streaming cost: a 20 KB Markdown answer (headings, tables, code, paragraphs) whose first 18 KB arrive
   at once and whose last 2 KB stream at 50 tokens per second (one token per delta) for ``--seconds``:
   the main thread's busy time (Chromium's ``TaskDuration``) per second of that stream, at 1280x800 —
   the cost at the end of a long answer, where a renderer that redoes the whole answer per delta is
   slowest (target <= 5 ms per second);
2. a list update: a session made through the API to its row on screen (the page's clock, a
   MutationObserver; target <= 100 ms);
3. reconnection: a Gateway restarted on the same port with a new token, from the new one ready to the
   page's banner gone (target <= 2 s after the Gateway is ready).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from playwright.sync_api import Page, sync_playwright
from tests.dashboard.conftest import CHROMIUM, CHROMIUM_FLAGS
from tests.fakes.gateways import LiveGateway

from anyy.domain.model_io import TextDelta
from anyy.providers.gates import Gate

TOKENS_PER_SECOND = 50


def _answer(size: int) -> str:
    blocks: list[str] = []
    n = 0
    while sum(map(len, blocks)) < size:
        n += 1
        blocks.append(f"## Part {n}\n\nSome **bold** text and `code`, then a paragraph about part {n}.\n\n")
        blocks.append("| name | score | note |\n|---|---|---|\n| Ada | 9 | fine |\n| Bob | 7 | ok |\n\n")
        blocks.append(f"```python\ndef part_{n}():\n    return {n}\n```\n\n")
    return "".join(blocks)


def _task_ms(page: Page, session: object) -> float:
    metrics = session.send("Performance.getMetrics")["metrics"]  # type: ignore[attr-defined]
    return 1000.0 * float(next(m["value"] for m in metrics if m["name"] == "TaskDuration"))


def _open(page: Page, live: LiveGateway, session_id: str) -> None:
    code = live.call("dashboard.code")["code"]
    page.goto(f"http://127.0.0.1:{live.port}/#code={code}&session={session_id}")
    page.wait_for_selector("body[data-ready=true]")


def streaming(page: Page, live: LiveGateway, seconds: float) -> float:
    head = _answer(18_000)
    tail = [" word" for _ in range(int(seconds * TOKENS_PER_SECOND))]
    gate = Gate("start")
    live.model.enqueue([TextDelta(text=head), gate, *[TextDelta(text=t) for t in tail]])
    session = live.call("session.create", {"title": "stream"})
    _open(page, live, session["id"])
    cdp = page.context.new_cdp_session(page)
    cdp.send("Performance.enable")
    live.call("session.send", {"session_id": session["id"], "text": "go"})
    page.wait_for_function("() => (document.getElementById('live').textContent || '').length > 10000")
    page.wait_for_timeout(500)  # the head's blocks rendered by the Gateway
    live.model.stream_delay = 1.0 / TOKENS_PER_SECOND
    before, started = _task_ms(page, cdp), time.monotonic()
    gate.open()
    page.wait_for_selector("#entries .kind-assistant", timeout=120_000)
    busy, elapsed = _task_ms(page, cdp) - before, time.monotonic() - started
    live.model.stream_delay = 0.0
    return busy / elapsed


def list_update(page: Page, live: LiveGateway) -> float:
    page.evaluate(
        """() => { window.rowAt = null; const list = document.getElementById("sessions");
        new MutationObserver(() => { if (!window.rowAt && [...list.children].some((li) =>
          li.textContent.includes("made elsewhere"))) window.rowAt = Date.now(); })
          .observe(list, { childList: true, subtree: true }); }"""
    )
    live.model.enqueue("ok")
    sent = time.time() * 1000
    other = live.call("session.create", {"title": "made elsewhere"})
    live.call("session.send", {"session_id": other["id"], "text": "hi"})
    page.wait_for_function("() => window.rowAt !== null")
    return float(page.evaluate("window.rowAt")) - sent


def reconnect(page: Page, live: LiveGateway, tmp: Path, token: str) -> tuple[LiveGateway, float]:
    port = live.port
    live.close()
    page.wait_for_function("() => !document.getElementById('banner').hidden")
    page.evaluate(
        """() => { window.backAt = null; const banner = document.getElementById("banner");
        new MutationObserver(() => { if (banner.hidden && !window.backAt) window.backAt = Date.now(); })
          .observe(banner, { attributes: true }); }"""
    )
    again = LiveGateway(tmp, port=port, token=token).start()
    ready = time.time() * 1000
    page.wait_for_function("() => window.backAt !== null", timeout=30_000)
    return again, float(page.evaluate("window.backAt")) - ready


def _line(name: str, values: list[float], unit: str, target: float) -> str:
    median, worst = statistics.median(values), max(values)
    verdict = f"met ({worst / target:.2f})" if worst <= target else f"missed ({worst / target:.2f})"
    return f"| {name} | {median:.1f} {unit} | {worst:.1f} {unit} | <= {target:g} {unit} | {verdict} |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=10.0)
    args = parser.parse_args()
    stream, lists, back = [], [], []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_FLAGS)
        for run in range(args.runs):
            with tempfile.TemporaryDirectory() as folder:
                tmp = Path(folder)
                live = LiveGateway(tmp).start()
                context = browser.new_context(viewport={"width": 1280, "height": 800})
                page = context.new_page()
                try:
                    stream.append(streaming(page, live, args.seconds))
                    lists.append(list_update(page, live))
                    live, seconds = reconnect(page, live, tmp, f"bench-token-{run}-" + "x" * 20)
                    back.append(seconds)
                finally:
                    context.close()
                    live.close()
        browser.close()
    print("| figure | median | worst | target | verdict |")
    print("|---|---|---|---|---|")
    print(_line("streaming a 20 KB answer at 50 tokens/s: main-thread time per second", stream, "ms", 5))
    print(_line("a session made elsewhere to its row in the list", lists, "ms", 100))
    print(_line("a Gateway restart: ready to the tab back (banner gone)", back, "ms", 2000))


if __name__ == "__main__":
    main()
