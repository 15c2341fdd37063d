"""Budgets (SPEC Y2): which spending limits a model call of a session falls under, and what to say when one
is spent. Pure: the store sums what was spent, the runtime asks before each call.

A call goes ahead only when, for every budget it falls under, what was spent plus what calls in flight
hold plus this call's worst case (its output limit at the model's output price) stays within the limit;
so at most one call (by its input, which the worst case leaves out) can cross a limit. The scopes:

- ``day`` / ``month``: the whole profile, since the UTC day's or month's start;
- ``session:ID``: a conversation with its delegated children (a child spends from its parent's budget,
  never from one of its own: a child the model started cannot raise it);
- ``schedule:ID`` / ``resident:ID``: each schedule's and resident's sessions, per UTC day.

A limit the user set for one session, schedule or resident (``anyy budget set``) replaces the profile's
default for that kind. The model has no tool that sets one.
"""

from __future__ import annotations

import calendar
import time
from collections.abc import Mapping

import msgspec

from anyy.domain.errors import InvalidInput
from anyy.domain.pricing import format_usd
from anyy.domain.sessions import Session

SCOPE_KINDS = ("session", "schedule", "resident")
# Anthropic's thinking budgets by effort (anyy.providers.anthropic_messages.THINKING_BUDGET; a test checks):
# thinking tokens are output tokens, on top of the call's max_tokens.
THINKING_TOKENS = {"low": 1024, "medium": 4096, "high": 16384}
HOLD_SECONDS = 3600.0  # a hold left by a Gateway that died mid-call stops counting after this


class BudgetScope(msgspec.Struct, kw_only=True, frozen=True):
    """One limit a call falls under. ``match``/``value``: which calls count (``all``, or the sessions
    whose tree, schedule or resident is ``value``); ``since``: from when."""

    key: str  # "day", "month", "session:ID", "schedule:ID", "resident:ID"
    label: str  # for people: "the profile's daily budget"
    limit_nano: int
    since: float
    match: str  # "all" | "tree" | "schedule" | "resident"
    value: str = ""
    raise_hint: str = ""  # how to raise it
    # The running total it reads (``spend_keys``): "all" for the profile's, else its own key; and the period.
    spend_scope: str = ""
    period: str = ""


class Exhausted(msgspec.Struct, kw_only=True, frozen=True):
    scope: BudgetScope
    spent_nano: int

    def notice(self) -> str:
        s = self.scope
        return (
            f"Budget exhausted: {s.label} is {format_usd(s.limit_nano)} and {format_usd(self.spent_nano)} is "
            f"spent or held, so the next model call (up to its worst case) could pass it. Nothing more is sent "
            f"to the model; the queue is kept. To go on, {s.raise_hint}, then continue."
        )


def day_period(at: float) -> str:
    return time.strftime("d:%Y-%m-%d", time.gmtime(at))


def month_period(at: float) -> str:
    return time.strftime("m:%Y-%m", time.gmtime(at))


def spend_keys(session_id: str, origin: object, at: float) -> list[tuple[str, str]]:
    """The running totals a priced call made at ``at`` by a session (its ``Origin`` or None) adds to:
    (scope, period) pairs, the same that :func:`scopes_for` reads."""
    keys = [("all", day_period(at)), ("all", month_period(at))]
    parent = getattr(origin, "parent_session_id", None) if getattr(origin, "kind", "") == "delegate" else None
    keys.append((f"session:{parent or session_id}", ""))
    schedule_id = getattr(origin, "schedule_id", None)
    if schedule_id:
        keys.append((f"schedule:{schedule_id}", day_period(at)))
    resident_id = getattr(origin, "resident_id", None)
    if resident_id:
        keys.append((f"resident:{resident_id}", day_period(at)))
    return keys


def day_start(now: float) -> float:
    t = time.gmtime(now)
    return float(calendar.timegm((t.tm_year, t.tm_mon, t.tm_mday, 0, 0, 0)))


def month_start(now: float) -> float:
    t = time.gmtime(now)
    return float(calendar.timegm((t.tm_year, t.tm_mon, 1, 0, 0, 0)))


def tree_root(session: Session) -> str:
    origin = session.origin
    if origin is not None and origin.kind == "delegate" and origin.parent_session_id:
        return origin.parent_session_id
    return session.id


def check_scope(scope: str) -> tuple[str, str]:
    kind, _, ident = scope.partition(":")
    if kind not in SCOPE_KINDS or not ident:
        raise InvalidInput(
            f"unknown budget scope {scope!r}: write session:ID, schedule:ID or resident:ID "
            "(the profile's day and month limits are [budgets] day and month in config.toml)"
        )
    return kind, ident


def scopes_for(
    session: Session,
    defaults: Mapping[str, float],
    overrides: Mapping[str, int],
    now: float,
) -> list[BudgetScope]:
    """The budgets a model call of ``session`` falls under. ``defaults``: [budgets] in dollars (0: none);
    ``overrides``: limits set per scope, in nano-dollars."""
    from anyy.domain.pricing import usd_to_nano

    scopes: list[BudgetScope] = []
    config_hint = "raise it in [budgets] of config.toml (then `anyy gateway reload`)"

    def add(
        key: str, label: str, default_key: str, since: float, *, match: str, value: str = "", period: str = ""
    ) -> None:
        limit = overrides.get(key)
        hint = f"`anyy budget set {key} DOLLARS`" if ":" in key else config_hint
        if limit is None:
            usd = defaults.get(default_key, 0) or 0
            if usd <= 0:
                return
            limit = usd_to_nano(usd)
        scopes.append(
            BudgetScope(
                key=key,
                label=label,
                limit_nano=limit,
                since=since,
                match=match,
                value=value,
                raise_hint=hint,
                spend_scope="all" if match == "all" else key,
                period=period,
            )
        )

    add("day", "the profile's daily budget", "day", day_start(now), match="all", period=day_period(now))
    add("month", "the profile's monthly budget", "month", month_start(now), match="all", period=month_period(now))
    root = tree_root(session)
    add(
        f"session:{root}",
        f"the budget of session {root} (with its delegated tasks)",
        "session",
        0.0,
        match="tree",
        value=root,
    )
    origin = session.origin
    if origin is not None and origin.schedule_id:
        name = origin.name or origin.schedule_id
        key = f"schedule:{origin.schedule_id}"
        add(
            key,
            f"the daily budget of schedule {name}",
            "schedule",
            day_start(now),
            match="schedule",
            value=origin.schedule_id,
            period=day_period(now),
        )
    if origin is not None and origin.resident_id:
        name = origin.name or origin.resident_id
        key = f"resident:{origin.resident_id}"
        add(
            key,
            f"the daily budget of resident {name}",
            "resident",
            day_start(now),
            match="resident",
            value=origin.resident_id,
            period=day_period(now),
        )
    return scopes


def worst_output_tokens(max_tokens: int, effort: str) -> int:
    return max_tokens + THINKING_TOKENS.get(effort, 0)


def warning_text(scope: BudgetScope, spent_nano: int) -> str:
    share = 100 * spent_nano // max(1, scope.limit_nano)
    return (
        f"Budget warning: {format_usd(spent_nano)} of {scope.label} ({format_usd(scope.limit_nano)}) is spent "
        f"({share}%). Work stops before a call that could pass it; {scope.raise_hint} to give more."
    )
