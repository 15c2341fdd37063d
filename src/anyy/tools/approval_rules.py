"""Approval rules (SPEC N2): per tool, ``allow``, ``ask`` or ``deny``, from ``[tools.approval]``.

A rule is either one word for the whole tool or a table of glob patterns matched, in the order written,
against the call's subject: the command for ``shell``, the path for the file tools, the URL for
``web_fetch``, the script for ``run_script``, the arguments as JSON for other tools (MCP tools included).
A subject no pattern matches is allowed. Tool names may be globs too (``mcp_*``); an exact name wins.

``ask`` suspends the execution on an approval request (recorded like a clarification, so it survives a
restart), answered with ``once``, ``session`` (this subject, for the rest of the session) or ``deny``.
"""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Mapping
from typing import Any, Literal

import msgspec

Rule = Literal["allow", "ask", "deny"]
_SUBJECT_KEYS = {"shell": "command", "run_script": "script", "web_fetch": "url"}
_PATH_TOOLS = frozenset({"read_file", "write_file", "edit_file", "list_dir"})


class ApprovalRules(msgspec.Struct, frozen=True, kw_only=True):
    # tool name or glob -> ((subject pattern, rule), ...); a whole-tool rule is the pattern "*"
    tools: tuple[tuple[str, tuple[tuple[str, Rule], ...]], ...] = ()

    @classmethod
    def from_config(cls, table: Mapping[str, str | Mapping[str, str]]) -> ApprovalRules:
        tools = []
        for tool, rule in table.items():
            patterns = rule.items() if isinstance(rule, Mapping) else [("*", rule)]
            tools.append((tool, tuple((pattern, _rule(value)) for pattern, value in patterns)))
        return cls(tools=tuple(tools))


def _rule(value: str) -> Rule:
    rule: Rule = msgspec.convert(value, Rule)
    return rule


def subject(name: str, arguments: Mapping[str, Any]) -> str:
    """What a rule's patterns are matched against for this call."""
    key = _SUBJECT_KEYS.get(name) or ("path" if name in _PATH_TOOLS else "")
    if key:
        value = arguments.get(key, "." if key == "path" else "")
        return value if isinstance(value, str) else json.dumps(value)
    return json.dumps(dict(arguments), sort_keys=True, ensure_ascii=False)


def grant_key(name: str, arguments: Mapping[str, Any]) -> str:
    """How a "for this session" approval is remembered: the tool and the exact subject."""
    return f"{name}\n{subject(name, arguments)}"


def rule_for(rules: ApprovalRules, name: str, arguments: Mapping[str, Any]) -> tuple[Rule, str]:
    """The rule for this call and the pattern that decided it (``""``: no rule applies)."""
    tables = [table for tool, table in rules.tools if tool == name] or [
        table for tool, table in rules.tools if fnmatch.fnmatchcase(name, tool)
    ]
    if not tables:
        return "allow", ""
    what = subject(name, arguments)
    for pattern, rule in tables[0]:
        if fnmatch.fnmatchcase(what, pattern):
            return rule, pattern
    return "allow", ""
