"""Benchmark of the Dashboard in Debian's Chromium against a real Gateway (issue 7 targets, U2).

    .venv/bin/python -m bench.dashboard_bench [--sessions 1000] [--messages 10000] [--runs 5]

In a temporary anyy home: ``--sessions`` sessions and one conversation of ``--messages`` messages
(Markdown in every other one) are written straight into the profile's store, then the Gateway is started
(``anyy gateway start``) and the Dashboard opened in headless Chromium (Playwright, /usr/bin/chromium).
Measured, each ``--runs`` times, median and worst:

1. time to interactive: navigation start to the page's ``anyy-ready`` mark (the lists' first page shown,
   the models loaded), with ``--sessions`` sessions (target <= 300 ms);
2. opening the long conversation by a click: to the frame after its first page (``data-first-page-ms``;
   target <= 300 ms), and loaded cold with ``#session=ID`` from navigation start;
3. the full Markdown of that first page: from the click to every response of it rendered by the Gateway
   (``markdown.render``, ``data-rendered``) — the local rendering shows before that;
4. page weight: the bytes of what the page loads (HTML, the ES modules, the style sheet), uncompressed
   (target <= 200 KB).
The Gateway is stopped at the end.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from playwright.sync_api import Page, sync_playwright
from tests.dashboard.conftest import CHROMIUM, CHROMIUM_FLAGS

from anyy.domain.entries import EntryKind, NewEntry
from anyy.domain.sessions import NewSession
from anyy.profiles import get_profile
from anyy.profiles.gateway_address import read_address
from anyy.storage.sqlite.store import SqliteStore

ANYY = str(Path(sys.executable).parent / "anyy")
TARGET_MS = 300.0
WEIGHT_TARGET = 200_000
BATCH = 500
DASHBOARD = Path(__file__).resolve().parents[1] / "src" / "anyy" / "dashboard"


def _run(argv: list[str], env: dict[str, str]) -> None:
    done = subprocess.run(argv, env=env, capture_output=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr.decode()}")


def _text(index: int) -> str:
    if index % 2 == 0:
        return f"message {index}: a question about the plan?"
    return f"message {index}: the answer, with **bold**, `code` and a table:\n\n| a | b |\n|---|---|\n| 1 | 2 |\n"


def seed(profile_dir: Path, sessions: int, messages: int) -> str:
    store = SqliteStore.open_profile(profile_dir, profile="default")
    try:
        for i in range(sessions):
            store.create_session(NewSession(title=f"session {i}", provider="offline", model="offline"))
        long = store.create_session(NewSession(title="long", provider="offline", model="offline"))
        for start in range(0, messages, BATCH):
            store.append_entries(
                long.id,
                [
                    NewEntry(kind=EntryKind.USER if i % 2 == 0 else EntryKind.ASSISTANT, text=_text(i))
                    for i in range(start, min(messages, start + BATCH))
                ],
            )
        store.create_session(NewSession(title="small", provider="offline", model="offline"))
        return long.id
    finally:
        store.close()


def _ready(page: Page) -> float:
    page.wait_for_selector("body[data-ready=true]")
    return float(page.evaluate("() => performance.getEntriesByName('anyy-ready')[0].startTime"))


def _open_by_click(page: Page, title: str) -> tuple[float, float]:
    """(first page painted, every response of it rendered by the Gateway), ms from the click."""
    page.evaluate("() => { const c = document.getElementById('conversation'); delete c.dataset.firstPageMs; }")
    began = time.perf_counter()
    page.locator("#sessions li", has_text=title).first.click()
    page.wait_for_selector("#conversation[data-first-page-ms]")
    painted = float(page.locator("#conversation").get_attribute("data-first-page-ms") or "nan")
    page.wait_for_function(
        "() => { const a = document.querySelectorAll('#entries .kind-assistant'); "
        "return a.length > 0 && [...a].every((e) => e.dataset.rendered === 'true'); }"
    )
    return painted, (time.perf_counter() - began) * 1000


def _verdict(values: list[float], target: float) -> str:
    median, worst = statistics.median(values), max(values)
    verdict = "met" if median <= target else "MISSED"
    ratio = median / target
    return f"median {median:7.1f} ms  worst {worst:7.1f} ms  target <= {target:g} ms  ratio {ratio:.2f}  {verdict}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="anyy-dashboard-bench-") as tmp:
        home = Path(tmp) / "home"
        env = {k: v for k, v in os.environ.items() if k != "ANYY_PROFILE"}
        env["ANYY_HOME"] = str(home)
        _run([ANYY, "profile", "create", "default"], env)
        profile = get_profile(home, "default")
        long_id = seed(profile.path, args.sessions, args.messages)
        _run([ANYY, "gateway", "start"], env)
        try:
            address = read_address(profile)
            assert address is not None
            base = f"http://{address.host}:{address.port}/"
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_FLAGS)
                page = browser.new_context(viewport={"width": 1280, "height": 800}).new_page()
                page.goto(f"{base}#token={address.token}")
                _ready(page)
                ready, painted, rendered, cold = [], [], [], []
                for _ in range(args.runs):
                    page.goto(f"{base}#x", wait_until="commit")
                    page.reload()
                    ready.append(_ready(page))
                    page.locator("#sessions li", has_text="small").first.click()
                    page.wait_for_selector("#entries:empty", state="attached")
                    first, full = _open_by_click(page, "long")
                    painted.append(first)
                    rendered.append(full)
                for _ in range(args.runs):
                    page.goto(f"{base}#session={long_id}", wait_until="commit")
                    page.reload()
                    page.wait_for_selector("#conversation[data-first-page-at]")
                    cold.append(float(page.locator("#conversation").get_attribute("data-first-page-at") or "nan"))
                browser.close()
        finally:
            _run([ANYY, "gateway", "stop"], env)

    weight = sum(f.stat().st_size for f in DASHBOARD.iterdir() if f.suffix in (".html", ".js", ".css"))
    print(f"Dashboard in Chromium, {args.sessions} sessions, a {args.messages}-message conversation, {args.runs} runs:")
    print(f"  time to interactive            {_verdict(ready, TARGET_MS)}")
    print(f"  open by click, first page      {_verdict(painted, TARGET_MS)}")
    print(f"  open cold (#session=ID)        {_verdict(cold, TARGET_MS)}")
    print(
        f"  first page's Markdown rendered median {statistics.median(rendered):7.1f} ms  worst {max(rendered):7.1f} ms"
    )
    verdict = "met" if weight <= WEIGHT_TARGET else "MISSED"
    ratio = weight / WEIGHT_TARGET
    print(
        f"  page weight                    {weight:,} bytes  target <= {WEIGHT_TARGET:,}  ratio {ratio:.2f}  {verdict}"
    )


if __name__ == "__main__":
    main()
