"""``anyy sessions export``: a session as JSONL (lossless: its whole tree) or Markdown (its current path),
written by the same read-side query as the Gateway's ``session.export`` (``anyy.storage.reads``)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import click

from anyy.cli.context import with_profile
from anyy.cli.output import write_text_file
from anyy.cli.session_reads import open_reader
from anyy.profiles import Profile

ExportFormat = Literal["jsonl", "markdown"]


@click.command("export")
@click.argument("session_id", metavar="ID")
@with_profile
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["jsonl", "markdown"]),
    default="jsonl",
    show_default=True,
    help="jsonl: the session and every entry of its tree, one JSON object a line. "
    "markdown: the conversation along the current path.",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, writable=True, path_type=Path),
    default=None,
    help="Write to this file instead of stdout.",
)
def export_command(profile: Profile, session_id: str, fmt: ExportFormat, output: Path | None) -> None:
    """Export a session."""
    with open_reader(profile) as reader:
        chunks = reader.export(session_id, fmt)
    if output is None:
        click.echo("".join(chunks), nl=False)
    else:
        write_text_file(output, chunks)
        click.echo(f"exported session {session_id} ({fmt}) to {output}", err=True)
