"""The workspace a client asks for (SPEC W1): the directory it was started in, or ``--cwd DIR``. A relative
DIR is resolved here, against the client's own directory; the Gateway checks that it exists, makes it
canonical and applies the profile's roots."""

from __future__ import annotations

import os
from pathlib import Path

from anyy.domain.errors import InvalidInput


def client_workspace(chosen: Path | str | None = None) -> str:
    """``chosen`` as an absolute path, or the current directory when None."""
    try:
        here = os.getcwd()
    except FileNotFoundError:
        if chosen is not None and os.path.isabs(chosen):
            return os.path.normpath(chosen)
        raise InvalidInput(
            "the current directory no longer exists, so it cannot be the session's workspace: cd into a folder "
            "that exists, or give one with --cwd DIR"
        ) from None
    if chosen is None:
        return here
    return os.path.normpath(os.path.join(here, os.path.expanduser(str(chosen))))


def shown(workspace: str | None) -> str:
    """How clients show a session's workspace: a session made before workspaces works in the Gateway's
    working directory, and says so; the home directory is written ``~``."""
    if workspace is None:
        return "(the Gateway's working directory)"
    home = os.path.expanduser("~")
    if home not in ("", "/") and (workspace == home or workspace.startswith(home + "/")):
        return "~" + workspace[len(home) :]
    return workspace
