"""The ``ameesh`` command line. The orchestrator itself arrives with its own issue; this entry point
already exists so that packaging, the console script and the layer contracts are in place."""

from __future__ import annotations

import click

from ameesh import __version__


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="ameesh")
def main() -> None:
    """Orchestrate coding agents on their harness sessions (Claude Code, Codex CLI, anyy)."""
