"""A real runtime on a real SQLite store, with the scripted offline model, tools a test controls, and a
clock the test advances. Everything waits on events with timeouts; nothing sleeps to synchronise."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from anyy.api.events import ExecutionStateChanged, RuntimeEvent
from anyy.domain.model_io import ToolSpec
from anyy.domain.queue import NewSubmission, Submission, SubmissionKind
from anyy.domain.sessions import NewSession, Session
from anyy.providers.base import Provider
from anyy.providers.gates import Gate
from anyy.providers.offline import OfflineProvider
from anyy.runtime.clock import Clock
from anyy.runtime.deps import CallTool, Deps, RuntimeSettings, ToolSource
from anyy.runtime.runtime import Runtime
from anyy.storage.owner import StoreOwner
from anyy.storage.protocol import SessionStore
from anyy.storage.sqlite import SqliteStore
from anyy.tools.base import ToolContext, ToolOutcome

TIMEOUT = 10.0


class ManualClock:
    """Waits that last until the test says so; records every wait asked for."""

    def __init__(self) -> None:
        self.t = 0.0
        self.sleeps: list[float] = []
        self._waiting: list[asyncio.Future[None]] = []
        self._asked = asyncio.Event()

    def now(self) -> float:
        return self.t

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting.append(future)
        self._asked.set()
        await future

    async def next_sleep(self) -> float:
        """Wait until something sleeps; the seconds it asked for."""
        while not self._waiting:
            self._asked.clear()
            await asyncio.wait_for(self._asked.wait(), TIMEOUT)
        return self.sleeps[-1]

    def advance(self) -> None:
        """End every wait in progress."""
        waiting, self._waiting = self._waiting, []
        for future in waiting:
            if not future.done():
                self.t += 1
                future.set_result(None)


class TestTools:
    """Tools for runtime tests: ``echo``, ``slow`` (waits on the next gate of ``gates``), ``ask_user``,
    ``boom`` (raises)."""

    __test__ = False

    def __init__(self) -> None:
        self.gates: list[Gate] = []
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.cancelled: list[str] = []

    def tools_for(self, enabled: Sequence[str], *, codemode: bool, workspace: Path | None = None) -> TestTools:
        return self

    def names(self) -> Sequence[str]:
        return ["echo", "slow", "ask_user", "boom"]

    def specs(self) -> Sequence[ToolSpec]:
        return [ToolSpec(name=n, description=n, parameters={"type": "object"}) for n in self.names()]

    async def run(self, name: str, arguments: dict[str, Any], context: ToolContext, call_tool: CallTool) -> ToolOutcome:
        self.calls.append((name, arguments))
        if name == "echo":
            return ToolOutcome(text=f"echo: {arguments.get('text', '')}")
        if name == "slow":
            gate = self.gates.pop(0)
            try:
                await gate.pass_through()
            except asyncio.CancelledError:
                self.cancelled.append(name)
                raise
            return ToolOutcome(text="slow done")
        if name == "ask_user":
            return ToolOutcome(text="", suspend=str(arguments.get("question", "?")))
        raise RuntimeError("the boom tool always fails")


class Models:
    def __init__(self, provider: OfflineProvider) -> None:
        self.offline = provider

    async def provider(self, name: str) -> Provider:
        return self.offline

    def resolve(self, provider: str, model: str, last_physical: tuple[str, str] | None) -> tuple[str, str]:
        return (provider or "offline", model or "offline")

    def models(self, provider: str) -> list[str]:
        return []  # any model name: a session's provider is changed with its model


class Harness:
    def __init__(
        self,
        tmp_path: Path,
        *,
        settings: RuntimeSettings | None = None,
        tools: ToolSource | None = None,
        open_store: Callable[[Path], SessionStore] | None = None,
    ) -> None:
        self.tmp_path = tmp_path
        self.model = OfflineProvider(scripted_only=True)
        self.tools = TestTools()
        self.tool_source: ToolSource = tools or self.tools
        self.clock = ManualClock()
        opener = open_store or (lambda folder: SqliteStore(folder / "state.db", profile="test"))
        self.owner: StoreOwner[SessionStore] = StoreOwner(lambda: opener(tmp_path))
        self.settings = settings or RuntimeSettings()
        self.system_prompts: list[str] = []
        self.deps: Deps | None = None
        self.runtime: Runtime | None = None
        self.events: asyncio.Queue[RuntimeEvent] | None = None
        self.seen: list[RuntimeEvent] = []
        self.wall: Clock | None = None  # set before entering: residents' wall clock (K3)

    async def __aenter__(self) -> Harness:
        self.owner.start()
        (self.tmp_path / "work").mkdir(exist_ok=True)
        (self.tmp_path / "memory").mkdir(exist_ok=True)
        self.deps = Deps(
            owner=self.owner,
            models=Models(self.model),
            tools=self.tool_source,
            system_prompt=self._system_prompt,
            workdir=self.tmp_path / "work",
            memory_dir=self.tmp_path / "memory",
            settings=self.settings,
            clock=self.clock,
        )
        if self.wall is not None:
            self.deps.wall = self.wall
        self.subscription = self.deps.bus.subscribe()
        self.runtime = Runtime(self.deps)
        await self.runtime.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self.runtime is not None
        await self.runtime.aclose()
        self.subscription.close()
        await self.owner.aclose()

    def _system_prompt(self, session: Session) -> str:
        prompt = f"You are the {session.role} role."
        self.system_prompts.append(prompt)
        return prompt

    @property
    def rt(self) -> Runtime:
        assert self.runtime is not None
        return self.runtime

    async def store(self, fn: Callable[[SessionStore], Any]) -> Any:
        return await self.owner.call(fn)

    async def session(self, **settings: Any) -> Session:
        session: Session = await self.store(lambda s: s.create_session(NewSession(**settings)))
        return session

    async def send(self, session_id: str, text: str, kind: SubmissionKind = "prompt") -> Submission:
        return await self.rt.submit(session_id, NewSubmission(kind=kind, text=text))

    async def event(self, predicate: Callable[[RuntimeEvent], bool]) -> RuntimeEvent:
        """The next event (from now on) that matches; fails after a timeout."""

        async def find() -> RuntimeEvent:
            while True:
                event = await self.subscription.get()
                self.seen.append(event)
                if predicate(event):
                    return event

        return await asyncio.wait_for(find(), TIMEOUT)

    async def state(self, state: str, execution_id: str | None = None) -> ExecutionStateChanged:
        event = await self.event(
            lambda e: (
                isinstance(e, ExecutionStateChanged)
                and e.state == state
                and (execution_id is None or e.execution_id == execution_id)
            )
        )
        assert isinstance(event, ExecutionStateChanged)
        return event

    async def texts(self, session_id: str) -> list[str]:
        path = await self.store(lambda s: s.path(session_id))
        return [f"{e.kind.label}:{e.text}" for e in path]

    async def pending(self, session_id: str) -> list[str]:
        subs = await self.store(lambda s: s.list_submissions(session_id))
        return [f"{s.kind}:{s.text}" for s in subs]
