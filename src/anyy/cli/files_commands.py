"""``anyy sessions diff|rewind|fork``: what the agent changed in a session's workspace, taking it back, and
a fork with its own copy of the workspace (W3).

Both go through the profile's Gateway (started when none runs): the captures live in the profile's capture
store and the Gateway is the one writer of its sessions.
"""

from __future__ import annotations

from typing import Any

import click

from anyy.cli.context import with_profile
from anyy.cli.output import echo_json
from anyy.cli.schedule_commands import _call as gateway_call
from anyy.profiles import Profile


def _listing(title: str, paths: list[str], mark: str) -> None:
    if paths:
        click.echo(f"{title} ({len(paths)}):")
        for path in paths:
            click.echo(f"  {mark} {path}")


@click.command("diff")
@click.argument("session_id", metavar="ID")
@click.argument("entry_id", metavar="[ENTRY]", type=int, required=False)
@click.option("--since", type=int, default=None, help="From the files' state at this entry (to ENTRY or the head).")
@click.option("--stat", is_flag=True, help="Only the summary: files added, changed and removed.")
@with_profile
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def diff_command(  # noqa: PLR0917 - click passes options by name
    profile: Profile, session_id: str, entry_id: int | None, since: int | None, stat: bool, as_json: bool
) -> None:
    """Show what the agent changed in the session's workspace: in the turn that made ENTRY, from --since to
    ENTRY (or the head), or over the whole session (neither)."""
    found: dict[str, Any] = gateway_call(
        profile, "session.files.diff", {"session_id": session_id, "entry_id": entry_id, "since": since}
    )
    if as_json:
        echo_json(found)
        return
    if not found["target"]:
        click.echo(f"session {session_id}: the agent changed no files (no capture on this path)", err=True)
        return
    click.echo(f"workspace {found['workspace']}")
    _listing("added", found["added"], "+")
    _listing("changed", found["changed"], "~")
    _listing("removed", found["removed"], "-")
    _listing("large files, recorded by size and hash but not copied", found["large"], "!")
    if not (found["added"] or found["changed"] or found["removed"]):
        click.echo("no change")
    if not stat and found["text"]:
        click.echo("")
        click.echo(found["text"], nl=False)


@click.command("rewind")
@click.argument("session_id", metavar="ID")
@click.argument("entry_id", metavar="ENTRY", type=int)
@click.option("--yes", is_flag=True, help="Restore without asking (after the preview is printed).")
@click.option("--overwrite-hand-edits", is_flag=True, help="Also restore files changed by hand since the agent.")
@with_profile
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def rewind_command(  # noqa: PLR0917 - click passes options by name
    profile: Profile, session_id: str, entry_id: int, yes: bool, overwrite_hand_edits: bool, as_json: bool
) -> None:
    """Move the session to ENTRY and restore its workspace's files as they were there: first a preview,
    then, once confirmed, the restore. Files changed by hand since the agent's last capture are kept."""
    params: dict[str, Any] = {"session_id": session_id, "entry_id": entry_id}
    shown = gateway_call(profile, "session.navigate", {**params, "files": "preview"})["files"]
    if not as_json:
        click.echo(f"restoring {shown['workspace']} to its state at entry {entry_id}:")
        _listing("would add", shown["added"], "+")
        _listing("would change", shown["changed"], "~")
        _listing("would remove", shown["removed"], "-")
        _listing("changed by hand since the agent's last capture", shown["hand_edited"], "!")
        if shown["hand_edited"] and not overwrite_hand_edits:
            click.echo("  (kept as they are; --overwrite-hand-edits restores them too)")
    if not yes and not click.confirm("restore?", default=False, err=True):
        click.echo("nothing changed", err=True)
        return
    result = gateway_call(
        profile,
        "session.navigate",
        {**params, "files": "restore", "overwrite_hand_edits": overwrite_hand_edits},
    )
    done = result["files"]
    if as_json:
        echo_json(done)
        return
    click.echo(f"restored: {len(done['added'])} added, {len(done['changed'])} changed, {len(done['removed'])} removed")
    _listing("kept (changed by hand)", done["kept"], "!")
    _listing("not restored", done["not_restorable"], "!")


@click.command("fork")
@click.argument("session_id", metavar="ID")
@click.argument("entry_id", metavar="[ENTRY]", type=int, required=False)
@click.option("--before", is_flag=True, help="Fork just before the user message ENTRY (its text is printed).")
@click.option("--title", default=None, help="The fork's title.")
@click.option(
    "--workspace-copy",
    "copy",
    type=click.Choice(["worktree", "copy"]),
    default=None,
    help="Give the fork its own copy of the workspace, next to it: a git worktree of its repository (with the "
    "uncommitted changes) or a plain copy. Without it the fork works in the same folder.",
)
@with_profile
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def fork_command(  # noqa: PLR0917 - click passes options by name
    profile: Profile,
    session_id: str,
    entry_id: int | None,
    before: bool,
    title: str | None,
    copy: str | None,
    as_json: bool,
) -> None:
    """Start a new session from ENTRY of session ID (default: its head), with that path's history. With
    --workspace-copy the two can edit files in parallel; deleting the fork removes its copy."""
    params: dict[str, Any] = {"session_id": session_id, "entry_id": entry_id, "before": before, "title": title}
    if copy is not None:
        params["workspace_copy"] = copy
    forked = gateway_call(profile, "session.fork", params)
    if as_json:
        echo_json(forked)
        return
    session = forked["session"]
    click.echo(f"forked {session_id} as {session['id']}")
    click.echo(f"workspace {session.get('workspace') or '(the Gateway folder)'}")
    if forked.get("workspace_copy"):
        click.echo(f"  its own {copy} at {forked['workspace_copy']} (removed when the fork is deleted)")
    if forked.get("draft"):
        click.echo(f"draft: {forked['draft']}")
    if forked.get("settle_error"):
        click.echo(f"the original's running work was not settled: {forked['settle_error']}", err=True)
