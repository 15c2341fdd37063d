"""Checks and reviews come back to their owner (H16).

A lot is owned by the build agent whose turn first played it (``ameesh lots``). Its states::

    working     the owner works on it
    checking    the owner ran ``ameesh done``: the canon's ``[lots] checks`` run in the lot's worktree
                after the turn (each with ``check_timeout``, killed past it)
    in review   the checks passed; each of ``[lots] reviewers`` got a message on the lot asking for a verdict
    ready       the checks passed and every reviewer approved this round: ``ameesh merge LOT`` merges it
    merged      merged into its base branch (its worktree removed, unless a refusal kept it)
    stopped     ``max_rounds`` rounds failed: alert ``lot_rounds``, nothing more is sent

A failing check (its output's end, capped at ``output_cap`` characters) or a reviewer's findings go back to
the owner as a message on the lot, so they land in the lot's session; each ``ameesh done`` starts a round.

Who speaks: the runner gives each turn on a lot a fresh random key (``AMEESH_TURN``, with
``AMEESH_AGENT`` and ``AMEESH_LOT``) in the harness's environment, and keeps only a hash of the lot and the
key. ``ameesh done`` and ``ameesh review`` act for the agent whose turn holds that key, on that turn's lot —
never for a name the caller claims. Only the owner can say its lot is done (which only asks for the checks:
ameesh runs them); only a review agent named in the canon, not the owner, gives a verdict; ``ameesh merge``
is refused to a turn (a key in its environment) and to a lot that is not ready.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import secrets
from dataclasses import dataclass

from ameesh.canon import Lots
from ameesh.registry import Registry, RegistryError
from ameesh.rows import Agent, Lot

STATES = ("working", "checking", "in review", "ready", "merged", "stopped")
TURN_ENV = ("AMEESH_AGENT", "AMEESH_LOT", "AMEESH_TURN")


def key_hash(lot: str, key: str) -> str:
    return hashlib.sha256(f"{lot}\n{key}".encode()).hexdigest()


def new_turn(reg: Registry, agent: str, lot: str) -> dict[str, str]:
    """A fresh key for the agent's turn on ``lot``: its hash recorded, the environment of the harness."""
    key = secrets.token_urlsafe(24)
    reg.update_agent(agent, turn_key=key_hash(lot, key))
    return {"AMEESH_AGENT": agent, "AMEESH_LOT": lot, "AMEESH_TURN": key}


def end_turn(reg: Registry, agent: str) -> None:
    reg.update_agent(agent, turn_key=None)


def caller(reg: Registry, environ: dict[str, str] | None = None) -> tuple[Agent, Lot]:
    """The agent and lot of the turn running this command (its key), or a refusal saying why."""
    env = os.environ if environ is None else environ
    key, lot_name = env.get("AMEESH_TURN", ""), env.get("AMEESH_LOT", "")
    if not key or not lot_name:
        raise RegistryError(
            "this command is run by an agent from its own turn on a lot (the runner sets AMEESH_TURN and"
            " AMEESH_LOT for the harness): send the agent a message with --lot"
        )
    agent = reg.agent_by_turn_key(key_hash(lot_name, key))
    if agent is None:
        raise RegistryError("this turn's key is not known (the turn is over, or the key is not this lot's)")
    lot = reg.find_lot(lot_name)
    if lot is None:
        raise RegistryError(f"lot {lot_name} has no owner yet (a build agent's turn on it makes it)")
    return agent, lot


def done(reg: Registry, agent: Agent, lot: Lot) -> str:
    """The owner says its lot is done: the checks run after this turn."""
    if agent.name != lot.owner:
        raise RegistryError(f"lot {lot.name} is {lot.owner}'s: only its build agent says it is done")
    if lot.state == "checking":
        return f"lot {lot.name}: already waiting for its checks"
    if lot.state != "working":
        raise RegistryError(f"lot {lot.name} is {lot.state}: ameesh done is for a lot being worked on")
    with reg.tx():
        reg.update_lot(lot.name, state="checking", rounds=lot.rounds + 1)
        reg.note(agent.name, "lot", f"lot {lot.name}: done (round {lot.rounds + 1}); its checks run next", lot=lot.name)
    return f"lot {lot.name}: its checks run when this turn ends (round {lot.rounds + 1})"


def verdict(reg: Registry, agent: Agent, lot: Lot, config: Lots, *, approve: bool, findings: str) -> str:
    """A reviewer's verdict: findings go back to the owner on the lot; the last approval makes it ready."""
    if agent.role != "review" or agent.name not in config.reviewers:
        raise RegistryError(f"{agent.name} is not one of the lot's reviewers ([lots] reviewers in the canon)")
    if agent.name == lot.owner:
        raise RegistryError(f"{agent.name} owns lot {lot.name}: an agent never reviews its own lot")
    if lot.state != "in review":
        raise RegistryError(f"lot {lot.name} is {lot.state}, not in review: no verdict is asked now")
    if not approve and not findings.strip():
        raise RegistryError("--changes needs the findings (an argument, or on stdin)")
    with reg.tx():
        reg.add_review(lot.name, agent.name, lot.rounds, "approve" if approve else "changes", findings or None)
        reg.resolve_alerts(agent.name, "lot_review", why="a verdict was given")
        if not approve:
            said = send_back(reg, lot, config, f"Review of lot {lot.name} by {agent.name} (round {lot.rounds}):"
                             f" changes asked.\n\n{findings.strip()}")  # fmt: skip
            return f"lot {lot.name}: your findings {said}"
        approved = {r.reviewer for r in reg.reviews(lot.name, lot.rounds) if r.verdict == "approve"}
        if set(config.reviewers) <= approved:
            reg.update_lot(lot.name, state="ready")
            reg.note(lot.owner, "lot", f"lot {lot.name}: approved by {', '.join(sorted(approved))}: ready to merge",
                     lot=lot.name)  # fmt: skip
            return f"lot {lot.name}: approved; ready to merge (ameesh merge {lot.name})"
    return f"lot {lot.name}: approved by {agent.name}; waiting for the other reviewers"


