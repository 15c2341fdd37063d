"""``anyy resident add|list|show|pause|resume|remove`` (SPEC K3): residents through the profile's Gateway,
which runs their triggers. The webhook's secret is printed once, when it is made."""

from __future__ import annotations

import datetime
from typing import Any

import click

from anyy.cli.context import with_profile
from anyy.cli.output import echo_json
from anyy.profiles import Profile

_JSON = click.option("--json", "as_json", is_flag=True, help="Print JSON.")


def _call(profile: Profile, method: str, params: dict[str, Any] | None = None) -> Any:
    from anyy.client.sync import profile_client  # the Gateway client (websockets) only when needed

    with profile_client(profile) as client:
        return client.call(method, params)


def _when(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    return datetime.datetime.fromtimestamp(seconds).astimezone().strftime("%Y-%m-%d %H:%M")


def _line(resident: dict[str, Any]) -> str:
    beat = f"every {resident['heartbeat_seconds']:g} s" if resident["heartbeat_seconds"] else "no heartbeat"
    hook = resident["webhook_path"] or "no webhook"
    state = "paused" if resident["paused"] else "active"
    last = f"{_when(resident['last_wake_at'])} ({resident['last_trigger']})" if resident["last_wake_at"] else "-"
    return (
        f"{resident['name']}  {state}  {beat}  {hook}  last wake {last}  next {_when(resident['next_wake_at'])}  "
        f"session {resident['session_id']}"
    )


def _show(created: dict[str, Any], profile: Profile) -> None:
    click.echo(_line(created["resident"]))
    if created.get("secret"):
        click.echo(f"webhook secret (shown once): {created['secret']}")
        click.echo(
            f"call it: curl -X POST -H 'Authorization: Bearer SECRET' --data-binary @message.txt "
            f"http://HOST:PORT{created['resident']['webhook_path']}  (the address: anyy gateway status "
            f"--profile {profile.name})"
        )


@click.group()
def resident() -> None:
    """Residents: long-lived Background sessions woken by a heartbeat and by their own webhook."""


@resident.command("add")
@click.argument("name")
@with_profile
@click.option("--instructions", "-i", required=True, help="Its standing instructions (sent with every wake).")
@click.option("--every", type=click.FloatRange(min=0), default=0.0, help="Heartbeat, in seconds (>= 60; 0: none).")
@click.option("--note", default="", help="What each heartbeat says.")
@click.option("--webhook", is_flag=True, help="Give it a webhook (POST /hooks/NAME with its own secret).")
@click.option("--role", default="default", show_default=True, help="The role of its session.")
@click.option(
    "--cwd",
    "cwd",
    metavar="DIR",
    default=None,
    help="The workspace its session's tools work in (default: the current directory).",
)
@_JSON
def add_command(
    profile: Profile,
    name: str,
    *,
    instructions: str,
    every: float,
    note: str,
    webhook: bool,
    role: str,
    cwd: str | None,
    as_json: bool,
) -> None:
    """Create the resident NAME."""
    from anyy.client.workspace import client_workspace

    params = {
        "name": name,
        "instructions": instructions,
        "heartbeat_seconds": every,
        "heartbeat_note": note,
        "webhook": webhook,
        "role": role,
        "workspace": client_workspace(cwd),  # W1: the current directory, or --cwd
    }
    created = _call(profile, "resident.create", params)
    if as_json:
        echo_json(created)
    else:
        _show(created, profile)


@resident.command("list")
@with_profile
@_JSON
def list_command(profile: Profile, as_json: bool) -> None:
    """The residents, with their triggers and last and next wake."""
    residents = _call(profile, "resident.list")
    if as_json:
        echo_json(residents)
    elif not residents:
        click.echo(f"no residents in profile {profile.name}: add one with `anyy resident add NAME -i TEXT`")
    for each in [] if as_json else residents:
        click.echo(_line(each))


@resident.command("show")
@click.argument("name")
@with_profile
@_JSON
def show_command(profile: Profile, name: str, as_json: bool) -> None:
    """One resident, by name or id."""
    found = _call(profile, "resident.get", {"name": name})
    if as_json:
        echo_json(found)
    else:
        click.echo(_line(found))
        click.echo(f"instructions: {found['instructions']}")
        if found["heartbeat_note"]:
            click.echo(f"heartbeat note: {found['heartbeat_note']}")


def _simple(method: str, done: str) -> Any:
    @click.argument("name")
    @with_profile
    @_JSON
    def command(profile: Profile, name: str, as_json: bool) -> None:
        result = _call(profile, method, {"name": name})
        if as_json:
            echo_json(result)
        else:
            click.echo(f"{done} {result['name']}")

    return command


resident.command("pause", help="Stop a resident's triggers until it is resumed.")(_simple("resident.pause", "paused"))
resident.command("resume", help="Start a paused resident's triggers again.")(_simple("resident.resume", "resumed"))
resident.command("remove", help="Remove a resident and its triggers (its session stays).")(
    _simple("resident.delete", "removed")
)
