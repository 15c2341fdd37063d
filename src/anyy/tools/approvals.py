"""Approvals at call time (SPEC N2): a call the rules deny gets a tool result saying so; one they make
``ask`` suspends the execution on an approval request (see :mod:`anyy.tools.approval_rules`)."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from anyy.tools.approval_rules import ApprovalRules, grant_key, rule_for, subject
from anyy.tools.base import ToolOutcome

DECISIONS = ("once", "session", "deny")
QUESTION_PREFIX = "Approval needed:"


def gate(
    rules: ApprovalRules,
    name: str,
    arguments: Mapping[str, Any],
    *,
    granted: Collection[str] = (),
    can_wait: bool = True,
) -> ToolOutcome | None:
    """None when the call may run; else its outcome: denied, or suspended on an approval request."""
    rule, pattern = rule_for(rules, name, arguments)
    if rule == "allow" or (rule == "ask" and grant_key(name, arguments) in granted):
        return None
    shown = subject(name, arguments)
    shown = shown if len(shown) <= 500 else shown[:500] + "…"
    matched = f" (pattern {pattern!r})" if pattern != "*" else ""
    if rule == "deny":
        return ToolOutcome(
            text=f"Denied: the profile's approval rules deny {name}{matched} for {shown!r}. Do not retry it; "
            "find another way or ask the user.",
            is_error=True,
        )
    if not can_wait:
        return ToolOutcome(
            text=f"{name} needs the user's approval for {shown!r}{matched}, which a script cannot wait for: end "
            f"the script and call {name} directly.",
            is_error=True,
        )
    question = (
        f"{QUESTION_PREFIX} {name} {shown!r}{matched}. Answer once (run it this time), session (allow this "
        "for the rest of the session) or deny, with the RPC session.approve."
    )
    return ToolOutcome(text="", suspend=question)


def denied_by_user(answer: str) -> str:
    reason = "" if answer.strip().lower() == "deny" else f" Their answer: {answer.strip()}"
    return f"Denied: the user did not approve this call.{reason}"
