"""N2, N7: the adversarial corpus (tests/security/shell_corpus.toml): every command line gets the decision
written beside it under the corpus's rules, through the approval gate the runtime calls before each tool call."""

from __future__ import annotations

import tomllib
from pathlib import Path

from anyy.tools.approval_rules import ApprovalRules
from anyy.tools.approvals import gate

CORPUS = Path(__file__).with_name("shell_corpus.toml")


def _corpus() -> tuple[ApprovalRules, list[tuple[str, str]]]:
    data = tomllib.loads(CORPUS.read_text(encoding="utf-8"))
    rules = ApprovalRules.from_config(data["rules"])
    return rules, [(line, decision) for decision, lines in data["cases"].items() for line in lines]


RULES, CASES = _corpus()


def test_n2_n7_the_corpus_has_at_least_200_lines_of_each_kind() -> None:
    decisions = [decision for _, decision in CASES]
    assert len(CASES) >= 200
    assert len({line for line, _ in CASES}) == len(CASES), "a line is listed twice"
    assert {decisions.count(d) >= 30 for d in ("allow", "ask", "deny")} == {True}


def test_n2_n7_shell_corpus() -> None:
    wrong = []
    for line, expected in CASES:
        verdict = gate(RULES, "shell", {"command": line})
        outcome = verdict.outcome
        if expected == "allow":
            right = outcome is None
        elif expected == "ask":
            right = outcome is not None and (outcome.suspend or "").startswith("Approval needed: shell ")
        else:
            right = outcome is not None and outcome.is_error and outcome.text.startswith("Denied: ")
        if verdict.decision.rule != expected or not right:
            wrong.append(f"{line!r}: {verdict.decision.rule}, not {expected} ({verdict.decision})")
    assert not wrong, "\n".join(wrong)


def test_n2_n7_a_line_the_parser_cannot_read_never_runs_unasked(tmp_path: Path) -> None:
    """Whatever the bytes, a line is allowed only when every command in it is: never on a parse failure.
    (``git status { touch M`` is git status with three arguments: a lone brace is a word.)"""
    rules = ApprovalRules.from_config({"shell": {"git status*": "allow", "*": "ask"}})
    for tail in ["'", '"', "$(", "`", "(", "<<EOF", "$((", "${", "\x00", "\udcff"]:
        line = f"git status {tail} touch M"
        assert gate(rules, "shell", {"command": line}, workdir=tmp_path).decision.rule == "ask", line
    # Nesting that would overflow a recursive walk, and a line too long to read on the event loop: asked.
    for line in [
        "git status; " + "(" * 3000 + "git status" + ")" * 3000,
        "git status $(" + "$(" * 3000 + "git status" + ")" * 3001,
        "git status " + "x" * 70_000,
    ]:
        decision = gate(rules, "shell", {"command": line}, workdir=tmp_path).decision
        assert decision.rule == "ask", decision.doubts
        assert all(len(doubt) <= 201 for doubt in decision.doubts)


def test_n2_an_exact_tool_name_wins_over_a_glob_whatever_the_order() -> None:
    rules = ApprovalRules.from_config(
        {"*": "deny", "mcp_*": "ask", "mcp_files_read": "allow", "shell": {"git status*": "allow", "*": "ask"}}
    )
    assert gate(rules, "mcp_files_read", {"path": "x"}).outcome is None
    assert gate(rules, "mcp_files_write", {"path": "x"}).decision.rule == "deny"  # the first glob written: "*"
    assert gate(rules, "shell", {"command": "git status"}).outcome is None
    assert gate(rules, "shell", {"command": "git status; touch M"}).decision.rule == "ask"
    assert gate(rules, "web_fetch", {"url": "https://example.com"}).decision.rule == "deny"
