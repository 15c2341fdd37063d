"""Approval rules (SPEC N2): per tool, ``allow``, ``ask`` or ``deny``, from ``[tools.approval]``.

A rule is either one word for the whole tool or a table of glob patterns matched, in the order written,
against the call's subject; the first pattern that matches decides, and a subject no pattern matches is
allowed. Tool names may be globs too (``mcp_*``); an exact name wins over a glob.

:func:`decide` is the one decision point; what a subject is depends on the tool:

- ``shell``: every simple command of the parsed line (:mod:`anyy.tools.shell_commands`) is matched on its
  own; a ``deny`` on any part denies the line, and it is allowed only when every part is (a line the parser
  cannot prove safe asks);
- the file tools: the path, made canonical relative to the working directory (symlinks resolved, no
  ``..``); a path outside it is the absolute path, which a relative pattern never matches. The file is
  decided again at write time (:func:`write_check`);
- ``run_script``: the script; Codemode can start any program, so unless ``shell`` is allowed outright a
  script asks (or is denied when shell is);
- ``web_fetch``: the URL; any other tool (MCP tools included): its arguments as JSON.
"""

from __future__ import annotations

import fnmatch
import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Literal

import msgspec

from anyy.tools.shell_commands import parse

Rule = Literal["allow", "ask", "deny"]
_STRICTNESS: dict[Rule, int] = {"allow": 0, "ask": 1, "deny": 2}
_SUBJECT_KEYS = {"shell": "command", "run_script": "script", "web_fetch": "url"}
PATH_TOOLS = frozenset({"read_file", "write_file", "edit_file", "list_dir"})
Table = tuple[tuple[str, Rule], ...]


class ApprovalRules(msgspec.Struct, frozen=True, kw_only=True):
    # tool name or glob -> ((subject pattern, rule), ...); a whole-tool rule is the pattern "*"
    tools: tuple[tuple[str, Table], ...] = ()

    @classmethod
    def from_config(cls, table: Mapping[str, str | Mapping[str, str]]) -> ApprovalRules:
        tools = []
        for tool, rule in table.items():
            patterns = rule.items() if isinstance(rule, Mapping) else [("*", rule)]
            tools.append((tool, tuple((pattern, _rule(value)) for pattern, value in patterns)))
        return cls(tools=tuple(tools))


class Part(msgspec.Struct, frozen=True):
    """One simple command of a shell line (or ``> FILE`` it writes) and the rule it got."""

    text: str
    rule: Rule
    pattern: str  # "" when no pattern matched (allowed)


class Decision(msgspec.Struct, frozen=True, kw_only=True):
    rule: Rule
    pattern: str  # the pattern that decided ("" when none matched; "*" for a whole-tool rule)
    subject: str  # what the patterns were matched against (the canonical path for the file tools)
    parts: tuple[Part, ...] = ()  # shell: each command of the parsed line
    doubts: tuple[str, ...] = ()  # shell: what the parser cannot prove safe (each makes the line ask)
    why: str = ""  # a reason beyond the patterns (run_script under the shell rule)
    given: str = ""  # the path as the call gave it, when its canonical form differs


def _rule(value: str) -> Rule:
    rule: Rule = msgspec.convert(value, Rule)
    return rule


def _table(rules: ApprovalRules, name: str) -> Table | None:
    exact = [table for tool, table in rules.tools if tool == name]
    if exact:
        return exact[0]
    return next((table for tool, table in rules.tools if fnmatch.fnmatchcase(name, tool)), None)


def _match(table: Table, text: str) -> tuple[Rule, str]:
    for pattern, rule in table:
        if fnmatch.fnmatchcase(text, pattern):
            return rule, pattern
    return "allow", ""


def canonical_path(workdir: Path, raw: str) -> str:
    """``raw`` relative to the working directory, symlinks resolved and ``..`` gone; a path that leads out of
    it is returned absolute (so that no relative pattern matches it)."""
    root = os.path.realpath(workdir)
    path = os.path.expanduser(raw) if raw.startswith("~") else raw
    full = os.path.realpath(os.path.join(root, path))
    if full == root:
        return "."
    if full.startswith(root.rstrip("/") + "/"):
        return os.path.relpath(full, root)
    return full


