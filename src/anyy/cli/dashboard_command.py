"""``anyy dashboard``: open the profile's Dashboard (served by its Gateway at ``/``) in the browser.

The access token goes in the URL *fragment* (``#token=…``): browsers never send a fragment to a server
nor put it in a Referer, and the page moves it into its tab's sessionStorage at once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from anyy.cli.context import with_profile
from anyy.client.launch import ensure_gateway
from anyy.domain.errors import AnyyError
from anyy.profiles.gateway_address import Address

if TYPE_CHECKING:
    from anyy.profiles import Profile


class NoGateway(AnyyError):
    pass


def dashboard_url(address: Address, session_id: str | None = None) -> str:
    """The Dashboard's address with the token in the fragment (and the session to open, if any)."""
    fragment = f"token={address.token}"
    if session_id:
        fragment += f"&session={session_id}"
    return f"{address.url}/#{fragment}"


@click.command("dashboard")
@click.option("--session", "session_id", metavar="ID", default=None, help="Open this conversation.")
@click.option("--print-url", is_flag=True, help="Print the address (it holds the access token) instead of opening it.")
@with_profile
def dashboard(profile: Profile, session_id: str | None, print_url: bool) -> None:
    """Open the Dashboard of the profile's Gateway in the web browser.

    Starts the Gateway first when none runs (and says so), as the TUI does.
    """
    address, started = ensure_gateway(profile)
    if started:
        click.echo(started, err=True)
    url = dashboard_url(address, session_id)
    if print_url:
        click.echo(url)
        return
    import webbrowser  # loaded only by this command

    if not webbrowser.open(url):
        raise NoGateway(f"could not start a web browser; open the Dashboard at {address.url}/ with `--print-url`")
    click.echo(f"Dashboard of profile {profile.name!r} opened at {address.url}/")
