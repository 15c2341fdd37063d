"""The runtime as a profile configures it: the store on its thread, the model registry, the built-in
tools, the system prompt from the session's role and the profile's memory, the settings of config.toml.
"""

from __future__ import annotations

from pathlib import Path

from anyy.domain.sessions import NewSession, Session, SessionKind
from anyy.hooks.trust import TRUST_FILE
from anyy.profiles.config import Config
from anyy.profiles.profile import Profile
from anyy.profiles.store import open_store
from anyy.providers.registry import ModelRegistry
from anyy.runtime.clock import Clock, SystemClock
from anyy.runtime.deps import Deps, RuntimeSettings
from anyy.runtime.pricing import PriceBook, price_book_from
from anyy.runtime.prompt import read_memory, system_prompt
from anyy.runtime.tooling import mcp_specs, tool_environment, tool_policy
from anyy.runtime.user_hooks import UserHooks
from anyy.runtime.workspace_forks import REGISTRY as FORKS_REGISTRY
from anyy.runtime.workspaces import policy_from
from anyy.storage.owner import StoreOwner
from anyy.storage.protocol import SessionStore
from anyy.tools import BuiltinToolSource
from anyy.tools.mcp_servers import McpServers
from anyy.tools.skills import find_skills, skill_dirs, skills_prompt
from anyy.workspaces.captures import CAPTURES_DIR, CaptureError, CaptureStore


def settings_from(config: Config) -> RuntimeSettings:
    return RuntimeSettings(
        retries_enabled=config.retries.enabled,
        max_retries=config.retries.max_retries,
        budget_tokens=config.compaction.budget_tokens,
        max_children=config.background.max_children,
        max_depth=config.background.max_depth,
        lease=config.store.lease,
        mcp_wait=config.mcp.wait,
        outage_hold=config.store.outage_hold,
        budgets=budget_defaults(config),
        budget_warn_at=config.budgets.warn_at,
    )


def budget_defaults(config: Config) -> dict[str, float]:
    """[budgets] limits in dollars by kind (0: none); limits set per scope are read from the store."""
    b = config.budgets
    return {"day": b.day, "month": b.month, "session": b.session, "schedule": b.schedule, "resident": b.resident}


def registry_from(config: Config) -> ModelRegistry:
    return ModelRegistry({name: config.provider(name) for name in config.provider_names()}, config.aliases)


def prices_from(config: Config) -> PriceBook:
    """The profile's prices (Y1): its [prices] over the price table, for every provider it can name."""
    return price_book_from(config.prices, {name: config.provider(name) for name in config.provider_names()})


def warm_providers(models: object, config: Config) -> None:
    """Import, in a background thread, the SDKs of the providers the profile names (its default model,
    its aliases' targets, its [providers] tables), so that no first model call waits for them."""
    if not isinstance(models, ModelRegistry):  # a test's own model source
        return
    named = [config.model.provider, *(t.partition("/")[0] for t in config.aliases.values()), *config.providers]
    models.warm(named)


def new_session(config: Config, *, role: str = "default", kind: SessionKind = "chat", title: str = "") -> NewSession:
    """A new session initialised from the profile's values (M1); the role sets identity and Soul only
    (M3): tools and Codemode come from the profile."""
    return NewSession(
        kind=kind,
        title=title,
        role=role,
        provider=config.model.provider,
        model=config.model.model,
        effort=config.model.effort,
        tools={"enabled": list(config.tools.enabled), "codemode": config.tools.codemode},
        steering_mode=config.queue.steering,
        follow_up_mode=config.queue.follow_up,
    )


def build_deps(profile: Profile, *, workdir: Path, clock: Clock | None = None) -> Deps:
    """Everything the runtime needs for ``profile``; the store thread is started by the caller."""
    profile.require()
    config = profile.load_config()

    profile_skills = profile.path / "skills"

    def prompt_for(session: Session) -> str:
        prompt = system_prompt(profile.load_role(session.role), read_memory(profile.memory_dir))
        skills = skill_dirs(profile_skills, deps.workspace_of(session))  # the session's workspace's (W1)
        listing = skills_prompt(find_skills(skills))  # names and descriptions only (N4)
        return f"{prompt}\n\n{listing}" if listing else prompt

    owner: StoreOwner[SessionStore] = StoreOwner(lambda: open_store(profile))
    servers = McpServers(mcp_specs(config))
    deps = Deps(
        owner=owner,
        models=registry_from(config),
        tools=BuiltinToolSource(servers, skill_dirs(profile_skills, workdir), profile_skills=profile_skills),
        system_prompt=prompt_for,
        workdir=workdir,
        memory_dir=profile.memory_dir,
        settings=settings_from(config),
        clock=clock or SystemClock(),
        tool_env=tool_environment(config),
        tool_policy=tool_policy(config, profile.home),
        tool_servers=servers,
        hooks=UserHooks(config.hooks, profile=profile.name, trust_path=profile.path / TRUST_FILE),
        workspaces=policy_from(config.workspaces),
        prices=prices_from(config),
    )

    def reload_settings() -> str:
        fresh = profile.load_config()  # a typo is an error here, and nothing changes
        deps.settings = settings_from(fresh)
        deps.models = registry_from(fresh)
        warm_providers(deps.models, fresh)
        deps.tool_env = tool_environment(fresh)
        deps.tool_policy = tool_policy(fresh, profile.home)
        deps.workspaces = policy_from(fresh.workspaces)
        deps.prices = prices_from(fresh)
        servers.configure(mcp_specs(fresh))  # applied by the reload's next step (tool servers)
        if deps.hooks is not None:
            deps.hooks.configure(fresh.hooks)
        return f"config.toml re-read: {fresh.model.provider}/{fresh.model.model} by default"

    deps.reload_settings = reload_settings
    deps.forks_dir = profile.path / FORKS_REGISTRY
    try:
        deps.captures = CaptureStore(profile.path / CAPTURES_DIR)
    except CaptureError as exc:  # no git: the sessions work, without file captures (said at each rewind)
        deps.captures_off = str(exc)
    return deps