def subject(name: str, arguments: Mapping[str, Any], workdir: Path | None = None) -> str:
    """What a rule's patterns are matched against for this call (the path tools' path made canonical
    when the working directory is given)."""
    key = _SUBJECT_KEYS.get(name) or ("path" if name in PATH_TOOLS else "")
    if key:
        value = arguments.get(key, "." if key == "path" else "")
        if not isinstance(value, str):
            return json.dumps(value)
        if key == "path" and workdir is not None and value and "\x00" not in value:
            return canonical_path(workdir, value)
        return value
    return json.dumps(dict(arguments), sort_keys=True, ensure_ascii=False)


def grant_key(name: str, arguments: Mapping[str, Any], workdir: Path | None = None) -> str:
    """How a "for this session" approval is remembered: the tool and the exact (canonical) subject."""
    return f"{name}\n{subject(name, arguments, workdir)}"


def shell_floor(rules: ApprovalRules) -> Rule:
    """What the shell rule makes of "any program at all": allow only when shell is allowed outright."""
    table = _table(rules, "shell")
    if table is None or all(rule == "allow" for _, rule in table):
        return "allow"
    if table[0][0] == "*":
        return table[0][1]
    return "ask"


def decide(rules: ApprovalRules, name: str, arguments: Mapping[str, Any], *, workdir: Path | None = None) -> Decision:
    """The rule for this call, and what decided it."""
    what = subject(name, arguments, workdir)
    given = subject(name, arguments) if name in PATH_TOOLS else what
    table = _table(rules, name)
    if name == "shell" and table is not None:
        return _decide_shell(table, what)
    rule, pattern = _match(table, what) if table is not None else ("allow", "")
    if name == "run_script":
        floor = shell_floor(rules)
        if _STRICTNESS[floor] > _STRICTNESS[rule]:
            why = (
                "a script can start any program, and the shell rule is not a plain allow"
                if floor == "ask"
                else "a script can start any program, and the shell rule denies them"
            )
            return Decision(rule=floor, pattern="", subject=what, why=why)
    return Decision(rule=rule, pattern=pattern, subject=what, given=given if given != what else "")


def _decide_shell(table: Table, command: str) -> Decision:
    if all(rule == "allow" for _, rule in table):  # shell allowed outright: nothing to parse
        return Decision(rule="allow", pattern=table[0][0] if table[0][0] == "*" else "", subject=command)
    parsed = parse(command)
    parts = tuple(Part(text, *_match(table, text)) for text in parsed.commands)
    deciding = max(parts, key=lambda part: _STRICTNESS[part.rule], default=None)
    rule: Rule = deciding.rule if deciding is not None else "allow"
    if parsed.doubts and rule == "allow":
        rule = "ask"
    pattern = deciding.pattern if deciding is not None and deciding.rule == rule else ""
    return Decision(rule=rule, pattern=pattern, subject=command, parts=parts, doubts=parsed.doubts)


def write_check(
    rules: ApprovalRules, name: str, workdir: Path, approved: str | None
) -> Callable[[str], str | None] | None:
    """For a file tool, at write time: given the path it is about to write (as the descriptor walk resolved
    it, relative to the working directory), None when it may, else why not. A path other than ``approved``
    (the canonical path the approval was decided on) must be allowed by the rules outright: a symlink
    swapped in after the approval cannot lead the write elsewhere. None when no approval was decided."""
    if approved is None:
        return None

    def check(resolved: str) -> str | None:
        if resolved == approved:
            return None
        decision = decide(rules, name, {"path": resolved}, workdir=workdir)
        if decision.rule == "allow":
            return None
        return (
            f"the path now leads to {decision.subject!r}, not to {approved!r} as when the call was approved "
            f"(a symlink changed), and the approval rules {decision.rule} {name} there: nothing was written; "
            "call the tool again"
        )

    return check
