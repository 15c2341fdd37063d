"""The ``ameesh`` command line: agents, their inbox, the runner and what it recorded.

Read commands take ``--json`` (one JSON document on stdout). Errors go to stderr with exit status 1.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ameesh import __version__
from ameesh.names import HARNESSES, ROLES

if TYPE_CHECKING:
    from ameesh.registry import Registry
    from ameesh.rows import Agent

# H18: a command starts fast: what a command needs beyond click (the registry, the canon, msgspec, the
# harness adapters, asyncio) is imported inside it.

json_option = click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")


def _refusals() -> tuple[type[Exception], ...]:
    """The errors a command turns into a clean message (read only when one is raised: H18)."""
    from ameesh.canon import CanonError
    from ameesh.registry import RegistryError

    return (RegistryError, CanonError, NotImplementedError)


@contextmanager
def opened() -> Iterator[Registry]:
    """The registry of AMEESH_HOME; refusals become clean command-line errors."""
    from ameesh import paths
    from ameesh.registry import Registry

    root = paths.home()
    try:
        with Registry(paths.registry_path(root)) as reg:
            yield reg
    except _refusals() as exc:
        raise click.ClickException(str(exc)) from None


def emit(data: Any, as_json: bool, lines: list[str]) -> None:
    import json

    if as_json:
        click.echo(json.dumps(data, ensure_ascii=False, indent=2))
    else:
        for line in lines:
            click.echo(line)


def _when(at: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(at)) if at else "-"


@click.group(
    context_settings={"help_option_names": ["-h", "--help"]},
    help=f"Orchestrate coding agents on their harness sessions (harnesses: {', '.join(HARNESSES)}).",
)
@click.version_option(__version__, prog_name="ameesh")
def main() -> None:
    pass


@main.command()
def init() -> None:
    """Create AMEESH_HOME and its registry (idempotent)."""
    from ameesh import paths

    with opened() as reg:
        click.echo(f"ameesh home: {paths.home()} (registry schema {reg.schema_versions()[-1]})")


@main.command()
@click.argument("name")
@click.option("--harness", type=click.Choice(HARNESSES), required=True)
@click.option("--role", type=click.Choice(ROLES), default="build", show_default=True)
@click.option("--dir", "workdir", type=click.Path(file_okay=False, path_type=Path), default=".", show_default=True)
def add(name: str, harness: str, role: str, workdir: Path) -> None:
    """Register an agent working in a directory (its git identity is recorded)."""
    from ameesh import paths
    from ameesh.gitid import git_identity

    if not workdir.is_dir():
        raise click.ClickException(f"{workdir} is not a directory")
    directory = workdir.resolve()
    common, branch = git_identity(directory)
    root, uid = paths.home(), paths.new_uid()
    with opened() as reg:
        if reg.find_agent(name) is None and paths.leftover(root, name):
            raise click.ClickException(
                f"{paths.agent_dir(root, name)} holds the state of a former agent {name} (its session would be"
                f" resumed): ameesh remove {name} archives it, or choose another name"
            )
        with reg.tx():
            reg.add_agent(
                name,
                harness=harness,
                role=role,
                workdir=str(directory),
                git_common_dir=common,
                git_branch=branch,
                uid=uid,
            )
            reg.note(name, "agent", f"registered ({harness}, {role}) in {directory}")
        paths.claim(root, name, uid)
    where = f"{directory}" + (f" (branch {branch})" if branch else "")
    click.echo(f"agent {name}: {harness}, {role}, {where}")


def _agent_view(reg: Registry, agent: Agent, settings: dict[str, Any]) -> dict[str, Any]:
    from ameesh import canon

    return {
        "name": agent.name,
        "harness": agent.harness,
        "role": agent.role,
        "workdir": agent.workdir,
        "git_common_dir": agent.git_common_dir,
        "git_branch": agent.git_branch,
        "session_id": agent.session_id,
        "session_lot": agent.session_lot,
        "rotation_state": agent.rotation_state,
        "settings": {k: agent.setting(k) for k in canon.SETTABLE},
        "effective": settings,
        "waiting": reg.waiting_count(agent.name),
        "failures": agent.failures,
        "circuit_open": bool(agent.circuit_open),
    }


@main.command(name="list")
@json_option
def list_(as_json: bool) -> None:
    """The agents."""
    from ameesh import canon

    with opened() as reg:
        views = [_agent_view(reg, a, canon.for_agent(a).effective(a)) for a in reg.agents()]
    lines = [
        f"{v['name']:<16} {v['harness']:<7} {v['role']:<12} {v['session_id'] or '-':<38} {v['waiting']} waiting"
        for v in views
    ]
    emit(views, as_json, lines or ["no agents (ameesh add NAME --harness … --dir …)"])


@main.command()
@click.argument("name")
@json_option
def show(name: str, as_json: bool) -> None:
    """One agent: directory, git identity, session, settings, what they resolve to and where each value
    came from (set by ameesh set, the canon, AMEESH_SESSION_POLICY, or the default)."""
    from ameesh import canon

    with opened() as reg:
        agent = reg.agent(name)
        cfg = canon.for_agent(agent)
        resolved, sources = cfg.resolve_with_sources(agent.role, {k: agent.setting(k) for k in canon.SETTABLE})
        capped, _ = cfg.clamp(agent.role, resolved)
        for key in canon.SETTABLE:
            if capped[key] != resolved[key]:
                sources[key] += f", capped by {cfg.path or 'the canon'}"
        view = _agent_view(reg, agent, capped) | {"sources": sources}
    lines = [f"{k}: {v}" for k, v in view.items() if not isinstance(v, dict)]
    lines += [f"{k}: {view['effective'][k] or '(the harness default)'} ({sources[k]})" for k in view["settings"]]
    emit(view, as_json, lines)


@main.command()
@click.argument("name")
def remove(name: str) -> None:
    """Forget an agent: its registry rows, and its state directory (session file, pi sessions), archived
    under AMEESH_HOME/removed/ so that an agent added later under the same name starts afresh. The
    harnesses' own session stores are left alone. Refused while a runner or ameesh attach holds it."""
    from ameesh import paths
    from ameesh.runner import lock_agent

    root = paths.home()
    with opened() as reg:
        known = reg.find_agent(name) is not None
        if not known and not paths.leftover(root, name):
            reg.agent(name)  # the usual "no agent named" error
        with lock_agent(root, name) as locked:
            if not locked:
                raise click.ClickException(f"agent {name} is being played (a runner or ameesh attach): try later")
            if known:
                reg.remove_agent(name)
        where = paths.archive(root, name)
    said = f"; its state is archived in {where}" if where else ""
    click.echo(f"agent {name} removed{said}")


