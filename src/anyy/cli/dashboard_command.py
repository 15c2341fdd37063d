"""``anyy dashboard``: open the profile's Dashboard (served by its Gateway at ``/``) in the browser.

The browser gets a one-time code in the URL *fragment* (``#code=…``), never the access token: a
browser's command line is visible to every local user (``ps``), and a code works once, for two minutes
(the page trades it for the token at once). Browsers never send a fragment to a server nor put it in a
Referer.
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


def one_time_code(address: Address) -> str:
    """A one-time code for the Dashboard, from the Gateway (``dashboard.code``, asked with the token by
    this process)."""
    from anyy.api.methods import DASHBOARD_CODE
    from anyy.api.params import NoParams
    from anyy.client.errors import CallFailed, GatewayUnavailable
    from anyy.client.sync import connect

    try:
        with connect(address) as client:
            return client.call(DASHBOARD_CODE, NoParams(), timeout=10).code
    except (GatewayUnavailable, TimeoutError) as exc:
        why = exc if str(exc) else "no answer within 10 s"
        raise NoGateway(f"the Gateway at {address.url} did not answer ({why}): try `anyy gateway status`") from None
    except CallFailed as exc:
        raise NoGateway(f"the Gateway refused a Dashboard code: {exc.message}") from None


def dashboard_url(address: Address, code: str, session_id: str | None = None) -> str:
    """The Dashboard's address with a one-time code in the fragment (and the session to open, if any)."""
    fragment = f"code={code}"
    if session_id:
        fragment += f"&session={session_id}"
    return f"{address.url}/#{fragment}"


@click.command("dashboard")
@click.option("--session", "session_id", metavar="ID", default=None, help="Open this conversation.")
@click.option(
    "--print-url", is_flag=True, help="Print the address instead of opening it (its code works once, for 2 minutes)."
)
@click.option(
    "--revoke",
    is_flag=True,
    help="Forget every browser this profile's Dashboard was opened in: their tabs need `anyy dashboard` again.",
)
@with_profile
def dashboard(profile: Profile, session_id: str | None, print_url: bool, revoke: bool) -> None:
    """Open the Dashboard of the profile's Gateway in the web browser.

    Starts the Gateway first when none runs (and says so), as the TUI does. A browser it was opened in comes
    back by itself after a Gateway restart (a key kept as a cookie); --revoke forgets those keys.
    """
    if revoke:
        from anyy.profiles.browser_keys import revoke_keys

        count = revoke_keys(profile)
        click.echo(f"Forgot {count} browser key{'s' * (count != 1)}: open tabs stop at the next Gateway restart.")
        return
    address, started = ensure_gateway(profile)
    if started:
        click.echo(started, err=True)
    url = dashboard_url(address, one_time_code(address), session_id)
    if print_url:
        click.echo(url)
        return
    import webbrowser  # loaded only by this command

    if not webbrowser.open(url):
        raise NoGateway(f"could not start a web browser; open the Dashboard at {address.url}/ with `--print-url`")
    click.echo(f"Dashboard of profile {profile.name!r} opened at {address.url}/")
