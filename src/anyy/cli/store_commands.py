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
SQLITE_TARGET = "sqlite"  # --to sqlite: the profile's own state.db


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
    help=(
        "A postgresql:// URL; `sqlite` for the profile's own state.db (the way back from PostgreSQL); or a "
        "SQLite file (a state.db path, relative to the current folder) to copy the sessions into."
    ),
)
@click.option("--force", is_flag=True, help="Replace what the target holds (refused by default).")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def copy(profile: Profile, target: str, force: bool, as_json: bool) -> None:
    """Copy the profile's sessions (trees, heads, labels, queues, executions, objects) to another store.

    From the profile's current store (its state.db, or the database [store] url names) to TARGET. Safe while
    the profile's Gateway runs: the source is read in one consistent snapshot. Memory and roles stay in the
    profile's folder. To use a PostgreSQL copy, set [store] url in config.toml (or ANYY_STORE_URL) to it; to
    come back to SQLite, copy with `--to sqlite`, then remove [store] url.
    """
    profile.require()
    # Imported here: psycopg is loaded only by the commands that reach PostgreSQL.
    try:
        from anyy.storage.postgres.transfer import copy_postgres_to_sqlite, copy_sqlite_to_postgres
    except ImportError as exc:
        raise click.ClickException(
            f"copying to or from PostgreSQL needs its driver, which is not installed ({exc}): install it with "
            "`pip install 'anyy[postgres]'` (in this checkout: `.venv/bin/pip install -e '.[postgres]'`)"
        ) from None
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
        own = target == SQLITE_TARGET
        path = profile.db_path if own else Path(target).expanduser().absolute()
        db_path = path / "state.db" if path.is_dir() else path
        if not db_path.parent.is_dir():
            raise click.UsageError(f"--to {target}: the folder {db_path.parent} does not exist")
        report = copy_postgres_to_sqlite(source_url, db_path, db_path.parent / "objects", force=force, setting=setting)
        if own:
            next_step = (
                f"the profile's own SQLite store is {db_path}: to use it, remove url under [store] in "
                f"{profile.config_path} (and unset ANYY_STORE_URL), then restart the Gateway"
            )
        else:
            next_step = (
                f"the SQLite store is {db_path}, its objects in {db_path.parent / 'objects'}; a profile uses "
                f"the state.db in its own folder: copy with `--to {SQLITE_TARGET}` to make this the profile's store"
            )
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
