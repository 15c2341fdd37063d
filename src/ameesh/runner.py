"""The runner: plays the inbox, one turn at a time per agent and many agents at once (asyncio).

Every turn resumes the agent's harness session (H1); the session id lives in the registry and in the
agent's state file (H2). Session policies (H6) and rotation with a resume summary (H8) are applied between
turns, never during one. A rotation goes through four durable steps recorded in ``agents.rotation_state``:

    due         a rotation is decided (size, turn duration, lot change): (1) play the summary turn
    summarised  the summary is in the registry: (2) write it to the thread
    written     (3) close the old session, keeping it in the history
    closed      (4) the next turn opens a new session prefixed with the summary (then the state is cleared)

A crash between two steps resumes at the recorded one. A failed or empty summary changes nothing but the
thread (the agent keeps its session until the next try).

A runner that dies mid-turn loses nothing: the message stays in the inbox, a session id the harness
announced during the turn is already on record, and the harness process it left running is ended before
the agent's next turn resumes the same session (:mod:`ameesh.leftovers`).
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ameesh import canon, harnesses, leftovers, paths, worktrees
from ameesh.canon import Canon
from ameesh.harnesses import Harness, TurnRequest, TurnResult
from ameesh.registry import Registry

SUMMARY_PROMPT = (
    "Your session is about to be rotated. Write a self-contained resume summary for your successor: the state "
    "of the work, decisions taken, what is left, known defects, and anything you were asked to remember. "
    "Answer with the summary only."
)


def with_summary(summary: str, text: str) -> str:
    return f"Resume summary of your previous session:\n\n{summary.strip()}\n\n---\n\n{text}"


@dataclass
class RunReport:
    turns: int = 0
    failed: int = 0  # failed attempts (a message is tried again up to max_attempts)
    given_up: int = 0  # messages that failed for good
    blocked: list[str] = field(default_factory=list)  # agents that cannot go on (an alert says why)
    busy: list[str] = field(default_factory=list)  # agents played elsewhere (another runner, ameesh attach)


@contextlib.contextmanager
def lock_agent(root: Path, name: str) -> Iterator[bool]:
    """An exclusive lock on the agent (False when a runner or ``ameesh attach`` holds it). The descriptor
    is not inherited by the processes started meanwhile: the lock ends with its holder."""
    directory = paths.agent_dir(root, name)
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / "lock", "w", encoding="utf-8") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        yield True


class Runner:
    def __init__(
        self,
        registry: Registry,
        root: Path,
        harness_for: Callable[[str, Path], Harness] = harnesses.get,
    ) -> None:
        self.reg = registry
        self.canons: dict[str, Canon] = {}  # each agent's, read again at every turn
        self.root = root
        self.harness_for = harness_for
        self.report = RunReport()

    # -- the loop -------------------------------------------------------------------------------------

    async def run(self, *, watch: bool = False, poll: float = 1.0) -> RunReport:
        """Play until the inbox is empty (or forever with ``watch``)."""
        tasks: dict[str, asyncio.Task[None]] = {}
        blocked: set[str] = set()
        busy: set[str] = set()
        while True:
            for name in self.reg.waiting_agents():
                if name not in tasks and name not in blocked and (watch or name not in busy):
                    task = asyncio.create_task(self._agent_loop(name, blocked, busy), name=f"agent {name}")
                    tasks[name] = task
            if not tasks and not watch:
                break
            done, _ = await asyncio.wait(
                tasks.values() or [asyncio.create_task(asyncio.sleep(poll))],
                timeout=poll if watch else None,
                return_when=asyncio.FIRST_COMPLETED,
            )
            for name, task in list(tasks.items()):
                if task in done:
                    del tasks[name]
                    task.result()
        self.report.blocked = sorted(blocked)
        self.report.busy = sorted(busy - blocked)
        return self.report

    async def _agent_loop(self, name: str, blocked: set[str], busy: set[str]) -> None:
        with lock_agent(self.root, name) as locked:
            if not locked:
                busy.add(name)  # with --watch, tried again at the next look
                return
            busy.discard(name)
            while self.reg.waiting_count(name):
                if not await self.step(name):
                    blocked.add(name)
                    return

    # -- one turn -------------------------------------------------------------------------------------

    def current_session(self, agent: dict[str, Any]) -> tuple[str | None, str | None]:
        """The agent's session: the registry's first, the state file's second (H2)."""
        name = agent["name"]
        if agent["session_id"]:
            on_file = paths.read_session_file(self.root, name)
            if on_file != (agent["session_id"], agent["session_lot"]):
                paths.write_session_file(self.root, name, agent["session_id"], agent["session_lot"])
            return agent["session_id"], agent["session_lot"]
        if agent["rotation_state"] == "closed":
            return None, None
        sid, lot = paths.read_session_file(self.root, name)
        if sid:
            with self.reg.tx():
                self.reg.update_agent(name, session_id=sid, session_lot=lot)
                self.reg.open_session(name, sid, lot)
                self.reg.note(name, "recovered", f"session {sid} recovered from the state file", session_id=sid)
        return sid, lot

    async def step(self, name: str) -> bool:
        """Play the agent's next message; False when the agent cannot go on now (an alert says why)."""
        agent = self.reg.agent(name)
        message = self.reg.next_message(name)
        if message is None:
            return True
        left = leftovers.end_leftover(self.root, name)
        if left is not None:
            self.reg.note(
                name, "recovered", f"a turn left running by a stopped runner (process group {left}) was ended"
            )
        harness = self.harness_for(agent["harness"], paths.agent_dir(self.root, name))
        workdir = Path(agent["workdir"])
        if not workdir.is_dir():
            moved = worktrees.relocate(self.reg, agent, harness)  # H9: adopted, or an alert says why not
            if moved is None:
                return False
            agent, workdir = self.reg.agent(name), moved
        self.canons[name] = canon.for_agent(agent)  # read at every turn: a change applies at the next one
        settings = self.canons[name].effective(agent)
        if agent["rotation_state"] in {"due", "summarised", "written"}:
            await self.rotate(name, harness, settings)
            agent = self.reg.agent(name)
        sid, lot = self.current_session(agent)
        if sid and settings["session_policy"] == "par-lot" and message["lot"] and message["lot"] != lot:
            self.reg.update_agent(name, rotation_state="due", rotation_reason=f"lot {lot} → {message['lot']}")
            await self.rotate(name, harness, settings)
            agent = self.reg.agent(name)
            sid, lot = self.current_session(agent)

        prompt = message["text"]
        if agent["pending_summary"]:
            prompt = with_summary(agent["pending_summary"], prompt)
        if sid is None:
            new = True
            sid = harness.new_session_id()
            if sid:
                self._open(name, sid, message["lot"])
                lot = message["lot"]
        else:
            row = self.reg.session(name, sid)
            new = (row is None or row["turns"] == 0) and not harness.session_exists(sid, workdir)
            if row is None:
                self.reg.open_session(name, sid, lot)
        if message["attempts"] == 0:
            self.reg.note(name, "prompt", message["text"], session_id=sid, lot=message["lot"])

        request = TurnRequest(
            prompt=prompt,
            cwd=workdir,
            session_id=sid,
            new_session=new,
            model=settings["model"],
            effort=settings["effort"],
            timeout=self.canons[name].threshold("turn_timeout"),
        )
        opening_lot = lot if lot is not None else message["lot"]

        def announced(new_sid: str) -> None:  # saved at once: a runner dying now still resumes this session
            nonlocal sid
            self._replace(name, sid, new_sid, opening_lot)
            sid = new_sid

        result = await self._play(name, harness, request, on_session=announced)
        if result.session_id and result.session_id != sid:
            self._replace(name, sid, result.session_id, opening_lot)
            sid = result.session_id
        self._finish(name, message, sid, prompt, result)
        if result.ok and sid:
            await self._after_turn(name, harness, settings, sid, result)
        return True

    async def _play(
        self,
        name: str,
        harness: Harness,
        request: TurnRequest,
        on_session: Callable[[str], None] | None = None,
    ) -> TurnResult:
        """One turn, its process group on record while it runs (so that a leftover can be ended)."""
        try:
            return await harnesses.play(
                harness, request, on_start=lambda pid: leftovers.record(self.root, name, pid), on_session=on_session
            )
        finally:
            leftovers.clear(self.root, name)

    def _replace(self, name: str, old: str | None, new: str, lot: str | None) -> None:
        """The harness chose or changed the session id: the new one becomes the agent's session."""
        if old:
            with self.reg.tx():
                self.reg.close_session(name, old, "replaced by the harness")
                self.reg.note(name, "session", f"the harness answered with session {new}")
        self._open(name, new, lot)

    def _open(self, name: str, sid: str, lot: str | None) -> None:
        with self.reg.tx():
            self.reg.update_agent(name, session_id=sid, session_lot=lot)
            self.reg.open_session(name, sid, lot)
            self.reg.note(name, "session", f"session {sid} opened", session_id=sid, lot=lot)
        paths.write_session_file(self.root, name, sid, lot)

    def _record(
        self,
        name: str,
        result: TurnResult,
        *,
        sid: str | None,
        lot: str | None,
        kind: str,
        prompt: str,
        outcome: str | None = None,
    ) -> None:
        """One turn in the registry (inside the caller's transaction), as the harness played it."""
        self.reg.record_turn(
            name,
            session_id=sid,
            lot=lot,
            kind=kind,
            prompt=prompt,
            result=result.text if result.ok else None,
            usage=result.usage,
            context_tokens=result.context_tokens,
            duration=result.duration,
            outcome=outcome or result.outcome,
            error=result.error,
        )

    def _finish(self, name: str, message: dict[str, Any], sid: str | None, prompt: str, result: TurnResult) -> None:
        max_attempts = int(self.canons[name].threshold("max_attempts"))
        with self.reg.tx():
            self._record(name, result, sid=sid, lot=message["lot"], kind="turn", prompt=prompt)
            if result.ok:
                self.reg.conn.execute("UPDATE messages SET state = 'done' WHERE num = ?", (message["num"],))
                self.reg.note(name, "answer", result.text, session_id=sid, lot=message["lot"])
                self.reg.update_agent(name, pending_summary=None, rotation_state=None, rotation_reason=None)
                self.report.turns += 1
                return
            self.report.failed += 1
            attempts = message["attempts"] + 1
            state = "failed" if attempts >= max_attempts else "waiting"
            self.reg.conn.execute(
                "UPDATE messages SET attempts = ?, state = ? WHERE num = ?", (attempts, state, message["num"])
            )
            self.reg.note(name, "error", f"turn {result.outcome} (attempt {attempts}): {result.error}", session_id=sid)
        if state == "failed":
            self.report.given_up += 1
            self.reg.alert(
                name, "harness_failing", f"{attempts} failed attempts at message {message['num']}: {result.error}"
            )

    async def _after_turn(
        self, name: str, harness: Harness, settings: dict[str, Any], sid: str, result: TurnResult
    ) -> None:
        """Alerts on the context re-read (H7) and the rotation decision (H8), between turns."""
        tokens = result.context_tokens
        if tokens is not None and tokens > self.canons[name].threshold("alert_tokens"):
            self.reg.alert(name, "session_too_big", f"session {sid} re-reads {tokens} tokens per turn", session_id=sid)
        if settings["session_policy"] == "jamais":
            return
        row = self.reg.session(name, sid)
        if row is None or row["turns"] < self.canons[name].threshold("min_turns"):
            return
        reason = None
        if tokens is not None and tokens > self.canons[name].threshold("max_tokens"):
            reason = f"context {tokens} tokens > {self.canons[name].threshold('max_tokens'):g}"
        elif result.duration > self.canons[name].threshold("max_turn_seconds"):
            reason = f"turn lasted {result.duration:.0f} s > {self.canons[name].threshold('max_turn_seconds'):g} s"
        if reason:
            self.reg.update_agent(name, rotation_state="due", rotation_reason=reason)
            await self.rotate(name, harness, settings)

    # -- rotation (H8) --------------------------------------------------------------------------------

    async def rotate(self, name: str, harness: Harness, settings: dict[str, Any]) -> bool:
        """Carry the agent's rotation on from its recorded step; False if the summary failed."""
        agent = self.reg.agent(name)
        state, reason = agent["rotation_state"], agent["rotation_reason"] or "rotation"
        summary = agent["pending_summary"] or ""
        sid, _ = self.current_session(agent)
        if sid is None:
            self.reg.update_agent(name, rotation_state=None, rotation_reason=None)
            return False
        if state == "due":
            result = await self._play(
                name,
                harness,
                TurnRequest(
                    prompt=SUMMARY_PROMPT,
                    cwd=Path(agent["workdir"]),
                    session_id=sid,
                    new_session=False,
                    model=settings["model"],
                    effort=settings["effort"],
                    timeout=self.canons[name].threshold("turn_timeout"),
                ),
            )
            summary = result.text.strip() if result.ok else ""
            with self.reg.tx():
                outcome = result.outcome if summary or not result.ok else "empty"
                lot = agent["session_lot"]
                self._record(name, result, sid=sid, lot=lot, kind="summary", prompt=SUMMARY_PROMPT, outcome=outcome)
                if not summary:
                    why = result.error or "the summary was empty"
                    self.reg.update_agent(name, rotation_state=None, rotation_reason=None)
                    self.reg.note(
                        name,
                        "rotation",
                        f"rotation ({reason}) not done: {why}; session {sid} kept until the next try",
                        session_id=sid,
                    )
                    return False
                self.reg.update_agent(name, pending_summary=summary, rotation_state="summarised")
                self.reg.conn.execute(
                    "UPDATE sessions SET summary = ? WHERE agent = ? AND session_id = ?", (summary, name, sid)
                )
            state = "summarised"
        if state == "summarised":
            with self.reg.tx():
                self.reg.note(name, "summary", summary, session_id=sid)
                self.reg.update_agent(name, rotation_state="written")
            state = "written"
        if state == "written":
            with self.reg.tx():
                self.reg.close_session(name, sid, reason)
                self.reg.update_agent(name, session_id=None, session_lot=None, rotation_state="closed")
                self.reg.note(
                    name,
                    "rotation",
                    f"session {sid} closed ({reason}); the next turn opens a new session on its summary",
                    session_id=sid,
                )
            paths.write_session_file(self.root, name, None, None)
        return True


def restart(registry: Registry, root: Path, name: str, brief: str) -> str | None:
    """Close the agent's session at once; its next turn opens a new one on ``brief`` (H7). Returns the old id."""
    agent = registry.agent(name)
    old = agent["session_id"] or paths.read_session_file(root, name)[0]
    with registry.tx():
        if old:
            registry.close_session(name, old, "restart on a brief")
        registry.update_agent(
            name,
            session_id=None,
            session_lot=None,
            rotation_state="closed",
            rotation_reason=None,
            pending_summary=brief,
        )
        registry.note(name, "rotation", f"restart on a brief (session {old or 'none'} closed)", session_id=old)
    paths.write_session_file(root, name, None, None)
    return old
