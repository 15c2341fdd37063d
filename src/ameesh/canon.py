"""The canon: a TOML file versioned with the user's repository, carrying defaults and caps (H10).

Found at ``AMEESH_CANON`` or, going up from the working directory, at the first ``.ameesh/canon.toml``.
Without one, built-in defaults apply and nothing is capped. Example::

    [defaults]                  # every role
    session_policy = "par-lot"

    [roles.build]
    model = "claude-sonnet-4-5"       # default model of build agents
    effort = "medium"
    tier = "standard"
    models = ["claude-sonnet-4-5", "claude-opus-4-1"]   # cap: the models allowed
    max_effort = "high"                                  # cap: the highest effort
    tiers = ["standard", "premium"]                      # cap: the tiers allowed

    [tiers.premium]             # caps that come with a tier
    models = ["claude-opus-4-1"]
    max_effort = "max"

    [thresholds]                # rotation (H8) and alert (H7) thresholds; AMEESH_SESSION_* override them
    max_tokens = 150000
    max_turn_seconds = 900
    min_turns = 3
    alert_tokens = 150000
    max_attempts = 3
    turn_timeout = 3600
    backoff_base = 10           # seconds before the first retry of a failing agent, doubled at each failure
    backoff_max = 300           # … up to this
    circuit_after = 5           # failures in a row that stop the agent (alert circuit_open; ameesh retry)

    [alerts]                    # every new alert, as JSON on the command's stdin (ntfy, notify-send, a webhook)
    command = "notify-send ameesh \"$(jq -r .message)\""
    timeout = 10
    notify = ["ntfy://ntfy.example.org/ameesh"]   # H17: any apprise URL (ntfy, e-mail, Telegram, Matrix, Slack…)
    quiet = false               # true (or AMEESH_ALERTS_QUIET=1): one digest per URL when the runner ends

    [alerts.routes]             # per kind, instead of notify ([] silences a kind)
    circuit_open = ["ntfy://ntfy.example.org/phone", "mailto://me:pw@example.org"]
    session_too_big = []

    [lots]                      # H15, H16: a worktree per lot, its checks and reviews
    worktrees = true
    base = "main"
    checks = ["pytest -q", "ruff check ."]   # run in the lot's worktree when its build agent runs ameesh done
    check_timeout = 600
    reviewers = ["rev"]         # review agents asked for a verdict once the checks pass
    max_rounds = 3

``ameesh set`` writes the agent's execution state (the registry); it can never go over a cap. The caps
also hold at every turn against the canon as it is then (``clamp``): a setting a tightened canon no longer
allows is lowered to what it allows, and the thread says so.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import msgspec

from ameesh.harnesses import EFFORTS
from ameesh.rows import Agent

POLICIES = ("par-lot", "taille", "jamais")
SETTABLE = ("model", "effort", "tier", "session_policy")


class CanonError(Exception):
    """The canon is unreadable or a setting breaks one of its caps; the message names the cap."""


class Settings(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    model: str | None = None
    effort: str | None = None
    tier: str | None = None
    session_policy: str | None = None
    models: list[str] | None = None
    max_effort: str | None = None
    tiers: list[str] | None = None


class Thresholds(msgspec.Struct, forbid_unknown_fields=True):
    max_tokens: int = 150_000
    max_turn_seconds: float = 900.0
    min_turns: int = 3
    alert_tokens: int | None = None
    max_attempts: int = 3
    turn_timeout: float = 3600.0
    backoff_base: float = 10.0
    backoff_max: float = 300.0
    circuit_after: int = 5


class AlertPush(msgspec.Struct, forbid_unknown_fields=True):
    command: str | None = None  # run with ``sh -c``; the alert as JSON on stdin
    timeout: float = 10.0
    notify: list[str] = msgspec.field(default_factory=list)  # apprise URLs (ntfy://, mailto://, tgram://…), H17
    routes: dict[str, list[str]] = msgspec.field(default_factory=dict)  # kind → URLs instead of ``notify``
    quiet: bool = False  # hold the alerts and send one digest per URL when the runner ends (AMEESH_ALERTS_QUIET)

    def urls_for(self, kind: str) -> list[str]:
        """Where an alert of ``kind`` goes: its route if it has one (``[]`` silences it), else ``notify``."""
        return list(self.routes.get(kind, self.notify))

    def is_quiet(self) -> bool:
        env = os.environ.get("AMEESH_ALERTS_QUIET", "").strip().lower()
        return env in {"1", "true", "yes"} if env else self.quiet


class Lots(msgspec.Struct, forbid_unknown_fields=True):
    worktrees: bool = False  # H15: build and review agents play each lot in its own worktree
    base: str = "main"  # the branch a lot's worktree starts from (and is merged into)
    checks: list[str] = msgspec.field(default_factory=list)  # H16: commands (sh -c) run in the lot at ameesh done
    check_timeout: float = 600.0  # seconds a check may run (then killed: it failed)
    output_cap: int = 4000  # characters of a failing check's output sent back (its end)
    reviewers: list[str] = msgspec.field(default_factory=list)  # review agents asked once the checks pass
    max_rounds: int = 3  # check-and-review rounds of a lot; after the last one fails: alert lot_rounds


class Canon(msgspec.Struct, forbid_unknown_fields=True):
    defaults: Settings = msgspec.field(default_factory=Settings)
    roles: dict[str, Settings] = msgspec.field(default_factory=dict)
    tiers: dict[str, Settings] = msgspec.field(default_factory=dict)
    thresholds: Thresholds = msgspec.field(default_factory=Thresholds)
    alerts: AlertPush = msgspec.field(default_factory=AlertPush)
    lots: Lots = msgspec.field(default_factory=Lots)
    path: str | None = None

    def effective(self, agent: Agent) -> dict[str, Any]:
        """The settings a turn of ``agent`` runs with: its own, else its role's default, else the canon's.

        Session policy, when none of those sets it (H4, H6): ``AMEESH_SESSION_POLICY`` when it is set, for
        every role; else an orchestrator keeps one long session rotated only when it grows (``taille``) and
        build and review agents take a fresh session per lot (``par-lot``)."""
        return self.resolve(agent.role, {key: agent.setting(key) for key in SETTABLE})

    def resolve(self, role_name: str, own: dict[str, Any]) -> dict[str, Any]:
        """``effective`` for a role and the agent's own settings (``None``: the default)."""
        return self.resolve_with_sources(role_name, own)[0]

    def resolve_with_sources(self, role_name: str, own: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
        """``resolve``, and where each value came from (``ameesh show``): ``set`` (the agent's own, by
        ``ameesh set``), ``canon roles.ROLE`` / ``canon defaults`` (with the canon's path), ``env
        AMEESH_SESSION_POLICY``, or ``default`` (ameesh's own, or the harness's when the value is empty)."""
        role = self.roles.get(role_name, Settings())
        where = f" ({self.path})" if self.path else ""
        out: dict[str, Any] = {}
        sources: dict[str, str] = {}
        for key in SETTABLE:
            for source, value in (
                ("set", own.get(key)),
                (f"canon roles.{role_name}{where}", getattr(role, key)),
                (f"canon defaults{where}", getattr(self.defaults, key)),
            ):
                if value:
                    out[key], sources[key] = value, source
                    break
            else:
                out[key], sources[key] = None, "default"
        if not out["session_policy"]:
            env = os.environ.get("AMEESH_SESSION_POLICY", "").strip()
            if env:
                if env not in POLICIES:
                    raise CanonError(f"AMEESH_SESSION_POLICY={env}: not one of {', '.join(POLICIES)}")
                out["session_policy"], sources["session_policy"] = env, "env AMEESH_SESSION_POLICY"
            else:
                out["session_policy"] = "taille" if role_name == "orchestrator" else "par-lot"
                sources["session_policy"] = f"default for {role_name} agents"
        return out, sources

    def _scopes(self, role: str, tier: str | None) -> list[tuple[str, Settings]]:
        scopes = [("defaults", self.defaults)]
        if role in self.roles:
            scopes.append((f"roles.{role}", self.roles[role]))
        if tier:
            scopes.append((f"tiers.{tier}", self.tiers.get(tier, Settings())))
        return scopes

    def clamp(self, role: str, settings: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
        """The settings lowered into the caps as they are now, and what was lowered (for the thread).

        A tier not allowed becomes the role's default tier if allowed, else the first allowed; a model not
        allowed, the role's default model if allowed, else the first model every cap allows; an effort over
        ``max_effort`` becomes the lowest such cap."""
        out = dict(settings)
        changes: list[str] = []
        role_caps = self.roles.get(role, Settings())

        def allowed(caps_list: list[list[str]], default: str | None) -> str | None:
            common = [v for v in caps_list[0] if all(v in other for other in caps_list[1:])]
            return default if default in common else (common[0] if common else None)

        tier = out.get("tier")
        tier_caps = [c.tiers for _, c in self._scopes(role, None) if c.tiers is not None]
        if tier and tier_caps and any(tier not in caps for caps in tier_caps):
            out["tier"] = allowed(tier_caps, role_caps.tier or self.defaults.tier)
            changes.append(f"tier {tier} → {out['tier'] or '(none)'}")
        scopes = self._scopes(role, out.get("tier"))
        model = out.get("model")
        model_caps = [c.models for _, c in scopes if c.models is not None]
        if model and model_caps and any(model not in caps for caps in model_caps):
            out["model"] = allowed(model_caps, role_caps.model or self.defaults.model)
            changes.append(f"model {model} → {out['model'] or '(the harness default)'}")
        effort = out.get("effort")
        ceilings = [c.max_effort for _, c in scopes if c.max_effort in EFFORTS]
        if effort in EFFORTS and ceilings:
            ceiling = min(ceilings, key=EFFORTS.index)
            if EFFORTS.index(effort) > EFFORTS.index(ceiling):
                out["effort"] = ceiling
                changes.append(f"effort {effort} → {ceiling}")
        return out, changes

    def check(self, role: str, settings: dict[str, Any]) -> None:
        """Refuse settings that break a cap of the role, of the tier, or are not known values."""
        policy, effort, model, tier = (settings.get(k) for k in ("session_policy", "effort", "model", "tier"))
        if policy and policy not in POLICIES:
            raise CanonError(f"session_policy={policy}: not one of {', '.join(POLICIES)}")
        if effort and effort not in EFFORTS:
            raise CanonError(f"effort={effort}: not one of {', '.join(EFFORTS)}")
        where = self.path or "the canon"
        for name, caps in self._scopes(role, tier):
            if model and caps.models is not None and model not in caps.models:
                allowed = ", ".join(caps.models) or "none"
                raise CanonError(f"model={model} is over the cap {name}.models in {where} (allowed: {allowed})")
            if effort and caps.max_effort and EFFORTS.index(effort) > EFFORTS.index(caps.max_effort):
                raise CanonError(f"effort={effort} is over the cap {name}.max_effort = {caps.max_effort} in {where}")
            if tier and caps.tiers is not None and tier not in caps.tiers:
                allowed = ", ".join(caps.tiers) or "none"
                raise CanonError(f"tier={tier} is over the cap {name}.tiers in {where} (allowed: {allowed})")

    def threshold(self, name: str) -> float:
        """A threshold: ``AMEESH_SESSION_<NAME>`` (for the H8 three) overrides the canon."""
        env = os.environ.get(f"AMEESH_SESSION_{name.upper()}")
        if env:
            try:
                return float(env)
            except ValueError:
                raise CanonError(f"AMEESH_SESSION_{name.upper()}={env}: not a number") from None
        value = getattr(self.thresholds, name)
        if value is None and name == "alert_tokens":
            return self.threshold("max_tokens")
        return float(value)


def find(start: Path) -> Path | None:
    env = os.environ.get("AMEESH_CANON")
    if env:
        return Path(env)
    for directory in (start.resolve(), *start.resolve().parents):
        candidate = directory / ".ameesh" / "canon.toml"
        if candidate.is_file():
            return candidate
    return None


def load(start: Path | None = None) -> Canon:
    path = find(start or Path.cwd())
    if path is None:
        return Canon()
    try:
        canon = msgspec.toml.decode(path.read_bytes(), type=Canon)
    except OSError as exc:
        raise CanonError(f"cannot read the canon {path}: {exc.strerror}") from None
    except msgspec.DecodeError as exc:
        raise CanonError(f"the canon {path} is invalid: {exc}") from None
    canon.path = str(path)
    for name, settings in [("defaults", canon.defaults), *(("roles." + k, v) for k, v in canon.roles.items())]:
        if settings.max_effort and settings.max_effort not in EFFORTS:
            raise CanonError(f"the canon {path}: {name}.max_effort must be one of {', '.join(EFFORTS)}")
    return canon


def for_agent(agent: Agent) -> Canon:
    """The canon that governs ``agent``: AMEESH_CANON, else found upward from its working directory."""
    workdir = Path(agent.workdir)
    return load(workdir if workdir.is_dir() else None)