def send_back(reg: Registry, lot: Lot, config: Lots, text: str) -> str:
    """Return the lot to its owner as a message on the lot, or stop it after ``max_rounds`` (an alert)."""
    if lot.rounds >= config.max_rounds:
        reg.update_lot(lot.name, state="stopped")
        reg.alert(
            lot.owner,
            "lot_rounds",
            f"lot {lot.name} stopped after {lot.rounds} round(s) of checks and reviews (max_rounds ="
            f" {config.max_rounds}); the last: {text.splitlines()[0]}",
        )
        return f"stop the lot: round {lot.rounds} of {config.max_rounds} (alert lot_rounds)"
    reg.update_lot(lot.name, state="working")
    reg.send(lot.owner, text + "\n\nFix this on the lot, commit, then run `ameesh done` again.", lot.name)
    return f"went back to {lot.owner} on lot {lot.name}"


@dataclass
class CheckResult:
    command: str
    ok: bool
    output: str
    why: str  # "exit 0", "exit 1", "killed after 600 s", "cannot start: …"


async def run_checks(commands: list[str], cwd: str, timeout: float) -> list[CheckResult]:
    """Each check with ``sh -c`` in ``cwd``, in a process group of its own (killed whole past ``timeout``);
    they stop at the first that fails. The turn's key is not in their environment."""
    from ameesh.harnesses import kill_group
    from commons.processes import spawn_group

    env = {k: v for k, v in os.environ.items() if k not in TURN_ENV}
    results: list[CheckResult] = []
    for command in commands:
        try:
            proc = await spawn_group(["sh", "-c", command], cwd=cwd, env=env)  # type: ignore[arg-type]
        except OSError as exc:
            results.append(CheckResult(command, False, "", f"cannot start: {exc}"))
            break
        try:
            out, err = await asyncio.wait_for(proc.communicate(), timeout)
        except TimeoutError:
            kill_group(proc.pid)
            out, err = await proc.communicate()
            results.append(CheckResult(command, False, _text(out, err), f"killed after {timeout:g} s"))
            break
        ok = proc.returncode == 0
        results.append(CheckResult(command, ok, _text(out, err), f"exit {proc.returncode}"))
        if not ok:
            break
    return results


def _text(out: bytes, err: bytes) -> str:
    return (out + err).decode("utf-8", "replace")


def capped(output: str, cap: int) -> str:
    """The end of a check's output (where the failure is said), at most ``cap`` characters."""
    if len(output) <= cap:
        return output
    return f"[… {len(output) - cap} characters cut …]\n" + output[-cap:]


def after_checks(reg: Registry, lot: Lot, config: Lots, results: list[CheckResult]) -> str:
    """Route the checks' outcome: back to the owner, or on to the reviewers, or ready."""
    failed = next((r for r in results if not r.ok), None)
    with reg.tx():
        if failed is not None:
            text = (
                f"Check failed on lot {lot.name} (round {lot.rounds} of {config.max_rounds}): `{failed.command}`"
                f" ({failed.why}). Its output:\n\n{capped(failed.output, config.output_cap)}"
            )
            reg.note(lot.owner, "check", f"`{failed.command}` failed ({failed.why})", lot=lot.name)
            return send_back(reg, lot, config, text)
        reg.note(lot.owner, "check", f"{len(results)} check(s) passed (round {lot.rounds})", lot=lot.name)
        if not config.reviewers:
            reg.update_lot(lot.name, state="ready")
            return "ready to merge"
        reg.update_lot(lot.name, state="in review")
        for name in config.reviewers:
            found = reg.find_agent(name)
            if found is None or found.role != "review" or name == lot.owner:
                why = f"lot {lot.name}: reviewer {name} is not a registered review agent other than its owner"
                reg.alert(lot.owner, "lot_review", why + " (ameesh add NAME --role review)", refresh=True)
                continue
            reg.send(name, review_request(lot), lot.name)
        return f"in review by {', '.join(config.reviewers)}"


def review_request(lot: Lot) -> str:
    base = lot.base or "its base"
    return (
        f"Review lot {lot.name} (round {lot.rounds}), built by {lot.owner}: its worktree is {lot.worktree}"
        f" (compare with `git diff {base}...HEAD` there); its checks passed. Give your verdict from this"
        ' session: `ameesh review --approve`, or `ameesh review --changes "what to fix, where"` (the'
        " findings go to the build agent on this lot)."
    )
