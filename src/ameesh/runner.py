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

A failed summary at a lot change never sends the new lot into the old session: the old one is closed
anyway and the new lot opens a session on its message alone, with a ``summary_failed`` alert.

A runner that dies mid-turn loses nothing: the message stays in the inbox, a session id the harness
announced during the turn is already on record, and the harness process it left running is ended before
the agent's next turn resumes the same session (:mod:`ameesh.leftovers`).

Outages (H13): each failed attempt makes the agent wait (``backoff_base`` doubled per failure in a row, up
to ``backoff_max``) before its next attempt at any message; after ``circuit_after`` failures in a row the
circuit opens (alert ``circuit_open`` naming the cause and the waiting messages) and the agent is left
alone until ``ameesh retry`` (or, with ``--watch``, one trial after ``backoff_max``). Before a message is
played again after an attempt that may have left its prompt in the harness's session, the harness says how
to avoid a second copy (:class:`ameesh.harnesses.Retry`). Time and waits come from ``clock`` and ``sleep``
(tests inject them).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import fcntl
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ameesh import alerts, canon, harnesses, leftovers, paths, review, rotation, worktrees
from ameesh.canon import Canon
from ameesh.harnesses import Harness, Retry, TurnRequest, TurnResult
from ameesh.registry import Registry
from ameesh.rotation import OPENING_LABELS, SUMMARY_PROMPT, restart, restart_with_summary, with_opening
from ameesh.rows import Agent, Alert, Message

__all__ = ["OPENING_LABELS", "SUMMARY_PROMPT", "RunReport", "Runner", "lock_agent", "restart", "restart_with_summary"]


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


Progress = Callable[[str], None]


