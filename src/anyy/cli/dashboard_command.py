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
from anyy.domain.errors import AnyyError
from anyy.profiles.gateway_address import Address
from anyy.profiles.gateway_launch import ensure_gateway

if TYPE_CHECKING:
    from anyy.profiles import Profile


class NoGateway(AnyyError):
    pass


def one_time_code(address: Address) -> str:
    """A one-time code for the Dashboard, from the Gateway (``dashboard.code`` over HTTP, with the token in
    a header of this process's own request)."""
    import json
    import urllib.request

    request = urllib.request.Request(  # noqa: S310 - http to the Gateway's own address
        f"{address.url}/rpc",
        data=json.dumps({"jsonrpc": "2.0", "id": 1, "method": "dashboard.code"}).encode(),
        headers={"Authorization": f"Bearer {address.token}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as reply:  # noqa: S310 - as above
            answer = json.loads(reply.read())
    except OSError as exc:
        raise NoGateway(f"the Gateway at {address.url} did not answer ({exc}): try `anyy gateway status`") from None
    if "result" not in answer:
        raise NoGateway(f"the Gateway refused a Dashboard code: {answer.get('error', {}).get('message', answer)}")
    code: str = answer["result"]["code"]
    return code


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
@with_profile
def dashboard(profile: Profile, session_id: str | None, print_url: bool) -> None:
    """Open the Dashboard of the profile's Gateway in the web browser.

    Starts the Gateway first when none runs (and says so), as the TUI does.
    """
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