@main.command(name="set")
@click.argument("name")
@click.argument("assignments", nargs=-1, required=True)
def set_(name: str, assignments: tuple[str, ...]) -> None:
    """Set model=, effort=, tier=, session_policy= (an empty value returns to the default). Next turn."""
    from ameesh import canon

    changes: dict[str, str | None] = {}
    for item in assignments:
        key, sep, value = item.partition("=")
        if not sep or key not in canon.SETTABLE:
            raise click.UsageError(f"{item!r}: expected KEY=VALUE with KEY one of {', '.join(canon.SETTABLE)}")
        changes[key] = value.strip() or None
    with opened() as reg:
        agent = reg.agent(name)
        cfg = canon.for_agent(agent)
        own = {k: changes.get(k, agent.setting(k)) for k in canon.SETTABLE}
        cfg.check(agent.role, cfg.resolve(agent.role, own))
        with reg.tx():
            reg.update_agent(name, **changes)
            said = ", ".join(f"{k}={v if v is not None else '(default)'}" for k, v in changes.items())
            reg.note(name, "settings", f"set {said} (from the next turn)")
        effective = cfg.effective(reg.agent(name))
    shown = {k: effective[k] if effective[k] is not None else "(the harness's default)" for k in changes}
    click.echo(", ".join(f"{k}={v}" for k, v in shown.items()))


@main.command()
@click.argument("name")
@click.argument("text")
@click.option("--lot", default=None, help="The lot (unit of work) this message belongs to.")
def send(name: str, text: str, lot: str | None) -> None:
    """Put a message in the agent's inbox (played by `ameesh run`)."""
    with opened() as reg:
        num = reg.send(name, text, lot)
    click.echo(f"message {num} waiting for {name}")


