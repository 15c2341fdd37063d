"""A new session before its first message (SPEC U1): shown, configurable, but not created yet.

Opening the TUI (or ``/new``) shows a *draft*: the role it was opened with and the profile's provider, model
and effort, as a session created now would have them. Nothing is written to the Gateway until the first
message is sent, so a TUI that is closed, crashes or is killed before that leaves no empty session behind.
``/provider``, ``/model`` and ``/effort`` change the draft, checked against the Gateway's catalogue
(``models.list``) by the rules ``session.settings`` applies; the first send is one ``session.send`` with
``new`` (the role and those choices, the Gateway staying the judge): the session and its first message are
created together, or, refused, neither is.
"""

from __future__ import annotations

import time

import msgspec

from anyy.api.gateway import Models
from anyy.api.params import NewSessionParams
from anyy.api.sessions import Session
from anyy.profiles.profile import Profile

DRAFT_ID = ""  # a draft has no id: events and replies of real sessions never match it
VIRTUAL_PROVIDER = "alias"  # a virtual model (an alias) is chosen as provider "alias", model NAME


class DraftRefused(Exception):
    """A choice the Gateway would refuse: the message says what exists."""


def draft_session(profile: Profile, role: str | None, workspace: str | None = None) -> tuple[Session, int]:
    """The session ``session.create`` would make now for ``role`` (checked: an unknown role is the profile's
    clear error listing the roles) in ``workspace`` (W1), not created; and its context budget, as
    ``session.get`` says it."""
    role_name = role or "default"
    profile.load_role(role_name)
    config = profile.load_config()
    now = time.time()
    return Session(
        id=DRAFT_ID,
        kind="chat",
        title="",
        role=role_name,
        provider=config.model.provider,
        model=config.model.model,
        effort=config.model.effort,
        tools={"enabled": list(config.tools.enabled), "codemode": config.tools.codemode},
        steering_mode=config.queue.steering,
        follow_up_mode=config.queue.follow_up,
        goal=None,
        head=None,
        forked_from=None,
        created_at=now,
        updated_at=now,
        workspace=workspace,
    ), config.compaction.budget_tokens


def is_draft(session: Session | None) -> bool:
    return session is not None and session.id == DRAFT_ID


def choose(catalog: Models, draft: Session, *, provider: str | None, model: str | None, effort: str | None) -> Session:
    """The draft with a new provider, model or effort, by the rules of ``session.settings``: a provider
    changed alone takes its first listed model; a provider must exist, and a model be one it lists (when it
    lists any) or a known alias. :class:`DraftRefused` otherwise."""
    new_provider = draft.provider if provider is None else provider
    new_model = draft.model if model is None else model
    listed = {p.name: p.models for p in catalog.providers}
    if model is None and new_provider != draft.provider:
        offered = listed.get(new_provider) or []
        if new_provider in listed and not offered:
            raise DraftRefused(
                f"the provider {new_provider!r} lists no models, so it needs a model name too: "
                f"/provider {new_provider}, then /model NAME"
            )
        new_model = offered[0] if offered else new_model
    _check(catalog, listed, new_provider, new_model)
    return msgspec.structs.replace(
        draft, provider=new_provider, model=new_model, effort=draft.effort if effort is None else effort
    )


def _check(catalog: Models, listed: dict[str, list[str]], provider: str, model: str) -> None:
    """The Gateway's checks (``session.settings``), with its words."""
    if provider == VIRTUAL_PROVIDER:
        aliases = {a.name: a for a in catalog.aliases}
        if model not in aliases:
            known = ", ".join(sorted(aliases)) or "none are defined"
            raise DraftRefused(
                f"the virtual model {model!r} is not registered (aliases: {known}): choose a model with "
                "/model, or add it to [aliases] in config.toml"
            )
        return
    if provider not in listed:
        names = ", ".join([*listed, VIRTUAL_PROVIDER])
        raise DraftRefused(
            f"unknown provider {provider!r}; the providers are: {names} "
            "(add a [providers.NAME] table to config.toml for another one)"
        )
    offered = listed[provider]
    if not model or (offered and model not in offered):
        said = f"its models are: {', '.join(offered)}" if offered else "name one with /model"
        raise DraftRefused(f"unknown model {model!r} for the provider {provider!r}; {said}")


def creation(draft: Session, defaults: Session) -> NewSessionParams:
    """The ``new`` of the first send's ``session.send``: the draft's role and workspace (W1), and its provider,
    model and effort when they differ from ``defaults`` (the draft as first shown: the profile's values)."""
    changed = (draft.provider, draft.model, draft.effort) != (defaults.provider, defaults.model, defaults.effort)
    if not changed:
        return NewSessionParams(role=draft.role, workspace=draft.workspace)
    return NewSessionParams(
        role=draft.role, provider=draft.provider, model=draft.model, effort=draft.effort, workspace=draft.workspace
    )
