"""``anyy [--resume ID | --role NAME]``: find (or start) the profile's Gateway, then run the TUI."""

from __future__ import annotations

from anyy.client.launch import ensure_gateway
from anyy.domain.errors import AnyyError
from anyy.profiles.gateway_address import read_address
from anyy.profiles.profile import Profile
from anyy.tui.app import AnyyApp


class TuiError(AnyyError):
    pass


def run_tui(
    profile: Profile, *, resume: str | None = None, role: str | None = None, workspace: str | None = None
) -> None:
    address, note = ensure_gateway(profile)
    locate = lambda: read_address(profile)  # noqa: E731
    app = AnyyApp(address, session_id=resume, role=role, note=note, locate=locate, workspace=workspace)
    app.run()
    if app.failure is not None:
        raise TuiError(app.failure)