@main.command()
@click.option("--watch", is_flag=True, help="Keep running and play new messages as they come.")
@click.option("--poll", type=float, default=1.0, show_default=True, help="Seconds between looks with --watch.")
def run(watch: bool, poll: float) -> None:
    """Play the inbox: one turn at a time per agent, all agents at once, until it is empty.

    Progress lines go to stderr (agent, message, attempt, elapsed time; backoff waits). A failing agent
    waits longer after each failure in a row and stops after too many (alert circuit_open; ameesh retry).

    Exit status: 0 when every message was played; 3 when an agent is blocked (an alert says why: a missing
    directory, an open circuit) or played elsewhere (another runner, ``ameesh attach``): its messages wait;
    4 when a message failed for good after its attempts (alert harness_failing; ameesh retry)."""
    import asyncio  # here: every other command starts ~30 ms sooner without it

    from ameesh import paths
    from ameesh.runner import Runner

    def progress(line: str) -> None:
        click.echo(f"[{time.strftime('%H:%M:%S')}] {line}", err=True)

    with opened() as reg:
        runner = Runner(reg, paths.home(), progress=progress)
        try:
            report = asyncio.run(runner.run(watch=watch, poll=poll))
        except KeyboardInterrupt:
            sys.exit(130)
    turns, failed = report.turns, report.failed
    click.echo(f"{turns} turn{'s' * (turns != 1)} played, {failed} failed attempt{'s' * (failed != 1)}")
    if report.busy:
        click.echo(
            f"played elsewhere (another runner or ameesh attach), left waiting: {', '.join(report.busy)}", err=True
        )
    if report.blocked:
        click.echo(f"blocked (see ameesh alerts): {', '.join(report.blocked)}", err=True)
    if report.blocked or report.busy:
        sys.exit(3)
    if report.given_up:
        click.echo(f"{report.given_up} message(s) failed for good (see ameesh alerts and ameesh thread)", err=True)
        sys.exit(4)


@main.command()
@click.argument("name")
@click.option("--brief", type=click.File("r", encoding="utf-8"), default=None, help="The brief of the new session.")
@click.option("--summary", "with_summary", is_flag=True, help="Rotate now: a resume summary opens the new session.")
def restart(name: str, brief: Any, with_summary: bool) -> None:
    """Close the agent's session now. Its next turn opens a new one: on the brief (--brief FILE), on a
    resume summary played now in the old session (--summary), or on its next message alone."""
    from ameesh import paths
    from ameesh.runner import restart as do_restart

    if brief is not None and with_summary:
        raise click.UsageError("--brief and --summary exclude each other: the new session opens on one of them")
    text = None
    if brief is not None:
        text = brief.read().strip()
        if not text:
            raise click.ClickException("the brief is empty")
    if with_summary:
        _restart_with_summary(name)
        return
    with opened() as reg:
        old = do_restart(reg, paths.home(), name, text)
    then = "on the brief" if text else "on its message alone (no summary)"
    click.echo(f"{name}: session {old or '(none)'} closed; the next turn starts a new session {then}")


def _restart_with_summary(name: str) -> None:
    import asyncio

    from ameesh import paths
    from ameesh.runner import Runner, lock_agent, restart_with_summary

    root = paths.home()
    with opened() as reg, lock_agent(root, name) as locked:
        if not locked:
            raise click.ClickException(f"agent {name} is being played (a runner or ameesh attach): try later")
        old, done = asyncio.run(restart_with_summary(Runner(reg, root), name))
    if old is None:
        raise click.ClickException(f"agent {name} has no session to rotate (its next turn opens one)")
    if not done:
        raise click.ClickException(f"the summary of session {old} failed (see ameesh thread {name}): session kept")
    click.echo(f"{name}: session {old} closed with a summary; the next turn opens a new session on it")


@main.command()
@click.argument("name")
@click.argument("messages", nargs=-1, type=int)
def retry(name: str, messages: tuple[int, ...]) -> None:
    """Put the agent's failed messages (all, or those numbered) back in its inbox and close its circuit;
    the next ameesh run plays them (in the same session, never with a second copy of a prompt)."""
    with opened() as reg:
        reg.agent(name)
        with reg.tx():
            nums = reg.requeue(name, messages)
            unknown = sorted(set(messages) - set(nums))
            reg.update_agent(name, failures=0, retry_at=None, circuit_open=0)
            reg.resolve_alerts(name, "circuit_open", "harness_failing", why="ameesh retry")
            if nums:
                reg.note(name, "retry", f"message(s) {', '.join(map(str, nums))} back in the inbox (ameesh retry)")
    if unknown:
        click.echo(f"not failed messages of {name}, left alone: {', '.join(map(str, unknown))}", err=True)
    click.echo(f"{name}: {len(nums)} message(s) back in the inbox; attempts allowed again")


