"""Benchmark of the agent runtime with the offline model answering at once.

    .venv/bin/python -m bench.runtime_bench [--executions 300] [--sessions 100] [--per-session 10]

Measures, on a real SQLite store in a temporary folder:
1. executions per second for one session (prompt → answer → next prompt), and across 100 sessions
   working at once in one process (target: >= 300 executions/s);
2. the runtime's own overhead per pass: wall time minus the time spent in the provider and in the
   store's work on its thread (target: median <= 1 ms);
3. checkpoint latency: from a tool call's end to the next model call (target: median <= 5 ms).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from anyy.api.events import ExecutionStateChanged
from anyy.domain.model_io import ModelRequest, ProviderEvent, ToolCallEvent, ToolResultMessage, ToolSpec
from anyy.domain.queue import NewSubmission
from anyy.domain.sessions import NewSession, Session
from anyy.providers.base import Provider
from anyy.providers.offline import OfflineProvider
from anyy.runtime.deps import CallTool, Deps, RuntimeSettings
from anyy.runtime.runtime import Runtime
from anyy.storage.owner import StoreOwner
from anyy.storage.protocol import SessionStore
from anyy.storage.sqlite import SqliteStore
from anyy.tools.base import ToolContext, ToolOutcome

T = TypeVar("T")


class Timed:
    """Time spent in the provider and in store work (on the store's thread), and checkpoint marks."""

    def __init__(self) -> None:
        self.provider = 0.0
        self.store = 0.0
        self.tool_ended: float | None = None
        self.checkpoints: list[float] = []


class TimedProvider:
    def __init__(self, inner: OfflineProvider, timed: Timed) -> None:
        self.inner = inner
        self.timed = timed
        self.name = inner.name

    def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        if self.timed.tool_ended is not None:
            self.timed.checkpoints.append(time.perf_counter() - self.timed.tool_ended)
            self.timed.tool_ended = None
        return self._timed(request)

    async def _timed(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        iterator = self.inner.stream(request).__aiter__()
        while True:
            start = time.perf_counter()
            try:
                event = await iterator.__anext__()
            except StopAsyncIteration:
                self.timed.provider += time.perf_counter() - start
                return
            self.timed.provider += time.perf_counter() - start
            yield event

    async def aclose(self) -> None:
        return None


class Models:
    def __init__(self, provider: Provider) -> None:
        self._provider = provider

    async def provider(self, name: str) -> Provider:
        return self._provider

    def resolve(self, provider: str, model: str, last_physical: tuple[str, str] | None) -> tuple[str, str]:
        return ("offline", "offline")

    def models(self, provider: str) -> list[str]:
        return ["offline"]


class NoopTools:
    def __init__(self, timed: Timed) -> None:
        self.timed = timed

    def tools_for(self, enabled: Sequence[str], *, codemode: bool, workspace: Path | None = None) -> NoopTools:
        return self

    def names(self) -> Sequence[str]:
        return ["noop"]

    def specs(self) -> Sequence[ToolSpec]:
        return [ToolSpec(name="noop", description="does nothing", parameters={"type": "object"})]

    async def run(self, name: str, arguments: dict[str, Any], context: ToolContext, call_tool: CallTool) -> ToolOutcome:
        self.timed.tool_ended = time.perf_counter()
        return ToolOutcome(text="ok")


class TimedOwner(StoreOwner[SessionStore]):
    """The store owner, timing the work each call does on the store's thread."""

    timed: Timed

    def submit(self, fn: Callable[[SessionStore], T]) -> Any:
        def timed_fn(store: SessionStore) -> T:
            start = time.perf_counter()
            try:
                return fn(store)
            finally:
                self.timed.store += time.perf_counter() - start

        return super().submit(timed_fn)


async def _setup(folder: Path) -> tuple[Runtime, Deps, Timed, OfflineProvider]:
    timed = Timed()
    owner = TimedOwner(lambda: SqliteStore(folder / "state.db", profile="bench"))
    owner.timed = timed
    owner.start()
    model = OfflineProvider()
    deps = Deps(
        owner=owner,
        models=Models(TimedProvider(model, timed)),
        tools=NoopTools(timed),
        system_prompt=lambda session: "You are a benchmark.",
        workdir=folder,
        memory_dir=folder,
        settings=RuntimeSettings(budget_tokens=10**9),
    )
    runtime = Runtime(deps)
    await runtime.start()
    return runtime, deps, timed, model


async def _one_session(folder: Path, executions: int) -> dict[str, float]:
    runtime, deps, timed, _model = await _setup(folder)
    session: Session = await deps.owner.call(lambda s: s.create_session(NewSession()))
    events = deps.bus.subscribe(session.id)
    durations = []
    overheads = []
    for i in range(executions):
        provider_before, store_before = timed.provider, timed.store
        start = time.perf_counter()
        await runtime.submit(session.id, NewSubmission(text=f"message {i}"))
        while True:
            event = await events.get()
            if isinstance(event, ExecutionStateChanged) and event.state == "completed":
                break
        elapsed = time.perf_counter() - start
        durations.append(elapsed)
        overheads.append(elapsed - (timed.provider - provider_before) - (timed.store - store_before))
    await runtime.aclose()
    await deps.owner.aclose()
    total = sum(durations)
    return {
        "executions_per_s": executions / total,
        "median_execution_ms": statistics.median(durations) * 1000,
        "median_overhead_per_pass_ms": statistics.median(overheads) * 1000,  # one pass per execution here
        "store_share": timed.store / total,
    }


async def _many_sessions(folder: Path, sessions: int, per_session: int) -> dict[str, float]:
    runtime, deps, timed, _model = await _setup(folder)
    created: list[Session] = [await deps.owner.call(lambda s: s.create_session(NewSession())) for _ in range(sessions)]

    async def drive(session: Session) -> None:
        events = deps.bus.subscribe(session.id)
        for i in range(per_session):
            await runtime.submit(session.id, NewSubmission(text=f"message {i}"))
            while True:
                event = await events.get()
                if isinstance(event, ExecutionStateChanged) and event.state == "completed":
                    break
        events.close()

    start = time.perf_counter()
    await asyncio.gather(*(drive(s) for s in created))
    elapsed = time.perf_counter() - start
    await runtime.aclose()
    await deps.owner.aclose()
    return {
        "executions_per_s": sessions * per_session / elapsed,
        "elapsed_s": elapsed,
        "store_share": timed.store / elapsed,
    }


async def _checkpoints(folder: Path, samples: int) -> dict[str, float]:
    runtime, deps, timed, model = await _setup(folder)
    session: Session = await deps.owner.call(lambda s: s.create_session(NewSession()))
    events = deps.bus.subscribe(session.id)
    for i in range(samples):
        model.enqueue([ToolCallEvent(call_id=f"c{i}", name="noop", arguments={})], "done")
        await runtime.submit(session.id, NewSubmission(text=f"use the tool {i}"))
        while True:
            event = await events.get()
            if isinstance(event, ExecutionStateChanged) and event.state == "completed":
                break
    await runtime.aclose()
    await deps.owner.aclose()
    assert any(isinstance(m, ToolResultMessage) for m in model.requests[-1].messages)
    ms = sorted(c * 1000 for c in timed.checkpoints)
    return {"median_ms": statistics.median(ms), "p90_ms": ms[int(len(ms) * 0.9)], "samples": len(ms)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--executions", type=int, default=300)
    parser.add_argument("--sessions", type=int, default=100)
    parser.add_argument("--per-session", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="anyy-runtime-bench-") as tmp:
        root = Path(tmp)
        for name in ("one", "many", "checkpoints"):
            (root / name).mkdir()
        one = asyncio.run(_one_session(root / "one", args.executions))
        many = asyncio.run(_many_sessions(root / "many", args.sessions, args.per_session))
        checkpoints = asyncio.run(_checkpoints(root / "checkpoints", 200))
    many_rate = many["executions_per_s"]
    rows = [
        ("executions/s, one session", f"{one['executions_per_s']:,.0f}/s", "(report)", "-"),
        (
            f"executions/s, {args.sessions} sessions at once",
            f"{many['executions_per_s']:,.0f}/s",
            ">= 300/s",
            f"{many_rate / 300:.2f}x of target: {'met' if many_rate >= 300 else 'MISSED'}",
        ),
        (
            "runtime overhead per pass (median)",
            f"{one['median_overhead_per_pass_ms']:.3f} ms",
            "<= 1 ms",
            "met" if one["median_overhead_per_pass_ms"] <= 1 else "MISSED",
        ),
        (
            "checkpoint: tool end -> next model call (median / p90)",
            f"{checkpoints['median_ms']:.2f} / {checkpoints['p90_ms']:.2f} ms",
            "<= 5 ms",
            "met" if checkpoints["median_ms"] <= 5 else "MISSED",
        ),
    ]
    median_ms, share = one["median_execution_ms"], one["store_share"]
    print(f"one session: median execution {median_ms:.2f} ms; store work {share:.0%} of the time")
    count, elapsed, busy = args.sessions * args.per_session, many["elapsed_s"], many["store_share"]
    print(f"{args.sessions} sessions: {count} executions in {elapsed:.2f} s; store thread busy {busy:.0%}")
    width = max(len(r[0]) for r in rows)
    print(f"{'figure':<{width}} | {'ours':<18} | {'target':<9} | verdict")
    for figure, ours, target, verdict in rows:
        print(f"{figure:<{width}} | {ours:<18} | {target:<9} | {verdict}")


if __name__ == "__main__":
    main()
