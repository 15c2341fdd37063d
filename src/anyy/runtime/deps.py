"""What the runtime needs from the rest of anyy, gathered in one place and injected (tests swap parts)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from anyy.domain.model_io import ToolSpec
from anyy.domain.sessions import Session
from anyy.providers.base import Provider
from anyy.runtime.bus import EventBus
from anyy.runtime.clock import Clock, SystemClock, WallClock
from anyy.runtime.contexts import ContextCache
from anyy.runtime.pricing import PriceBook
from anyy.runtime.user_hooks import UserHooks
from anyy.runtime.workspaces import WorkspacePolicy, session_workspace
from anyy.storage.owner import StoreOwner
from anyy.storage.protocol import SessionStore
from anyy.tools.base import Delegator, ToolContext, ToolOutcome
from anyy.tools.mcp_servers import McpServers
from anyy.tools.policy import ToolPolicy
from anyy.workspaces.captures import CaptureStore

CallTool = Callable[[str, dict[str, Any]], Awaitable[ToolOutcome]]


class ModelSource(Protocol):
    """Providers by name, and the M2 rule for a session's model selection."""

    async def provider(self, name: str) -> Provider:
        """The provider of that name, built on first use off the event loop (its SDK's import)."""
        ...

    def resolve(self, provider: str, model: str, last_physical: tuple[str, str] | None) -> tuple[str, str]: ...

    def models(self, provider: str) -> list[str]:
        """The model names ``provider`` offers, first its default; empty when it accepts any name."""
        ...


class ToolSet(Protocol):
    def specs(self) -> Sequence[ToolSpec]: ...

    def names(self) -> Sequence[str]: ...

    async def run(self, name: str, arguments: dict[str, Any], context: ToolContext, call_tool: CallTool) -> ToolOutcome:
        """Run one tool (``call_tool`` serves the inner calls of a Codemode script)."""
        ...


class ToolSource(Protocol):
    def tools_for(self, enabled: Sequence[str], *, codemode: bool, workspace: Path | None = None) -> ToolSet:
        """The tools ``enabled`` names; ``workspace``: the session's, whose skills join the profile's (N4)."""
        ...


@dataclass
class RuntimeSettings:
    retries_enabled: bool = True
    max_retries: int = 3
    budget_tokens: int = 100_000  # compaction starts when the context passes this
    keep_fraction: float = 0.2  # share of the budget kept verbatim after a compaction
    execution_timeout: float | None = None  # seconds; None: no limit
    tool_timeout: float = 120.0
    tool_output_cap: int = 32_000
    max_passes: int = 200  # a runaway tool loop ends as failed rather than forever
    max_children: int = 3  # delegated tasks of one call running at once (K2, [background])
    max_depth: int = 1  # how deep delegation may nest: 1, a child cannot delegate again
    lease: float = 3.0  # seconds a session stays with a Gateway that stopped renewing it (shared stores)
    mcp_wait: float = 5.0  # seconds a turn waits for its MCP servers to start, then runs without them (N1)
    outage_hold: float = 30.0  # seconds a running execution waits for an unreachable store (P7)
    budgets: dict[str, float] = field(default_factory=dict)  # [budgets] limits in dollars (Y2); empty: none
    budget_warn_at: float = 0.8  # the share of a budget at which a warning is sent


@dataclass
class Deps:
    owner: StoreOwner[SessionStore]
    models: ModelSource
    tools: ToolSource
    system_prompt: Callable[[Session], str]  # role + Soul + memory snapshot, read at execution start
    workdir: Path  # the Gateway's working directory: where sessions made before workspaces (W1) work
    memory_dir: Path
    settings: RuntimeSettings = field(default_factory=RuntimeSettings)
    clock: Clock = field(default_factory=SystemClock)
    bus: EventBus = field(default_factory=EventBus)
    wall: Clock = field(default_factory=WallClock)  # wall-clock time: residents' heartbeats (K3)
    reload_settings: Callable[[], str] | None = None  # re-reads config.toml (R1); says what changed
    tool_env: dict[str, str] | None = None  # the environment of programs tools run; None: the Gateway's
    tool_policy: ToolPolicy = field(default_factory=ToolPolicy)  # private addresses, the sandbox (N3)
    tool_servers: McpServers | None = None  # the profile's MCP servers (N1)
    captures: CaptureStore | None = None  # the profile's file captures (W2); None: off
    captures_off: str = ""  # why they are off, for people
    forks_dir: Path | None = None  # the record of the folders made for forks' own workspaces (W3)
    # (session, execution, call) → what starts a delegate call's children (K2); None: no delegation.
    delegator: Callable[[str, str, str], Delegator] | None = None
    contexts: ContextCache = field(default_factory=ContextCache)  # active sessions' decoded contexts
    hooks: UserHooks | None = None  # the user's own hooks, [hooks] (N6); None: none
    workspaces: WorkspacePolicy = field(default_factory=WorkspacePolicy)  # [workspaces]: default, roots (W1)
    prices: PriceBook | None = None  # what model calls cost (Y1): [prices], then the price table; None: unpriced

    def workspace_of(self, session: Session) -> Path:
        """The directory ``session`` works in (W1): its workspace (absolute, canonical), or the Gateway's
        working directory for a session made before workspaces. Tools, the sandbox, approvals and skills
        all read it from here."""
        return session_workspace(session, self.workdir)