@main.command()
@click.argument("name")
@json_option
def thread(name: str, as_json: bool) -> None:
    """The readable thread: prompts, answers, sessions, rotations, summaries, alerts, in order."""
    from ameesh.rows import as_dict

    with opened() as reg:
        items = reg.thread(name)
    lines = [f"[{_when(i.at)}] {i.kind}{' (' + i.lot + ')' if i.lot else ''}: {i.text}" for i in items]
    emit([as_dict(i) for i in items], as_json, lines)


@main.command()
@click.argument("name")
@json_option
def sessions(name: str, as_json: bool) -> None:
    """The agent's session history, oldest first."""
    from ameesh.rows import as_dict

    with opened() as reg:
        rows = reg.sessions(name)
    lines = [
        f"{r.session_id}  lot={r.lot or '-'}  turns={r.turns}  context={r.last_context_tokens or '-'}"
        f"  opened {_when(r.opened_at)}  "
        + (f"closed {_when(r.closed_at)} ({r.close_reason})" if r.closed_at else "current")
        for r in rows
    ]
    emit([as_dict(r) for r in rows], as_json, lines)


@main.command()
@click.argument("words", nargs=-1)
@json_option
def alerts(words: tuple[str, ...], as_json: bool) -> None:
    """Active alerts (session_too_big, workdir_missing, harness_failing, circuit_open, summary_failed,
    lot_worktree, lot_rounds, lot_review), with
    their ids; ``ameesh alerts AGENT`` for one agent, ``ameesh alerts ack ID…`` to acknowledge. An alert
    also clears by itself when its cause is gone."""
    from ameesh.rows import as_dict

    if words[:1] == ("ack",):
        ids = words[1:]
        if not ids or not all(i.isdigit() for i in ids):
            raise click.UsageError("ameesh alerts ack ID… (the ids ameesh alerts prints)")
        with opened() as reg:
            for num in ids:
                found = reg.ack_alert(int(num))
                click.echo(f"alert {found.num} ({found.agent}: {found.kind}) acknowledged")
        return
    if len(words) > 1:
        raise click.UsageError("ameesh alerts [AGENT] | ameesh alerts ack ID…")
    with opened() as reg:
        if words:
            reg.agent(words[0])
        rows = reg.alerts(words[0] if words else None)
    lines = [f"#{r.num} {r.agent}: {r.kind}: {r.message}" for r in rows]
    emit([as_dict(r) for r in rows], as_json, lines or ["no alerts"])


@main.command()
@json_option
def status(as_json: bool) -> None:
    """Agents at a glance: each one's harness, session, waiting messages, alerts, and the turn it is
    playing now (if a runner is on it); then the totals."""
    from ameesh import leftovers, paths

    root = paths.home()
    with opened() as reg:
        alerts = reg.alerts()
        rows: list[dict[str, Any]] = []
        for agent in reg.agents():
            name, sid = agent.name, agent.session_id
            session = reg.session(name, sid) if sid else None
            rows.append(
                {
                    "name": name,
                    "harness": agent.harness,
                    "role": agent.role,
                    "session_id": sid,
                    "session_turns": session.turns if session else 0,
                    "waiting": reg.waiting_count(name),
                    "failed": len(reg.messages(name, "failed")),
                    "circuit_open": bool(agent.circuit_open),
                    "alerts": sum(1 for a in alerts if a.agent == name),
                    "playing": leftovers.playing(root, name),
                }
            )
    data = {
        "home": str(root),
        "agents": len(rows),
        "waiting": sum(r["waiting"] for r in rows),
        "alerts": len(alerts),
        "playing": sum(1 for r in rows if r["playing"]),
        "by_agent": rows,
    }
    lines = [f"{k}: {data[k]}" for k in ("home", "agents", "waiting", "alerts", "playing")]
    for r in rows:
        now = f"playing a turn for {time.time() - r['playing']['since']:.0f} s" if r["playing"] else "idle"
        held = f"session {r['session_id']} ({r['session_turns']} turns)" if r["session_id"] else "no session"
        lines.append(
            f"  {r['name']} ({r['harness']}, {r['role']}): {now}; {held}; {r['waiting']} waiting;"
            f" {r['failed']} failed; {r['alerts']} alert(s)"
            + ("; circuit open (ameesh retry)" if r["circuit_open"] else "")
        )
    emit(data, as_json, lines)


