"""``anyy sessions list|show|tree|children|search``: read the profile's sessions (``diff`` and ``rewind``:
its workspace's files, see ``files_commands``).

Through the profile's Gateway when one runs, else straight from its store (``session_reads``): these
commands work before (and without) a Gateway, and agree with it when it runs.
"""

from __future__ import annotations

import click

from anyy.cli import render
from anyy.cli.context import with_profile
from anyy.cli.export_command import export_command
from anyy.cli.files_commands import diff_command, fork_command, rewind_command
from anyy.cli.output import echo_json, entry_record
from anyy.cli.session_reads import open_reader
from anyy.domain.sessions import SESSION_KINDS, SessionKind
from anyy.profiles import Profile

_KIND = click.Choice(SESSION_KINDS)
_JSON = click.option("--json", "as_json", is_flag=True, help="Print JSON.")


@click.group()
def sessions() -> None:
    """Browse the sessions of a profile: Chats (kind chat) and Background (kind background)."""


@sessions.command("list")
@with_profile
@click.option("--kind", type=_KIND, default=None, help="Only Chats (chat) or only Background (background).")
@click.option("--limit", type=click.IntRange(1, 500), default=50, show_default=True, help="Sessions per page.")
@click.option("--cursor", default=None, help="Continue after a page: the cursor it printed.")
@_JSON
def list_command(profile: Profile, kind: SessionKind | None, limit: int, cursor: str | None, as_json: bool) -> None:
    """List sessions, most recently updated first, a page at a time."""
    with open_reader(profile) as reader:
        page = reader.list_sessions(kind, limit, cursor)
    if as_json:
        echo_json(page)
        return
    if not page.items:
        which = {"chat": "chats", "background": "background sessions"}.get(kind or "", "sessions")
        click.echo(f"no {which} in profile {profile.name!r}", err=True)
    for session in page.items:
        click.echo(render.session_line(session))
    if page.next_cursor is not None:
        options = f"--profile {profile.name}" + (f" --kind {kind}" if kind else "") + f" --limit {limit}"
        click.echo(f"more: anyy sessions list {options} --cursor {page.next_cursor}", err=True)


@sessions.command("show")
@click.argument("session_id", metavar="ID")
@with_profile
@click.option(
    "--entries",
    "count",
    type=click.IntRange(1, 500),
    default=20,
    show_default=True,
    help="How many of the last entries of the current path to show.",
)
@_JSON
def show_command(profile: Profile, session_id: str, count: int, as_json: bool) -> None:
    """Show a session's settings and the last entries of its current path."""
    with open_reader(profile) as reader:
        session = reader.session(session_id)
        page = reader.history(session_id, count)
    entries = list(reversed(page.items))  # history is newest first; people read oldest first
    if as_json:
        echo_json(
            {
                "session": session,
                "entries": [entry_record(entry) for entry in entries],
                "earlier": page.next_cursor is not None,
            }
        )
        return
    for line in render.session_details(session):
        click.echo(line)
    click.echo("")
    if not entries:
        click.echo("no entries yet")
        return
    earlier = f" (earlier ones: anyy sessions export {session.id} --format markdown)" if page.next_cursor else ""
    click.echo(f"last {len(entries)} entries of the current path{earlier}:")
    for entry in entries:
        click.echo(f"  {render.entry_line(entry)}")


@sessions.command("children")
@click.argument("session_id", metavar="ID")
@with_profile
@_JSON
def children_command(profile: Profile, session_id: str, as_json: bool) -> None:
    """List the tasks a session delegated (K2): each child session, its state, brief and answer."""
    with open_reader(profile) as reader:
        tasks = reader.children(session_id)
    if as_json:
        echo_json(tasks)
        return
    if not tasks:
        click.echo(f"session {session_id} delegated no tasks", err=True)
    for task in tasks:
        click.echo(render.task_line(task))


@sessions.command("tree")
@click.argument("session_id", metavar="ID")
@with_profile
@_JSON
def tree_command(profile: Profile, session_id: str, as_json: bool) -> None:
    """Show every branch of a session's tree, its labels and where the head is."""
    with open_reader(profile) as reader:
        view = reader.tree(session_id)
    if as_json:
        echo_json(view)
        return
    if not view.nodes:
        click.echo(f"session {session_id} has no entries yet")
        return
    for line in render.tree_lines(view):
        click.echo(line)


@sessions.command("search")
@click.argument("query")
@with_profile
@click.option("--kind", type=_KIND, default=None, help="Only Chats (chat) or only Background (background).")
@click.option("--session", "session_id", metavar="ID", default=None, help="Only this session's own entries.")
@click.option("--limit", type=click.IntRange(1, 500), default=20, show_default=True, help="Most hits to show.")
@_JSON
def search_command(
    *, profile: Profile, query: str, kind: SessionKind | None, session_id: str | None, limit: int, as_json: bool
) -> None:
    """Search what people and the agent said. Words must all match; "quoted words" as a phrase; word* as a
    prefix."""
    with open_reader(profile) as reader:
        hits = reader.search(query, kind, session_id, limit)
    if as_json:
        echo_json(hits)
        return
    if not hits:
        click.echo(f"nothing matches {query!r} in profile {profile.name!r}", err=True)
    for hit in hits:
        click.echo(render.hit_line(hit))


sessions.add_command(export_command)


sessions.add_command(diff_command)
sessions.add_command(rewind_command)
sessions.add_command(fork_command)
