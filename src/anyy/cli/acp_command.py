"""``anyy acp``: an Agent Client Protocol agent on stdio for editors (Zed, JetBrains, Neovim…), bridged
to the profile's Gateway (docs/acp.md). The ACP SDK is imported by the command only."""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

import click

from anyy.cli.context import with_profile

if TYPE_CHECKING:
    from anyy.profiles import Profile


@click.command("acp")
@with_profile
def acp(profile: Profile) -> None:
    """Speak the Agent Client Protocol on stdin/stdout, for an editor.

    Every ACP session is a session of the profile, kept by its Gateway (started first when none runs,
    said on stderr): an editor restarted later loads it again, whole. Set it up in the editor as an
    agent server whose command is `anyy acp` (docs/acp.md).
    """
    profile.require()
    try:
        from anyy.acp.serve import run
    except ImportError:
        raise click.ClickException(
            "the ACP SDK is not installed: pip install 'anyy[acp]' (the agent-client-protocol package)"
        ) from None
    with contextlib.suppress(KeyboardInterrupt):  # the editor ended us: nothing to say
        run(profile)
