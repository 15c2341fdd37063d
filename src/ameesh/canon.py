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

``ameesh set`` writes the agent's execution state (the registry); it can never go over a cap.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import msgspec

from ameesh.harnesses import EFFORTS

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


class Canon(msgspec.Struct, forbid_unknown_fields=True):
    defaults: Settings = msgspec.field(default_factory=Settings)
    roles: dict[str, Settings] = msgspec.field(default_factory=dict)
    tiers: dict[str, Settings] = msgspec.field(default_factory=dict)
    thresholds: Thresholds = msgspec.field(default_factory=Thresholds)
    path: str | None = None

    def effective(self, agent: dict[str, Any]) -> dict[str, Any]:
        """The settings a turn of ``agent`` runs with: its own, else its role's default, else the canon's.

        Session policy, when none of those sets it (H4, H6): an orchestrator keeps one long session rotated
        only when it grows (``taille``); build and review agents take ``AMEESH_SESSION_POLICY``, else
        ``par-lot`` (a fresh session per lot)."""
        role = self.roles.get(agent["role"], Settings())
        out: dict[str, Any] = {}
        for key in ("model", "effort", "tier", "session_policy"):
            out[key] = agent.get(key) or getattr(role, key) or getattr(self.defaults, key)
        if not out["session_policy"]:
            fallback = os.environ.get("AMEESH_SESSION_POLICY") or "par-lot"
            out["session_policy"] = "taille" if agent["role"] == "orchestrator" else fallback
        return out

    def check(self, role: str, settings: dict[str, Any]) -> None:
        """Refuse settings that break a cap of the role, of the tier, or are not known values."""
        policy, effort, model, tier = (settings.get(k) for k in ("session_policy", "effort", "model", "tier"))
        if policy and policy not in POLICIES:
            raise CanonError(f"session_policy={policy}: not one of {', '.join(POLICIES)}")
        if effort and effort not in EFFORTS:
            raise CanonError(f"effort={effort}: not one of {', '.join(EFFORTS)}")
        where = self.path or "the canon"
        scopes = [("defaults", self.defaults)]
        if role in self.roles:
            scopes.append((f"roles.{role}", self.roles[role]))
        if tier:
            scopes.append((f"tiers.{tier}", self.tiers.get(tier, Settings())))
        for name, caps in scopes:
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


def for_agent(agent: dict[str, Any]) -> Canon:
    """The canon that governs ``agent``: AMEESH_CANON, else found upward from its working directory."""
    workdir = Path(agent["workdir"])
    return load(workdir if workdir.is_dir() else None)
