"""Benchmark of the TUI (issue 6) against a running Gateway with the offline model.

    .venv/bin/python -m bench.tui_bench [--entries 10000] [--runs 5] [--seconds 5]

In a temporary anyy home, creates a profile, seeds one session with ``--entries`` entries (user and
assistant turns, written straight into the profile's store before the Gateway starts), starts the
Gateway (``anyy gateway start``), then measures:

1. first paint of ``anyy --resume ID``: the app run headless (``App.run_test()``, 100x30) from the
   app's construction to its first frame after opening (the app's ``first_paint_at`` mark, set by
   ``call_after_refresh`` once the session, its newest history page and its queue are shown); that
   frame is checked to contain the newest message. Median and worst of ``--runs`` (target <= 500 ms).
   Interpreter start and imports are not included: they are measured apart (``import anyy.tui.app``
   in a fresh interpreter) and reported beside it.
2. typing while an answer streams at 200 tokens/s: synthetic ``text_delta`` events are posted into the
   app at 200 per second for ``--seconds`` while a key is pressed every 50 ms. Reported: the event
   loop's longest stall (a 5 ms ticker's worst lateness: no frame can be drawn during a stall),
   and keystroke-to-screen (a Key event posted as the terminal driver does, to the next refresh done
   with the key in the editor), p50 and
   max (target: nothing slower than 50 ms). The Gateway is not involved in this part.
The Gateway is stopped at the end (``anyy gateway stop``).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from textual import events

from anyy.api.events import ExecutionStateChanged, TextDeltaEvent
from anyy.domain.entries import EntryKind, NewEntry
from anyy.domain.sessions import NewSession
from anyy.profiles import get_profile
from anyy.profiles.gateway_address import Address, read_address
from anyy.storage.sqlite.store import SqliteStore
from anyy.tui.app import AnyyApp
from anyy.tui.link import GatewayEvent

ANYY = str(Path(sys.executable).parent / "anyy")
FIRST_PAINT_TARGET_MS = 500.0
FRAME_TARGET_MS = 50.0
TOKENS_PER_SECOND = 200
KEY_INTERVAL = 0.05
TICK = 0.005
SIZE = (100, 30)
BATCH = 500


class BenchApp(AnyyApp):
    """The app with a signal each time the editor's text changes (keystroke timing waits on it)."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.edited = asyncio.Event()

    def on_text_area_changed(self) -> None:
        self.edited.set()


async def until(condition: Callable[[], bool], timeout: float) -> None:
    """Return once ``condition()`` holds, looked at every millisecond (outside the measured spans)."""
    async with asyncio.timeout(timeout):
        while not condition():
            await asyncio.sleep(0.001)


def _run(argv: list[str], env: dict[str, str]) -> None:
    done = subprocess.run(argv, env=env, capture_output=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr.decode()}")


def _kind(index: int) -> EntryKind:
    return EntryKind.parse("user" if index % 2 == 0 else "assistant")


def _text(index: int) -> str:
    if index % 2 == 0:
        return f"question-{index:05d}: how does this part work, and what should I try next?"
    return f"answer-{index:05d}: it works **like this**, with `some code` and a list:\n\n- one\n- two\n"


def seed(profile_dir: Path, entries: int) -> str:
    """One session holding ``entries`` entries, appended in batches straight into the store."""
    store = SqliteStore.open_profile(profile_dir, profile="default")
    try:
        session = store.create_session(NewSession(title="huge", provider="offline", model="offline"))
        for start in range(0, entries, BATCH):
            batch = [NewEntry(kind=_kind(i), text=_text(i)) for i in range(start, min(entries, start + BATCH))]
            store.append_entries(session.id, batch)
        return session.id
    finally:
        store.close()


async def first_paint(address: Address, session_id: str, newest: str) -> float:
    began = time.perf_counter()
    app = AnyyApp(address, session_id=session_id)
    async with app.run_test(size=SIZE):
        await until(lambda: app.first_paint_at is not None or app.failure is not None, 60.0)
        if app.failure is not None or app.first_paint_at is None:
            raise SystemExit(f"the TUI did not open: {app.failure}")
        painted = app.first_paint_at
        if newest not in app.export_screenshot():
            raise SystemExit(f"the first frame does not show the newest message ({newest})")
    return (painted - began) * 1000


def import_time(env: dict[str, str]) -> float:
    code = "import time; t = time.perf_counter(); import anyy.tui.app; print((time.perf_counter() - t) * 1000)"
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    return float(done.stdout)


def _resolve(future: asyncio.Future[float]) -> None:
    if not future.done():
        future.set_result(time.perf_counter())


