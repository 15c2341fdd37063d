"""Rotation (H8) and restarts (H7): how an agent's session ends and what the next one opens on.

A rotation goes through four durable steps recorded in ``agents.rotation_state`` (see :mod:`ameesh.runner`):
the summary turn in the old session, the summary in the thread, the old session closed, the next turn
opening a new one on the summary. These functions take the runner that plays the agent (its registry, its
way of playing a turn), as the :class:`Player` protocol says: :class:`ameesh.runner.Runner` is one, and this
module does not import it (the runner imports this one).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ameesh import paths
from ameesh.harnesses import Harness, TurnRequest, TurnResult
from ameesh.registry import Registry

if TYPE_CHECKING:  # types only: the commands that load this module need neither at run time
    from ameesh.canon import Canon
    from ameesh.rows import Agent


class Player(Protocol):
    """What a rotation needs of the runner that plays the agent."""

    reg: Registry
    root: Path
    canons: dict[str, Canon]
    harness_for: Callable[[str, Path], Harness]

    def current_session(self, agent: Agent) -> tuple[str | None, str | None]: ...

    def settings_for(self, agent: Agent) -> dict[str, Any]: ...

    async def play_turn(
        self,
        name: str,
        harness: Harness,
        request: TurnRequest,
        on_session: Callable[[str], None] | None = None,
        label: str = "summary",
    ) -> TurnResult: ...

    def record(
        self,
        name: str,
        result: TurnResult,
        *,
        sid: str | None,
        lot: str | None,
        kind: str,
        prompt: str,
        outcome: str | None = None,
    ) -> None: ...

    async def rotate(
        self, name: str, harness: Harness, settings: dict[str, Any], *, must_close: bool = False
    ) -> bool: ...


SUMMARY_PROMPT = (
    "Your session is about to be rotated. Write a self-contained resume summary for your successor: the state "
    "of the work, decisions taken, what is left, known defects, and anything you were asked to remember. "
    "Answer with the summary only."
)


OPENING_LABELS = {
    "summary": "Resume summary of your previous session:",
    "brief": "Brief for this session (from the person who restarted it):",
}


def with_opening(kind: str | None, opening: str, text: str) -> str:
    """The first prompt of a new session: its summary or brief, labelled as what it is, then the message."""
    label = OPENING_LABELS.get(kind or "summary", OPENING_LABELS["summary"])
    return f"{label}\n\n{opening.strip()}\n\n---\n\n{text}"


def with_summary(summary: str, text: str) -> str:
    return with_opening("summary", summary, text)


async def rotate(
    runner: Player, name: str, harness: Harness, settings: dict[str, Any], *, must_close: bool = False
) -> bool:
    """Carry the agent's rotation on from its recorded step; False if the summary failed.

    ``must_close`` (a lot change, a new profile): the old session is closed even when its summary
    fails, and the next one opens on the message alone, with a ``summary_failed`` alert."""
    agent = runner.reg.agent(name)
    state, reason = agent.rotation_state, agent.rotation_reason or "rotation"
    summary = agent.pending_summary or ""
    sid, _ = runner.current_session(agent)
    if sid is None:
        runner.reg.update_agent(name, rotation_state=None, rotation_reason=None)
        return False
    if state == "due":
        summary = await summarise(runner, name, harness, settings, sid, must_close=must_close) or ""
        if not summary:
            return False
        state = "summarised"
    if state == "summarised":
        with runner.reg.tx():
            runner.reg.note(name, "summary", summary, session_id=sid)
            runner.reg.update_agent(name, rotation_state="written")
        state = "written"
    if state == "written":
        with runner.reg.tx():
            close(runner, name, sid, reason, opening=summary)
        paths.write_session_file(runner.root, name, None, None)
    return True


async def summarise(
    runner: Player, name: str, harness: Harness, settings: dict[str, Any], sid: str, *, must_close: bool
) -> str | None:
    """(1) the summary turn, played in the old session (under the model it was opened with, when its ids
    belong to one); the summary, or None when it failed or was empty: then the session is kept (and the
    summary prompt rewound out of it), or with ``must_close`` closed anyway, with an alert."""
    agent = runner.reg.agent(name)
    reason = agent.rotation_reason or "rotation"
    row = runner.reg.session(name, sid)
    model = settings["model"]
    if getattr(harness, "sessions_follow_model", False) and row is not None and row.model:
        model = row.model
    request = TurnRequest(
        prompt=SUMMARY_PROMPT,
        cwd=Path(agent.workdir),
        session_id=sid,
        new_session=False,
        model=model,
        effort=settings["effort"],
        timeout=runner.canons[name].threshold("turn_timeout"),
    )
    result = await runner.play_turn(name, harness, request)
    summary = result.text.strip() if result.ok else ""
    why = result.error or "the summary was empty"
    with runner.reg.tx():
        outcome = result.outcome if summary or not result.ok else "empty"
        runner.record(
            name, result, sid=sid, lot=agent.session_lot, kind="summary", prompt=SUMMARY_PROMPT, outcome=outcome
        )
        if summary:
            runner.reg.update_agent(name, pending_summary=summary, pending_kind="summary", rotation_state="summarised")
            runner.reg.set_summary(name, sid, summary)
            return summary
        if must_close:
            close(runner, name, sid, f"{reason}; summary failed", opening=None)
        else:
            undo = harness.prepare_retry(sid, Path(agent.workdir), SUMMARY_PROMPT)  # not left in the session
            point = undo.point if undo.kind == "rewind" else None
            runner.reg.update_agent(name, rotation_state=None, rotation_reason=None, rewind_to=point)
            runner.reg.note(
                name, "rotation", f"rotation ({reason}) not done: {why}; session {sid} kept until the next try",
                session_id=sid,
            )  # fmt: skip
    if must_close:
        paths.write_session_file(runner.root, name, None, None)
        message = f"the summary of session {sid} failed ({why}); {reason}: the new session opens on its message alone"
        runner.reg.alert(name, "summary_failed", message, session_id=sid)
    return None


def close(runner: Player, name: str, sid: str, reason: str, *, opening: str | None) -> None:
    """(3) close the session, keeping it in the history; the next turn opens one (on ``opening``)."""
    runner.reg.close_session(name, sid, reason)
    values: dict[str, Any] = {"session_id": None, "session_lot": None, "rotation_state": "closed"}
    if opening is None:
        values |= {"pending_summary": None, "pending_kind": None}
    runner.reg.update_agent(name, **values)
    then = "on its summary" if opening else "on its first message alone"
    runner.reg.note(
        name,
        "rotation",
        f"session {sid} closed ({reason}); the next turn opens a new session {then}",
        session_id=sid,
    )


def restart(
    registry: Registry, root: Path, name: str, brief: str | None = None, *, reason: str | None = None
) -> str | None:
    """Close the agent's session at once (H7); its next turn opens a new one on ``brief``, or on its
    message alone without one. Returns the old id. ``reason``: why, when it is not a restart (a merged lot)."""
    agent = registry.agent(name)
    old = agent.session_id
    if old is None and paths.owned_by(root, name, agent.uid):
        old = paths.read_session_file(root, name)[0]
    with registry.tx():
        if old:
            registry.close_session(name, old, reason or ("restart on a brief" if brief else "restart"))
        registry.update_agent(
            name,
            session_id=None,
            session_lot=None,
            rotation_state="closed",
            rotation_reason=None,
            pending_summary=brief,
            pending_kind="brief" if brief else None,
        )
        said = "on a brief" if brief else "on the next message alone"
        said = f"{reason}: the next turn opens a new session" if reason else f"restart {said}"
        registry.note(name, "rotation", f"{said} (session {old or 'none'} closed)", session_id=old)
    paths.write_session_file(root, name, None, None)
    return old


async def restart_with_summary(runner: Player, name: str) -> tuple[str | None, bool]:
    """Rotate the agent's session now with a resume summary (H8's steps, played at once); the old id and
    whether the summary was written (a failed one keeps the session)."""
    reg = runner.reg
    agent = reg.agent(name)
    sid, _ = runner.current_session(agent)
    if sid is None:
        return None, False
    harness = runner.harness_for(agent.harness, paths.agent_dir(runner.root, name))
    settings = runner.settings_for(agent)
    reg.update_agent(name, rotation_state="due", rotation_reason="restart with a summary")
    return sid, await runner.rotate(name, harness, settings)