@main.command()
@click.argument("name")
@click.option("--exec", "do_exec", is_flag=True, help="Open the session now instead of printing the command.")
def attach(name: str, do_exec: bool) -> None:
    """The command that opens the agent's current session interactively in its harness (H3).

    With ``--exec`` it runs it, holding the agent meanwhile: a runner leaves the agent's messages waiting
    until the interactive session ends, and attaching while a runner plays the agent is refused."""
    import shlex
    import subprocess

    from ameesh import harnesses, paths
    from ameesh.runner import Runner, lock_agent

    root = paths.home()
    with opened() as reg:
        agent = reg.agent(name)
        sid, _ = Runner(reg, root).current_session(agent)
        harness = harnesses.get(agent.harness, paths.agent_dir(root, name))
    if sid is None:
        raise click.ClickException(
            f"agent {name} has no session yet: its first turn opens one (ameesh send {name} …; ameesh run)"
        )
    workdir = Path(agent.workdir)
    argv = harness.attach_command(sid, workdir)
    if not do_exec:
        click.echo(f"cd {shlex.quote(str(workdir))} && {shlex.join(argv)}")
        return
    if not workdir.is_dir():
        raise click.ClickException(f"the working directory {workdir} is gone (see ameesh alerts)")
    with lock_agent(root, name) as locked:  # no runner plays the agent while a person is in its session
        if not locked:
            raise click.ClickException(
                f"agent {name} is being played by a runner (or attached elsewhere): try again when its turn ends"
            )
        from commons.processes import adopt_orphans, end_children

        adopt_orphans()  # what the harness leaves behind (Codex: `codex app-server`) comes back to us…
        try:
            env = {**os.environ, **harness.environment()}
            done = subprocess.run(argv, cwd=workdir, env=env, check=False)  # noqa: S603 - the harness, asked for
        except OSError as exc:
            raise click.ClickException(f"cannot run {argv[0]}: {exc}") from None
        finally:
            ended = end_children()  # … and is ended with the session
        if ended:
            click.echo(f"ended {len(ended)} process(es) the harness left running", err=True)
    sys.exit(done.returncode)


# -- lots: checks, reviews, merge (H16) -----------------------------------------------------------------


@main.command()
def done() -> None:
    """Say, from a build agent's own turn on a lot, that the lot is done: ameesh runs the canon's checks
    in the lot's worktree when the turn ends, then asks its reviewers. The agent and lot are the turn's
    (the runner's AMEESH_TURN), never a name given here."""
    from ameesh import review

    with opened() as reg:
        agent, lot = review.caller(reg)
        click.echo(review.done(reg, agent, lot))


@main.command(name="review")
@click.option("--approve", "approve", flag_value=True, default=None, help="The lot may be merged.")
@click.option("--changes", "approve", flag_value=False, help="Changes are needed: the findings go to its builder.")
@click.argument("findings", required=False, default="")
def review_(approve: bool | None, findings: str) -> None:
    """A reviewer's verdict on the lot of its own turn: --approve, or --changes "FINDINGS" (or the findings
    on stdin), sent to the lot's build agent as a message on the lot."""
    from ameesh import canon, review

    if approve is None:
        raise click.UsageError("ameesh review --approve | --changes FINDINGS")
    if approve is False and not findings:
        findings = "" if sys.stdin.isatty() else sys.stdin.read()
    with opened() as reg:
        agent, lot = review.caller(reg)
        click.echo(review.verdict(reg, agent, lot, canon.for_agent(agent).lots, approve=approve, findings=findings))


