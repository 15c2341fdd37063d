"""``anyy backup`` and ``anyy restore``: a whole profile in one archive, and back (SPEC A5).

The backup works on the profile's files directly (no Gateway needed) and is consistent while a Gateway
runs: the database is copied with SQLite's online backup API (see ``anyy.profiles.backup``).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from anyy.cli.context import CliState, with_profile
from anyy.cli.output import echo_json
from anyy.profiles import Profile, anyy_home
from anyy.profiles.names import check_name

if TYPE_CHECKING:
    from anyy.profiles.backup import Counts


def _size(size: int) -> str:
    value = float(size)
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{size} bytes" if unit == "bytes" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} bytes"


def _counts(counts: Counts) -> str:
    return (
        f"{counts.sessions} sessions, {counts.entries} entries, {counts.submissions} submissions, "
        f"{counts.objects} objects, {counts.memory_files} memory files, {counts.role_files} roles"
    )


@click.command("backup")
@with_profile
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="The archive to write (a new file). Default: anyy-PROFILE-YYYYmmdd-HHMMSS.tar.gz here.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def backup(profile: Profile, output: Path | None, as_json: bool) -> None:
    """Back up the profile (sessions, objects, memory, roles, settings) into one .tar.gz.

    Safe while the profile's Gateway runs: the database copy is a consistent snapshot.
    """
    # Imported here: tarfile and sqlite3 are only loaded by the commands that need them.
    from anyy.profiles.backup import backup_profile, default_backup_name

    target = output if output is not None else Path.cwd() / default_backup_name(profile.name)
    report = backup_profile(profile, target)
    if as_json:
        echo_json(report)
        return
    click.echo(f"wrote {report.path} ({_size(report.size)}): profile {report.profile!r}, {_counts(report.counts)}")
    for note in report.left_out:
        click.echo(f"left out: {note}", err=True)
    if report.missing_objects:
        click.echo(
            f"warning: {len(report.missing_objects)} object(s) referenced by the database were missing from "
            "the profile's objects/ folder and are not in the backup",
            err=True,
        )


@click.command("restore")
@click.argument("archive", type=click.Path(dir_okay=False, exists=True, path_type=Path))
@click.option(
    "--profile",
    "profile_option",
    metavar="NAME",
    default=None,
    help="Restore as this profile (default: the profile the backup was taken from).",
)
@click.option("--force", is_flag=True, help="Replace the profile if it exists (its Gateway must be stopped).")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def restore(archive: Path, profile_option: str | None, force: bool, as_json: bool) -> None:
    """Restore a profile from a backup made by `anyy backup`.

    Every member is checked against the backup's manifest before anything is put in place; an existing
    profile is replaced only with --force, and never while its Gateway runs.
    """
    if profile_option is None:
        state = click.get_current_context().find_object(CliState)
        profile_option = state.profile_option if state is not None else None
    name = check_name(profile_option, what="profile", source="from --profile") if profile_option else None
    from anyy.profiles.backup import restore_profile

    report = restore_profile(archive, anyy_home(), name, overwrite=force)
    if as_json:
        echo_json(report)
        return
    verb = "replaced" if report.replaced else "restored"
    origin = f" (backup of {report.from_profile!r})" if report.from_profile != report.profile else ""
    click.echo(f"{verb} profile {report.profile!r}{origin} at {report.path}: {_counts(report.counts)}")
