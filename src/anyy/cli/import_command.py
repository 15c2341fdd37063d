"""``anyy import FORMAT PATH…`` and ``anyy import --discover``: other agents' sessions as anyy trees
(SPEC I1-I3; docs/import.md).

Each file is parsed whole before anything is written (a bad file imports nothing and names its line);
the session is then written through the store protocol (``anyy.storage.imports``), found again by its
origin on a later import, which adds only what the source gained.
"""

from __future__ import annotations

from pathlib import Path

import click

from anyy.cli.context import open_store, with_profile
from anyy.cli.import_sources import FORMATS, discover, parse_sessions, session_files
from anyy.domain.errors import AnyyError
from anyy.profiles import Profile


@click.command("import")
@click.argument("fmt", metavar="FORMAT", required=False, type=click.Choice(FORMATS))
@click.argument("paths", metavar="PATH…", nargs=-1, type=click.Path(path_type=Path))
@click.option("--discover", "find", is_flag=True, help="List the sessions of the agents installed here.")
@click.option("--all", "take_all", is_flag=True, help="With --discover: import every session found.")
@with_profile
def import_command(profile: Profile, fmt: str | None, paths: tuple[Path, ...], find: bool, take_all: bool) -> None:
    """Import sessions of Claude Code, Codex, pi, opencode or Hermes (FORMAT: claude-code, codex, pi,
    opencode, hermes).

    A PATH is a session file or a folder of them (opencode, Hermes: their database, or its folder).
    Importing again adds only what is new."""
    if find:
        found = discover(formats=(fmt,) if fmt else FORMATS)
        if not take_all:
            for item in found:
                click.echo(item.line())
            click.echo(
                f"{len(found)} session file(s) found; import them with `anyy import --discover --all` "
                "or `anyy import FORMAT PATH…`",
                err=True,
            )
            return
        jobs = [(item.format, item.path) for item in found]
    else:
        if fmt is None or not paths:
            raise click.UsageError("give a FORMAT and at least one PATH, or --discover")
        jobs = []
        for path in paths:
            if path.is_dir():
                jobs += [(fmt, file) for file in session_files(fmt, path)]
            else:
                jobs.append((fmt, path))
    failed = 0
    with open_store(profile) as store:
        from anyy.storage.imports import write_import

        for job_format, path in jobs:
            for parsed in parse_sessions(job_format, path):
                try:
                    if isinstance(parsed, AnyyError):
                        raise parsed
                    done = write_import(store, parsed)
                except AnyyError as exc:
                    failed += 1
                    click.echo(f"anyy import: {exc}", err=True)
                    continue
                what = "new" if done.created else "already imported"
                unknown = f", {done.unknown} record(s) of unknown kinds kept as a notice" if done.unknown else ""
                click.echo(f"{parsed.origin} -> {done.session.id} ({what}, {done.added} entries added{unknown})")
    if failed:
        raise SystemExit(1)