@main.command(name="lots")
@json_option
def lots_(as_json: bool) -> None:
    """Each lot: its build agent, state (working, checking, in review, ready, merged, stopped), rounds,
    verdicts of this round, and its worktree."""
    from ameesh.rows import as_dict

    with opened() as reg:
        views = []
        for lot in reg.lots():
            verdicts = {r.reviewer: r.verdict for r in reg.reviews(lot.name, lot.rounds)}
            views.append(as_dict(lot) | {"verdicts": verdicts})
    lines = [
        f"{v['name']:<16} {v['state']:<10} owner {v['owner']}, round {v['rounds']}"
        + (f", verdicts {', '.join(f'{k}: {x}' for k, x in v['verdicts'].items())}" if v["verdicts"] else "")
        + f", {v['worktree']}"
        for v in views
    ]
    emit(views, as_json, lines or ["no lots (a build agent's first turn on a lot makes one)"])


@main.command()
@click.argument("lot_name", metavar="LOT")
def merge(lot_name: str) -> None:
    """Merge a ready lot into its base branch (a fast-forward when possible, else a merge commit), then
    remove its worktree (never while dirty or unmerged). A conflict is refused and nothing changes. Not
    from an agent's turn."""
    from ameesh import lots, paths
    from ameesh.gitid import git_identity
    from ameesh.rotation import restart

    with opened() as reg:
        lot = _person_on_lot(reg, "merge", lot_name, "ready", "not ready to merge (see ameesh lots)")
        if not lot.repository or not lot.base:
            raise click.ClickException(f"lot {lot_name} is not in a git repository: nothing to merge")
        repository, worktree = Path(lot.repository), Path(lot.worktree)
        if worktree.is_dir() and lots.is_dirty(worktree):
            raise click.ClickException(f"lot {lot_name}'s worktree {worktree} has uncommitted changes: not merged")
        try:
            how = lots.merge(repository, lot_name, lot.base)
        except lots.LotError as exc:
            raise click.ClickException(str(exc)) from None
        common, branch = git_identity(repository)
        with reg.tx():
            reg.update_lot(lot_name, state="merged")
            reg.note(lot.owner, "lot", f"lot {lot_name} merged into {lot.base} ({how})", lot=lot_name)
            for agent in reg.agents():  # the agents that worked in the lot's worktree go back to the repository
                if Path(agent.workdir) == worktree and worktree != repository:
                    reg.update_agent(agent.name, workdir=str(repository), git_common_dir=common, git_branch=branch)
                if agent.session_lot == lot_name:  # H4: a lot's session is kept until the lot is merged
                    restart(reg, paths.home(), agent.name, reason=f"lot {lot_name} merged")
        click.echo(f"lot {lot_name} merged into {lot.base} ({how})")
        if worktree == repository:
            return
        try:
            removed = lots.remove(repository, lot_name, lot.base)
        except lots.LotError as exc:
            click.echo(f"its worktree is kept: {exc}", err=True)
            return
    click.echo(f"worktree {removed} removed (branch {lots.branch_of(lot_name)} kept)")


@main.command()
@click.argument("lot_name", metavar="LOT")
def reopen(lot_name: str) -> None:
    """Give a stopped lot (its rounds used up) back to its build agent with its rounds counted afresh;
    a person's command, refused inside an agent's turn. Send the agent a message on the lot to go on."""
    with opened() as reg:
        lot = _person_on_lot(reg, "reopen", lot_name, "stopped", "only a stopped lot is reopened")
        with reg.tx():
            reg.update_lot(lot_name, state="working", rounds=0)
            reg.resolve_alerts(lot.owner, "lot_rounds", why=f"lot {lot_name} reopened")
            reg.note(lot.owner, "lot", f"lot {lot_name} reopened (ameesh reopen)", lot=lot_name)
    owner = lot.owner
    click.echo(f"lot {lot_name} is {owner}'s again (rounds counted afresh): ameesh send {owner} --lot {lot_name} …")


def _person_on_lot(reg: Registry, command: str, lot_name: str, state: str, refusal: str) -> Any:
    """The lot a person's command acts on, in ``state``; refused inside an agent's turn (H16)."""
    if os.environ.get("AMEESH_TURN"):
        raise click.ClickException(f"ameesh {command} is a person's command: it is refused inside an agent's turn")
    lot = reg.lot(lot_name)
    if lot.state != state:
        raise click.ClickException(f"lot {lot_name} is {lot.state}: {refusal}")
    return lot
