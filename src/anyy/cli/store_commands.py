"""``anyy store copy``: a profile's sessions into a PostgreSQL database, or back into a SQLite file (SPEC P2).

The copy is checked (row counts, a content hash per table, every object's bytes) before it is committed;
a target that already holds sessions is refused unless ``--force``.
"""

from __future__ import annotations

from pathlib import Path

import click

from anyy.cli.context import with_profile
from anyy.cli.output import echo_json
from anyy.profiles import Profile
from anyy.profiles.config import store_url

POSTGRES_SCHEMES = ("postgresql://", "postgres://")


@click.group("store")
def store() -> None:
    """Where a profile's sessions live (its SQLite state.db, or a PostgreSQL database)."""


@store.command("copy")
@with_profile
@click.option(
    "--to",
    "target",
    required=True,
    metavar="URL|FILE",
    help="A postgresql:// URL, or a SQLite file (a state.db path) to copy the sessions into.",
)
@click.option("--force", is_flag=True, help="Replace what the target holds (refused by default).")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def copy(profile: Profile, target: str, force: bool, as_json: bool) -> None:
    """Copy the profile's sessions (trees, heads, labels, queues, executions, objects) to another store.

    From the profile's current store (its state.db, or the database [store] url names) to TARGET. Safe while
    the profile's Gateway runs: the source is read in one consistent snapshot. Memory and roles stay in the
    profile's folder. To use the copy, set [store] url in config.toml (or ANYY_STORE_URL) to the target.
    """
    # Imported here: psycopg is loaded only by the commands that reach PostgreSQL.
    from anyy.storage.postgres.transfer import copy_postgres_to_sqlite, copy_sqlite_to_postgres

    profile.require()
    source_url, setting = store_url(profile.load_config(), profile.config_path)
    to_postgres = target.startswith(POSTGRES_SCHEMES)
    if source_url and to_postgres:
        raise click.UsageError(
            "the profile's sessions are in PostgreSQL already: copy them to a SQLite file with --to FILE"
        )
    if not source_url and not to_postgres:
        raise click.UsageError(
            f"the profile's sessions are in a SQLite file already ({profile.db_path}): --to takes a postgresql:// URL"
        )
    if to_postgres:
        report = copy_sqlite_to_postgres(profile.db_path, profile.objects_dir, target, force=force, setting="--to")
        next_step = f'to use it, set url = "{target}" under [store] in {profile.config_path} (or ANYY_STORE_URL)'
    else:
        path = Path(target).expanduser()
        db_path = path / "state.db" if path.is_dir() else path
        if not db_path.parent.is_dir():
            raise click.UsageError(f"--to {target}: the folder {db_path.parent} does not exist")
        report = copy_postgres_to_sqlite(source_url, db_path, db_path.parent / "objects", force=force, setting=setting)
        next_step = f"the SQLite store is {db_path}, its objects in {db_path.parent / 'objects'}"
    if as_json:
        echo_json(report)
        return
    counts = report.counts
    click.echo(
        f"copied {counts['sessions']} sessions, {counts['entries']} entries, {counts['submissions']} queue items, "
        f"{counts['executions']} executions and {counts['objects']} objects ({report.object_bytes} bytes) "
        f"from {report.source} to {report.target}; counts and content hashes verified"
    )
    click.echo(next_step)