async def streaming(address: Address, seconds: float) -> tuple[float, float, float, int]:
    """(longest loop stall, keystroke-to-screen p50, max) in ms, and the number of deltas posted."""
    app = BenchApp(address)
    stalls: list[float] = []
    keys: list[float] = []
    async with app.run_test(size=SIZE):
        await until(lambda: app.first_paint_at is not None, 60.0)
        sid = app.session_id
        app.post_message(GatewayEvent(ExecutionStateChanged(session_id=sid, execution_id="exe_b", state="running")))
        await until(lambda: app.busy, 10.0)
        stop = asyncio.Event()

        async def ticker() -> None:
            expected = time.perf_counter() + TICK
            while not stop.is_set():
                await asyncio.sleep(TICK)
                now = time.perf_counter()
                stalls.append((now - expected) * 1000)
                expected = now + TICK

        async def feed() -> int:
            count = int(seconds * TOKENS_PER_SECOND)
            start = time.perf_counter()
            for i in range(count):
                delay = start + i / TOKENS_PER_SECOND - time.perf_counter()
                if delay > 0:
                    await asyncio.sleep(delay)
                text = f"token{i} " if i % 40 else f"token{i}\n\n"
                app.post_message(GatewayEvent(TextDeltaEvent(session_id=sid, execution_id="exe_b", text=text)))
            return count

        async def typing() -> None:
            end = time.perf_counter() + seconds
            while time.perf_counter() < end:
                pressed = time.perf_counter()
                typed = len(keys) + 1
                app.edited.clear()
                app.post_message(events.Key("x", "x"))  # as the terminal driver posts it
                while app.editor.text.count("x") < typed:
                    await asyncio.wait_for(app.edited.wait(), 30.0)
                    app.edited.clear()
                shown: asyncio.Future[float] = asyncio.get_running_loop().create_future()
                app.call_after_refresh(_resolve, shown)
                keys.append((await shown - pressed) * 1000)
                await asyncio.sleep(max(0.0, KEY_INTERVAL - (time.perf_counter() - pressed)))

        ticking = asyncio.create_task(ticker())
        count, _ = await asyncio.gather(feed(), typing())
        stop.set()
        await ticking
        await until(lambda: f"token{count - 1}" in app.conversation.streamed, 30.0)
        if "x" * len(keys) not in app.editor.text:
            raise SystemExit("the typed keys did not reach the editor")
    return max(stalls), statistics.median(keys), max(keys), count


def _verdict(value: float, target: float) -> str:
    verdict = "met" if value <= target else "MISSED"
    return f"{value:8.1f} ms  target <= {target:g} ms  ratio {value / target:.2f}  {verdict}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--entries", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=5.0)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="anyy-tui-bench-") as tmp:
        home = Path(tmp) / "home"
        env = {k: v for k, v in os.environ.items() if k != "ANYY_PROFILE"}
        env["ANYY_HOME"] = str(home)
        os.environ["ANYY_HOME"] = str(home)
        os.environ.pop("ANYY_PROFILE", None)
        _run([ANYY, "profile", "create", "default"], env)
        profile = get_profile(home, "default")
        began = time.perf_counter()
        session_id = seed(profile.path, args.entries)
        print(f"seeded {args.entries} entries in {time.perf_counter() - began:.1f} s (session {session_id})")
        _run([ANYY, "gateway", "start"], env)
        try:
            address = read_address(profile)
            assert address is not None
            newest = f"answer-{args.entries - 1:05d}" if args.entries % 2 == 0 else f"question-{args.entries - 1:05d}"
            paints = [asyncio.run(first_paint(address, session_id, newest)) for _ in range(args.runs)]
            imports = import_time(env)
            stall, key_p50, key_max, count = asyncio.run(streaming(address, args.seconds))
        finally:
            _run([ANYY, "gateway", "stop"], env)

    print(f"first paint, --resume of a {args.entries}-entry session ({args.runs} runs, headless {SIZE[0]}x{SIZE[1]}):")
    print(f"  median {_verdict(statistics.median(paints), FIRST_PAINT_TARGET_MS)}")
    print(f"  worst  {_verdict(max(paints), FIRST_PAINT_TARGET_MS)}")
    print(f"  (not included: import anyy.tui.app in a fresh interpreter, {imports:.0f} ms)")
    print(
        f"streaming {count} text_delta events at {TOKENS_PER_SECOND}/s while typing every {KEY_INTERVAL * 1000:g} ms:"
    )
    print(f"  longest event-loop stall  {_verdict(stall, FRAME_TARGET_MS)}")
    print(f"  keystroke-to-screen p50   {key_p50:8.1f} ms")
    print(f"  keystroke-to-screen max   {_verdict(key_max, FRAME_TARGET_MS)}")


if __name__ == "__main__":
    main()