class Runner:
    def __init__(
        self,
        registry: Registry,
        root: Path,
        harness_for: Callable[[str, Path], Harness] = harnesses.get,
        *,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        progress: Progress | None = None,
        progress_every: float = 30.0,
    ) -> None:
        self.reg = registry
        self.canons: dict[str, Canon] = {}  # each agent's, read again at every turn
        self.root = root
        self.harness_for = harness_for
        self.clock = clock
        self.sleep = sleep
        self.progress = progress
        self.progress_every = progress_every
        self.report = RunReport()
        self.failed_here: set[str] = set()  # agents with a failed attempt in this run (their backoff applies)
        self.pushes = alerts.Pushes()
        self.notifications = alerts.Notifications()
        registry.on_alert = self._push

    def _push(self, alert: Alert) -> None:
        """A new alert goes to the canon's ``[alerts] command``, if it has one (H14), and to the notification
        services its kind routes to (H17)."""
        agent = self.reg.find_agent(alert.agent)
        config = (self.canons.get(alert.agent) or canon.for_agent(agent)).alerts if agent else None
        if config is not None and config.command:
            self.pushes.push(alert, config.command, config.timeout, log=self.reg.note)
        if config is not None:  # H17: notification services through apprise
            self.notifications.notify(alert, config.urls_for(alert.kind), quiet=config.is_quiet(), log=self.reg.note)

    def _say(self, line: str) -> None:
        if self.progress is not None:
            self.progress(line)

    # -- the loop -------------------------------------------------------------------------------------

    async def run(self, *, watch: bool = False, poll: float = 1.0) -> RunReport:
        """Play until the inbox is empty (or forever with ``watch``)."""
        tasks: dict[str, asyncio.Task[None]] = {}
        blocked: set[str] = set()
        busy: set[str] = set()
        try:
            while True:
                for name in self.reg.waiting_agents():
                    if name not in tasks and name not in blocked and (watch or name not in busy):
                        task = asyncio.create_task(self._agent_loop(name, blocked, busy, watch), name=f"agent {name}")
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
                if watch:
                    blocked -= {n for n in blocked if self._may_try(n)}
        finally:
            await self.pushes.drain()
            await self.notifications.drain(self.reg.note)
        self.report.blocked = sorted(blocked)
        self.report.busy = sorted(busy - blocked)
        return self.report

    def _may_try(self, name: str) -> bool:
        """With --watch, whether a blocked agent is tried again: an open circuit once its wait is over (one
        trial), a closed one (ameesh retry) at once, a missing directory once it is back."""
        agent = self.reg.find_agent(name)
        if agent is None:
            return False
        if agent.circuit_open:
            return (agent.retry_at or 0) <= self.clock()
        return Path(agent.workdir).is_dir() and (agent.retry_at or 0) <= self.clock()

    async def _agent_loop(self, name: str, blocked: set[str], busy: set[str], watch: bool = False) -> None:
        with lock_agent(self.root, name) as locked:
            if not locked:
                busy.add(name)  # with --watch, tried again at the next look
                return
            busy.discard(name)
            while self.reg.waiting_count(name):
                agent = self.reg.agent(name)
                if agent.circuit_open and not (watch and self._may_try(name)):
                    blocked.add(name)
                    return
                # backoff between this runner's attempts; a new ``ameesh run`` (a person's decision, maybe
                # after fixing the cause) does not wait out the backoff of an earlier run
                wait = (agent.retry_at or 0) - self.clock() if name in self.failed_here else 0.0
                if wait > 0:  # backoff: the agent's last attempt failed
                    self._say(f"{name}: waiting {wait:.0f} s before the next attempt (backoff)")
                    await self.sleep(wait)
                if not await self.step(name):
                    blocked.add(name)
                    return

    # -- one turn -------------------------------------------------------------------------------------

    def current_session(self, agent: Agent) -> tuple[str | None, str | None]:
        """The agent's session: the registry's first, the state file's second (H2) — the file only when
        the state directory is this agent's (a removed agent's leftover is never resumed)."""
        name = agent.name
        if agent.session_id:
            on_file = paths.read_session_file(self.root, name)
            if on_file != (agent.session_id, agent.session_lot):
                paths.write_session_file(self.root, name, agent.session_id, agent.session_lot)
            return agent.session_id, agent.session_lot
        if agent.rotation_state == "closed" or not paths.owned_by(self.root, name, agent.uid):
            return None, None
        sid, lot = paths.read_session_file(self.root, name)
        if sid:
            with self.reg.tx():
                self.reg.update_agent(name, session_id=sid, session_lot=lot)
                self.reg.open_session(name, sid, lot)
                self.reg.note(name, "recovered", f"session {sid} recovered from the state file", session_id=sid)
        return sid, lot

    def settings_for(self, agent: Agent) -> dict[str, Any]:
        """The settings of the agent's next turn: the canon read again, its caps applied as they are now
        (H10, H12); a setting lowered by a cap is said once in the thread."""
        cfg = self.canons[agent.name] = canon.for_agent(agent)
        settings, lowered = cfg.clamp(agent.role, cfg.effective(agent))
        if lowered:
            said = f"capped by {cfg.path or 'the canon'}: {', '.join(lowered)}"
            last = self.reg.last_note(agent.name, "caps")
            if last is None or last.text != said:
                self.reg.note(agent.name, "caps", said)
        return settings

    async def step(self, name: str) -> bool:
        """Play the agent's next message; False when the agent cannot go on now (an alert says why)."""
        message = self.reg.next_message(name)
        if message is None:
            return True
        ready = await self._ready(name, message)
        if ready is None:
            return False
        harness, workdir, settings = ready
        request, retry = self._request(name, harness, workdir, settings, message)
        if message.lot:  # H16: the lot's owner on record; a key that says who runs ameesh done / review
            self._own_lot(name, workdir, message.lot)
            request = dataclasses.replace(request, env=review.new_turn(self.reg, name, message.lot))
        sid = request.session_id
        opening_lot = self.reg.agent(name).session_lot or message.lot

        def announced(new_sid: str) -> None:  # saved at once: a runner dying now still resumes this session
            nonlocal sid
            self._replace(name, sid, new_sid, opening_lot, settings["model"])
            sid = new_sid

        self.reg.message_started(message.num)
        self._say(f"{name}: message {message.num} (attempt {message.attempts + 1}) playing on {harness.name}…")
        try:
            result = await self.play_turn(name, harness, request, on_session=announced, label=f"message {message.num}")
        finally:
            if message.lot:
                review.end_turn(self.reg, name)
        if result.session_id and result.session_id != sid:
            self._replace(name, sid, result.session_id, opening_lot, settings["model"])
            sid = result.session_id
        if result.deterministic:  # a set-up error, no outage: no backoff, no attempt counted; a person fixes it
            self._broken(name, message, sid, request.prompt, result)
            return False
        self._finish(name, message, sid, request.prompt, result)
        for note in result.notes:  # what the harness could not apply, said once (never a change that did not happen)
            said = f"{harness.name}: {note}"
            last = self.reg.last_note(name, "unsupported")
            if last is None or last.text != said:
                self.reg.note(name, "unsupported", said, session_id=sid)
        if result.ok and sid:
            await self._after_turn(name, harness, settings, sid, result)
        elif not result.ok and sid and retry.kind != "continue":
            self._undo_attempt(name, harness, sid, workdir, message)  # whatever is played next, not after it
        if message.lot:
            await self._lot_checks(name, message.lot)
        return True

    # -- lots: checks and reviews (H16) ---------------------------------------------------------------

    def _own_lot(self, name: str, workdir: Path, lot: str) -> None:
        """A build agent's first turn on a lot makes it the lot's owner (its checks and reviews come back
        to it); the lot is played and checked in ``workdir``."""
        if self.reg.agent(name).role != "build" or self.reg.find_lot(lot) is not None:
            return
        from ameesh import lots

        try:
            repository: str | None = str(lots.repository_of(workdir))
        except lots.LotError:
            repository = None
        base = self.canons[name].lots.base
        with self.reg.tx():
            self.reg.add_lot(lot, owner=name, worktree=str(workdir), repository=repository, base=base)
            self.reg.note(name, "lot", f"lot {lot}: {name} builds it in {workdir}", lot=lot)

    async def _lot_checks(self, name: str, lot_name: str) -> None:
        """After the owner's turn in which it ran ``ameesh done``: the lot's checks, and where they lead."""
        lot = self.reg.find_lot(lot_name)
        if lot is not None and lot.state == "in review" and name in self.canons[name].lots.reviewers:
            if not any(r.reviewer == name for r in self.reg.reviews(lot_name, lot.rounds)):
                why = f"lot {lot_name}: {name}'s turn ended without a verdict (ameesh review --approve | --changes)"
                self.reg.alert(name, "lot_review", why + f"; send it a message on the lot, or see ameesh thread {name}")
            return
        if lot is None or lot.owner != name or lot.state != "checking":
            return
        config = self.canons[name].lots
        self._say(f"{name}: lot {lot_name}: {len(config.checks)} check(s) running (round {lot.rounds})…")
        results = await review.run_checks(config.checks, lot.worktree, config.check_timeout)
        said = review.after_checks(self.reg, self.reg.lot(lot_name), config, results)
        self._say(f"{name}: lot {lot_name}: {said}")

    async def _ready(self, name: str, message: Message) -> tuple[Harness, Path, dict[str, Any]] | None:
        """Before a turn: a leftover turn ended, the working directory found (H9), the canon read with its
        caps (H10, H12), a pending or due rotation carried out (H6, H8). None: the agent is blocked."""
        agent = self.reg.agent(name)
        left = leftovers.end_leftover(self.root, name)
        if left is not None:
            self.reg.note(
                name, "recovered", f"a turn left running by a stopped runner (process group {left}) was ended"
            )
        harness = self.harness_for(agent.harness, paths.agent_dir(self.root, name))
        workdir = Path(agent.workdir)
        if not workdir.is_dir():
            moved = worktrees.relocate(self.reg, agent, harness)  # H9: adopted, or an alert says why not
            if moved is None:
                return None
            agent, workdir = self.reg.agent(name), moved
        else:
            self.reg.resolve_alerts(name, "workdir_missing", why="the working directory is there")
        settings = self.settings_for(agent)  # read at every turn: a change applies at the next one
        if agent.rotation_state in {"due", "summarised", "written"}:
            await self.rotate(name, harness, settings)
            agent = self.reg.agent(name)
        reason = self._rotation_due(name, harness, settings, self.current_session(agent), message)
        if reason:
            self.reg.update_agent(name, rotation_state="due", rotation_reason=reason)
            await self.rotate(name, harness, settings, must_close=True)
        lots = self.canons[name].lots
        if lots.worktrees and message.lot and agent.role in {"build", "review"}:  # H15, after the old lot's summary
            moved = self._lot_worktree(name, workdir, message.lot, lots.base)
            if moved is None:
                return None
            workdir = moved
        return harness, workdir, settings

    def _lot_worktree(self, name: str, workdir: Path, lot: str, base: str) -> Path | None:
        """The lot's own worktree, made or reused, as the agent's working directory (H15); None with a
        ``lot_worktree`` alert when it cannot be made."""
        from ameesh import lots
        from ameesh.gitid import git_identity

        try:
            path, made = lots.ensure(workdir, lot, base)
        except lots.LotError as exc:
            self.reg.alert(name, "lot_worktree", str(exc), refresh=True)
            return None
        self.reg.resolve_alerts(name, "lot_worktree", why="the lot's worktree is there")
        if path.resolve() != workdir.resolve():
            common, branch = git_identity(path)
            with self.reg.tx():
                self.reg.update_agent(name, workdir=str(path), git_common_dir=common, git_branch=branch)
                said = "made from " + base if made else "reused"
                self.reg.note(name, "lot", f"lot {lot}: working in its worktree {path} ({said})", lot=lot)
        return path

    def _request(
        self, name: str, harness: Harness, workdir: Path, settings: dict[str, Any], message: Message
    ) -> tuple[TurnRequest, Retry]:
        """The turn to play: the session (opened if needed), the prompt with its opening, how an earlier
        attempt is kept out of the session (H13)."""
        sid, lot = self.current_session(self.reg.agent(name))
        prompt = message.text
        retry = Retry("resend")
        if sid is not None and message.tried > 0 and not self.reg.agent(name).rewind_to:  # a runner died in a turn?
            retry = self._undo_attempt(name, harness, sid, workdir, message)
            if retry.kind == "fresh":
                sid = None
            elif retry.kind == "continue" and retry.prompt:
                prompt = retry.prompt
        agent = self.reg.agent(name)
        if sid is not None and agent.rewind_to:
            retry = Retry("rewind", point=agent.rewind_to)
        if agent.pending_summary and retry.kind != "continue":
            prompt = with_opening(agent.pending_kind, agent.pending_summary, prompt)
        if sid is None:
            new = True
            sid = harness.new_session_id()
            if sid:
                self._open(name, sid, message.lot, settings["model"])
        else:
            row = self.reg.session(name, sid)
            new = (row is None or row.turns == 0) and not harness.session_exists(sid, workdir)
            if row is None:
                self.reg.open_session(name, sid, lot, settings["model"])
        if message.tried == 0:
            self.reg.note(name, "prompt", message.text, session_id=sid, lot=message.lot)
        request = TurnRequest(
            prompt=prompt,
            cwd=workdir,
            session_id=sid,
            new_session=new,
            model=settings["model"],
            effort=settings["effort"],
            timeout=self.canons[name].threshold("turn_timeout"),
            rewind_to=retry.point if retry.kind == "rewind" else None,
        )
        return request, retry

    def _undo_attempt(self, name: str, harness: Harness, sid: str, workdir: Path, message: Message) -> Retry:
        """Keep a failed attempt's prompt out of the session (H13): the harness rewinds what it can (the
        next turn resumes at ``rewind_to``), or the session is closed when the prompt opened it."""
        retry = harness.prepare_retry(sid, workdir, message.text)
        if retry.note:
            self.reg.note(name, "retry", f"message {message.num}: {retry.note}", session_id=sid)
        if retry.kind == "rewind":
            self.reg.update_agent(name, rewind_to=retry.point)
        elif retry.kind == "fresh":
            with self.reg.tx():
                self.reg.close_session(name, sid, "its first prompt failed: a new session plays it")
                self.reg.update_agent(name, session_id=None, session_lot=None, rewind_to=None)
            paths.write_session_file(self.root, name, None, None)
        return retry

    def _rotation_due(
        self,
        name: str,
        harness: Harness,
        settings: dict[str, Any],
        session: tuple[str | None, str | None],
        message: Message,
    ) -> str | None:
        """A rotation decided before the turn: a lot change under par-lot (H6), or (anyy) a session opened
        with another profile than the one set now (its ids belong to that profile)."""
        sid, lot = session
        if sid is None:
            return None
        if settings["session_policy"] == "par-lot" and message.lot and message.lot != lot:
            return f"lot {lot} → {message.lot}"
        if getattr(harness, "sessions_follow_model", False):
            row = self.reg.session(name, sid)
            if row is not None and row.model != settings["model"] and row.turns > 0:
                return f"profile {row.model or '(default)'} → {settings['model'] or '(default)'}"
        return None

    async def play_turn(
        self,
        name: str,
        harness: Harness,
        request: TurnRequest,
        on_session: Callable[[str], None] | None = None,
        label: str = "summary",
    ) -> TurnResult:
        """One turn, its process group on record while it runs (so that a leftover can be ended), with a
        progress line every ``progress_every`` seconds."""
        started = self.clock()

        async def ticking() -> None:
            while True:
                await asyncio.sleep(self.progress_every)
                self._say(f"{name}: {label} playing for {time.time() - wall:.0f} s")

        wall = time.time()
        ticker = asyncio.create_task(ticking()) if self.progress is not None else None
        try:
            result = await harnesses.play(
                harness, request, on_start=lambda pid: leftovers.record(self.root, name, pid), on_session=on_session
            )
        finally:
            leftovers.clear(self.root, name)
            if ticker is not None:
                ticker.cancel()
        elapsed = max(result.duration, self.clock() - started)
        said = "done" if result.ok else f"{result.outcome}: {result.error}"
        self._say(f"{name}: {label} {said} ({elapsed:.1f} s)")
        return result

    def _replace(self, name: str, old: str | None, new: str, lot: str | None, model: str | None) -> None:
        """The harness chose or changed the session id: the new one becomes the agent's session."""
        if old:
            with self.reg.tx():
                self.reg.close_session(name, old, "replaced by the harness")
                self.reg.note(name, "session", f"the harness answered with session {new}")
        self._open(name, new, lot, model)

    def _open(self, name: str, sid: str, lot: str | None, model: str | None = None) -> None:
        with self.reg.tx():
            self.reg.update_agent(name, session_id=sid, session_lot=lot)
            self.reg.open_session(name, sid, lot, model)
            self.reg.note(name, "session", f"session {sid} opened", session_id=sid, lot=lot)
        paths.write_session_file(self.root, name, sid, lot)

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

    def _finish(self, name: str, message: Message, sid: str | None, prompt: str, result: TurnResult) -> None:
        """The turn recorded and its outcome applied, in one transaction."""
        with self.reg.tx():
            self.record(name, result, sid=sid, lot=message.lot, kind="turn", prompt=prompt)
            if result.ok:
                self.reg.message_done(message.num)
                self.reg.note(name, "answer", result.text, session_id=sid, lot=message.lot)
                self.reg.update_agent(
                    name,
                    pending_summary=None,
                    pending_kind=None,
                    rotation_state=None,
                    rotation_reason=None,
                    failures=0,
                    retry_at=None,
                    circuit_open=0,
                    rewind_to=None,
                )
                self.reg.resolve_alerts(
                    name, "harness_failing", "circuit_open", "harness_broken", why="a turn succeeded"
                )
                self.report.turns += 1
            else:
                self._failed(name, message, sid, result)

    def _broken(self, name: str, message: Message, sid: str | None, prompt: str, result: TurnResult) -> None:
        """A turn that could not start for a cause in the set-up: recorded, the message left waiting with no
        attempt counted, no backoff; the agent stops for this run with a ``harness_broken`` alert (exit 3).
        The next ``ameesh run`` tries at once; a turn that succeeds clears the alert."""
        with self.reg.tx():
            self.record(name, result, sid=sid, lot=message.lot, kind="turn", prompt=prompt)
            self.reg.note(name, "error", f"turn not played: {result.error}", session_id=sid)
            self.report.failed += 1
            self.reg.update_agent(name, retry_at=self.clock() + self.canons[name].threshold("backoff_max"))  # --watch
        self.reg.alert(
            name,
            "harness_broken",
            f"{result.error}; message {message.num} waits, no retry until this is fixed (then ameesh run)",
            refresh=True,
        )

    def _failed(self, name: str, message: Message, sid: str | None, result: TurnResult) -> None:
        """A failed attempt: the message tried again later or failed for good, the agent's backoff and
        circuit (H13), alerts naming the failed and the waiting messages."""
        cfg = self.canons[name]
        self.failed_here.add(name)
        with self.reg.tx():
            self.report.failed += 1
            attempts = message.attempts + 1
            for_good = attempts >= cfg.threshold("max_attempts")
            self.reg.message_failed(message.num, attempts, for_good=for_good)
            self.reg.note(name, "error", f"turn {result.outcome} (attempt {attempts}): {result.error}", session_id=sid)
            failures = self.reg.agent(name).failures + 1
            delay = min(cfg.threshold("backoff_base") * 2 ** (failures - 1), cfg.threshold("backoff_max"))
            circuit = failures >= cfg.threshold("circuit_after")
            if circuit:
                delay = cfg.threshold("backoff_max")
            self.reg.update_agent(name, failures=failures, retry_at=self.clock() + delay, circuit_open=int(circuit))
        if for_good:
            self.report.given_up += 1
            failed = ", ".join(str(m.num) for m in self.reg.messages(name, "failed"))
            self.reg.alert(
                name,
                "harness_failing",
                f"message(s) {failed} failed for good (last after {attempts} attempts: {result.error});"
                f" ameesh retry {name} puts them back in the inbox",
                refresh=True,
            )
        if circuit:
            waiting = ", ".join(str(m.num) for m in self.reg.messages(name, "waiting")) or "none"
            self.reg.alert(
                name,
                "circuit_open",
                f"{failures} failed attempts in a row, the last: {result.error}; messages waiting: {waiting};"
                f" attempts stopped until ameesh retry {name}",
                refresh=True,
            )

    async def _after_turn(
        self, name: str, harness: Harness, settings: dict[str, Any], sid: str, result: TurnResult
    ) -> None:
        """Alerts on the context re-read (H7) and the rotation decision (H8), between turns."""
        cfg = self.canons[name]
        tokens = result.context_tokens
        if tokens is not None and tokens > cfg.threshold("alert_tokens"):
            self.reg.alert(name, "session_too_big", f"session {sid} re-reads {tokens} tokens per turn", session_id=sid)
        else:
            self.reg.resolve_alerts(name, "session_too_big", why="the session re-reads less now")
        self.reg.resolve_alerts(name, "session_too_big", session_id=sid, why="that session was closed")
        if settings["session_policy"] == "jamais":
            return
        row = self.reg.session(name, sid)
        if row is None or row.turns < cfg.threshold("min_turns"):
            return
        reason = None
        if tokens is not None and tokens > cfg.threshold("max_tokens"):
            reason = f"context {tokens} tokens > {cfg.threshold('max_tokens'):g}"
        elif result.duration > cfg.threshold("max_turn_seconds"):
            reason = f"turn lasted {result.duration:.0f} s > {cfg.threshold('max_turn_seconds'):g} s"
        if reason:
            self.reg.update_agent(name, rotation_state="due", rotation_reason=reason)
            await self.rotate(name, harness, settings)

    # -- rotation (H8) --------------------------------------------------------------------------------

    async def rotate(self, name: str, harness: Harness, settings: dict[str, Any], *, must_close: bool = False) -> bool:
        """Carry the agent's rotation on from its recorded step (:func:`ameesh.rotation.rotate`)."""
        return await rotation.rotate(self, name, harness, settings, must_close=must_close)
