"""Approvals at call time (SPEC N2): a call the rules deny gets a tool result saying so; one they make
``ask`` suspends the execution on an approval request (see :mod:`anyy.tools.approval_rules`).

:func:`gate` is the one place a call is let through, denied or held: the runtime calls it before every
tool call (the model's own and a Codemode script's), with the rules, the working directory and the
session's grants.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

import msgspec

from anyy.tools.approval_rules import ApprovalRules, Decision, decide
from anyy.tools.base import ToolOutcome

DECISIONS = ("once", "session", "deny")
QUESTION_PREFIX = "Approval needed:"
_SHOWN = 4_000  # characters of a subject shown in a request
_PARTS_SHOWN = 50  # commands listed in a request
_SCRIPT_SHOWN = 20_000  # a script is approved as a whole: shown whole, unless huge


class Verdict(msgspec.Struct, frozen=True, kw_only=True):
    decision: Decision
    outcome: ToolOutcome | None  # None: the call may run


def gate(
    rules: ApprovalRules,
    name: str,
    arguments: Mapping[str, Any],
    *,
    workdir: Path | None = None,
    granted: Collection[str] = (),
    can_wait: bool = True,
    approved: str | None = None,
) -> Verdict:
    """Whether the call may run; else its outcome: denied, or suspended on an approval request.

    ``approved``: the text of the request the user answered ``once``; the call runs only if the same request
    would be asked now (a path whose symlink changed while the user read it is asked again)."""
    decision = decide(rules, name, arguments, workdir=workdir)
    if decision.rule == "allow" or (decision.rule == "ask" and f"{name}\n{decision.subject}" in granted):
        return Verdict(decision=decision, outcome=None)
    if decision.rule == "deny":
        text = (
            f"Denied: the profile's approval rules deny {name}{_by(decision)} for {_shown(decision.subject)}. "
            "Do not retry it; find another way or ask the user."
        )
        return Verdict(decision=decision, outcome=ToolOutcome(text=text, is_error=True))
    question = request(name, decision)
    if approved is not None and approved == question:
        return Verdict(decision=decision, outcome=None)
    if not can_wait:
        text = (
            f"{name} needs the user's approval for {_shown(decision.subject)}{_by(decision)}, which a script cannot "
            f"wait for: end the script and call {name} directly."
        )
        return Verdict(decision=decision, outcome=ToolOutcome(text=text, is_error=True))
    return Verdict(decision=decision, outcome=ToolOutcome(text="", suspend=question))


def request(name: str, decision: Decision) -> str:
    """The approval request as the user reads it: the call, the decision and why (the rule that matched,
    or what could not be proven), then the parsed commands with the rule each got."""
    limit = _SCRIPT_SHOWN if name == "run_script" else _SHOWN
    lines = [f"{QUESTION_PREFIX} {name} {_shown(decision.subject, limit)}"]
    if decision.given:
        lines[0] += f" (asked as {_shown(decision.given, 200)})"
    if len(decision.subject) > limit:
        lines.append(f"(cut: the whole {len(decision.subject)} characters are in the tool call's arguments)")
    if decision.why:
        reasons = [decision.why]
    elif decision.parts or decision.doubts:
        asking = [part for part in decision.parts if part.rule == "ask"]
        reasons = [f"{_shown(part.text, 200)} matches the rule {part.pattern!r} = ask" for part in asking[:3]]
        reasons += list(decision.doubts[:3])
    else:
        reasons = [f"it matches the rule {decision.pattern!r} = ask"]
    lines.append(f"Decision: ask, because {'; '.join(reasons)}.")
    if decision.parts:
        lines.append("Commands it runs:")
        shown = decision.parts[:_PARTS_SHOWN]
        lines += [f"- {_shown(part.text, 200)}: {_rule_words(part.rule, part.pattern)}" for part in shown]
        if len(decision.parts) > _PARTS_SHOWN:
            lines.append(f"- … and {len(decision.parts) - _PARTS_SHOWN} more commands")
    lines.append("Answer once (run it this time), session (allow exactly this for the rest of the session) or deny.")
    return "\n".join(lines)


def _rule_words(rule: str, pattern: str) -> str:
    if not pattern:
        return "allowed (no rule matches it)" if rule == "allow" else rule
    return f"{'allowed' if rule == 'allow' else rule} by {pattern!r}"


def _by(decision: Decision) -> str:
    if decision.parts:
        denied = next((part for part in decision.parts if part.rule == "deny"), None)
        if denied is not None:
            return f" (the command {_shown(denied.text, 200)} matches the pattern {denied.pattern!r})"
        return ""
    return f" (pattern {decision.pattern!r})" if decision.pattern not in ("", "*") else ""


def _shown(text: str, limit: int = _SHOWN) -> str:
    return repr(text if len(text) <= limit else text[:limit] + "…")


def denied_by_user(answer: str) -> str:
    reason = "" if answer.strip().lower() == "deny" else f" Their answer: {answer.strip()}"
    return f"Denied: the user did not approve this call.{reason}"
