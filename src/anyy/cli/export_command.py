"""``anyy sessions export``: a session as JSONL (lossless: its whole tree) or Markdown (its current path)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import click

from anyy.cli.context import open_store, with_profile
from anyy.cli.output import write_text_file
from anyy.domain.export import to_jsonl, to_markdown
from anyy.profiles import Profile

if TYPE_CHECKING:
    from anyy.domain.entries import Entry
    from anyy.storage.protocol import SessionStore

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
    with open_store(profile) as store:
        session = store.get_session(session_id)
        if fmt == "jsonl":
            chunks = [line + "\n" for line in to_jsonl(session, _whole_tree(store, session_id))]
        else:
            chunks = _paragraphs(to_markdown(session, store.path(session_id)))
    if output is None:
        click.echo("".join(chunks), nl=False)
    else:
        write_text_file(output, chunks)
        click.echo(f"exported session {session_id} ({fmt}) to {output}", err=True)


def _whole_tree(store: SessionStore, session_id: str) -> list[Entry]:
    """Every entry of the session's tree, parents before children (the tree's depth-first order).

    The tree view holds previews only; the full entries are loaded along the path to each leaf, which
    covers every node once the paths are merged.
    """
    view = store.tree(session_id)
    loaded: dict[int, Entry] = {}
    for node in view.nodes:
        if node.children == 0 and node.id not in loaded:
            for entry in store.path(session_id, to=node.id):
                loaded.setdefault(entry.id, entry)
    return [loaded[node.id] for node in view.nodes]


def _paragraphs(blocks: Iterator[str]) -> list[str]:
    """Markdown blocks separated by a blank line (each block already ends with a newline)."""
    out: list[str] = []
    for block in blocks:
        if out:
            out.append("\n")
        out.append(block)
    return out
