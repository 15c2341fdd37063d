"""``anyy schedule add|update|list|show|pause|resume|remove|run``: schedules of the profile (SPEC K1).

Schedules fire in the profile's Gateway, so these commands go through it, starting one first when none
runs (and saying so), as the TUI and the Dashboard command do.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import click

from anyy.cli.context import with_profile
from anyy.cli.output import echo_json
from anyy.client.workspace import client_workspace
from anyy.domain.errors import AnyyError, InvalidInput
from anyy.profiles import Profile

_JSON = click.option("--json", "as_json", is_flag=True, help="Print JSON.")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86_400}
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*$")


@contextlib.contextmanager
def _gateway(profile: Profile) -> Iterator[Any]:
    from anyy.client.errors import CallFailed
    from anyy.client.launch import ensure_gateway
    from anyy.client.sync import connect

    address, started = ensure_gateway(profile)
    if started:
        click.echo(started, err=True)
    with connect(address) as client:
        try:
            yield client
        except CallFailed as exc:  # the Gateway's words, reported like any error of the CLI
            raise AnyyError(exc.message) from None


def _call(profile: Profile, method: str, params: dict[str, Any]) -> Any:
    with _gateway(profile) as client:
        return client.call(method, {k: v for k, v in params.items() if v is not None})


def seconds_of(text: str) -> float:
    """``90``, ``90s``, ``30m``, ``2h``, ``1d`` as seconds."""
    match = _DURATION.match(text)
    if match is None:
        raise InvalidInput(f"every: {text!r} is not a duration; write e.g. 30m, 2h, 1d or a number of seconds")
    return float(match.group(1)) * _UNITS[match.group(2) or "s"]


def moment_of(text: str, timezone: str) -> float:
    """An ISO date and time (in ``timezone`` unless it names its offset), or epoch seconds."""
    with contextlib.suppress(ValueError):
        return float(text)
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        raise InvalidInput(f"at: {text!r} is not a date and time; write e.g. 2026-07-01T09:30") from None
    if parsed.tzinfo is None:
        try:
            parsed = parsed.replace(tzinfo=ZoneInfo(timezone))
        except (ZoneInfoNotFoundError, ValueError):
            raise InvalidInput(f"timezone: {timezone!r} is not a known IANA time zone") from None
    return parsed.timestamp()


def _when(moment: float | None, timezone: str) -> str:
    if moment is None:
        return "never"
    try:
        zone: Any = ZoneInfo(timezone)
    except (ZoneInfoNotFoundError, ValueError):
        zone = None
    return datetime.fromtimestamp(moment, zone).strftime("%Y-%m-%d %H:%M %Z").strip()


def timing_text(timing: dict[str, Any]) -> str:
    kind = timing["kind"]
    zone = timing.get("timezone", "UTC")
    if kind == "cron":
        return f"cron '{timing['cron']}' ({zone})"
    if kind == "interval":
        return f"every {timing['every']:g} s"
    return f"once at {_when(timing['at'], zone)}"


def schedule_line(found: dict[str, Any]) -> str:
    zone = found["timing"].get("timezone", "UTC")
    state = "paused" if found["paused"] else f"next {_when(found['next_at'], zone)}"
    last = found.get("last_run")
    outcome = f"last {last['outcome']}" if last else "never ran"
    return f"{found['name']:<24}  {timing_text(found['timing']):<36}  {state:<30}  {outcome}"


def run_line(run: dict[str, Any], timezone: str) -> str:
    where = run["session_id"] or "-"
    error = f"  ({run['error']})" if run.get("error") else ""
    return f"{_when(run['scheduled_for'], timezone)}  {run['outcome']:<11}  {where}{error}"


@click.group()
def schedule() -> None:
    """Prompts that run on their own: by cron, every interval, or once (each run a Background session)."""


@schedule.command("add")
@click.argument("name")
@click.option("--prompt", required=True, help="What to send at each run.")
@click.option("--cron", default=None, help="5-field cron expression, e.g. '0 8 * * 1-5'.")
@click.option("--every", default=None, help="An interval: 30m, 2h, 1d (at least a minute).")
@click.option("--at", "at_text", default=None, help="One time: 2026-07-01T09:30 (in --tz) or epoch seconds.")
@click.option("--tz", "timezone", default="UTC", show_default=True, help="IANA time zone, e.g. Europe/Paris.")
@click.option("--catch-up", type=click.Choice(["skip", "once"]), default="skip", show_default=True)
@click.option("--role", default="default", show_default=True)
@click.option("--model", default="", help="provider/model or an alias (default: the profile's).")
@click.option("--tools", default=None, help="Comma-separated tools (default: the profile's).")
@click.option("--session", "session_id", default=None, help="Run in this session instead of a new one each time.")
@click.option("--paused", is_flag=True, help="Create it paused.")
@click.option(
    "--cwd",
    "cwd",
    metavar="DIR",
    default=None,
    help="The workspace its runs work in (default: the current directory).",
)
@with_profile
@_JSON
def add_command(
    profile: Profile, name: str, at_text: str | None, every: str | None, as_json: bool, **opts: Any
) -> None:
    """Add a schedule. Exactly one of --cron, --every, --at."""
    params: dict[str, Any] = {"name": name, **opts}
    params["workspace"] = client_workspace(params.pop("cwd"))  # W1: the current directory, or --cwd
    params["every"] = seconds_of(every) if every is not None else None
    params["at"] = moment_of(at_text, opts["timezone"]) if at_text is not None else None
    if opts["tools"] is not None:
        params["tools"] = [t.strip() for t in opts["tools"].split(",") if t.strip()]
    made = _call(profile, "schedule.create", params)
    if as_json:
        echo_json(made)
    else:
        click.echo(schedule_line(made))


@schedule.command("update")
@click.argument("name")
@click.option("--name", "new_name", default=None, help="A new name.")
@click.option("--prompt", default=None, help="What to send at each run.")
@click.option("--cron", default=None, help="A new timing: a 5-field cron expression.")
@click.option("--every", default=None, help="A new timing: an interval (30m, 2h, 1d).")
@click.option("--at", "at_text", default=None, help="A new timing: one time, 2026-07-01T09:30 (in --tz) or epoch.")
@click.option("--tz", "timezone", default=None, help="IANA time zone, e.g. Europe/Paris.")
@click.option("--catch-up", type=click.Choice(["skip", "once"]), default=None)
@click.option("--role", default=None)
@click.option("--model", default=None, help="provider/model or an alias.")
@click.option("--tools", default=None, help="Comma-separated tools ('' for none).")
@click.option("--session", "session_id", default=None, help="Run in this session instead of a new one each time.")
@click.option("--cwd", "cwd", metavar="DIR", default=None, help="The workspace its runs work in (W1).")
@click.option(
    "--reset",
    "resets",
    multiple=True,
    type=click.Choice(["timezone", "catch-up", "role", "model", "tools", "session", "cwd"]),
    help="Put a field back to its default (repeatable): session means a new Background session per run again; "
    "cwd the profile's default workspace.",
)
@with_profile
@_JSON
def update_command(
    profile: Profile,
    name: str,
    *,
    new_name: str | None,
    at_text: str | None,
    every: str | None,
    resets: tuple[str, ...],
    as_json: bool,
    **opts: Any,
) -> None:
    """Change a schedule: only the fields given change. A new timing starts from now."""
    params: dict[str, Any] = {key: value for key, value in opts.items() if value is not None}
    if new_name is not None:
        params["name"] = new_name
    if every is not None:
        params["every"] = seconds_of(every)
    if at_text is not None:
        with _gateway(profile) as client:
            zone = opts["timezone"] or client.call("schedule.get", {"schedule": name})["timing"].get("timezone", "UTC")
        params["at"] = moment_of(at_text, zone)
    if opts["tools"] is not None:
        params["tools"] = [t.strip() for t in opts["tools"].split(",") if t.strip()]
    if params.pop("cwd", None) is not None:
        params["workspace"] = client_workspace(opts["cwd"])  # a relative DIR: from where the command is typed
    for field in resets:
        key = {"catch-up": "catch_up", "session": "session_id", "cwd": "workspace"}.get(field, field)
        if key in params:
            raise click.UsageError(f"--reset {field} and a new value for it: give one or the other")
        params[key] = None
    if not params:
        raise click.UsageError("nothing to change: give the fields to change (see --help)")
    with _gateway(profile) as client:
        changed = client.call("schedule.update", {"schedule": name, **params})
    if as_json:
        echo_json(changed)
    else:
        click.echo(schedule_line(changed))


@schedule.command("list")
@with_profile
@_JSON
def list_command(profile: Profile, as_json: bool) -> None:
    """List the schedules: timing, next run, last outcome."""
    found = _call(profile, "schedule.list", {})
    if as_json:
        echo_json(found)
        return
    if not found:
        click.echo(f"no schedules in profile {profile.name!r}", err=True)
    for item in found:
        click.echo(schedule_line(item))


@schedule.command("show")
@click.argument("name")
@click.option("--runs", "count", type=click.IntRange(1, 500), default=10, show_default=True)
@with_profile
@_JSON
def show_command(profile: Profile, name: str, count: int, as_json: bool) -> None:
    """Show one schedule and its last runs (each with its session)."""
    with _gateway(profile) as client:
        found = client.call("schedule.get", {"schedule": name})
        runs = client.call("schedule.runs", {"schedule": name, "limit": count})
    if as_json:
        echo_json({"schedule": found, "runs": runs})
        return
    zone = found["timing"].get("timezone", "UTC")
    click.echo(f"schedule  {found['name']} ({found['id']})")
    click.echo(f"timing    {timing_text(found['timing'])}, catch-up {found['timing'].get('catch_up', 'skip')}")
    click.echo(f"next      {'paused' if found['paused'] else _when(found['next_at'], zone)}")
    click.echo(f"target    {found['session_id'] or 'a new Background session per run'}")
    click.echo(f"workspace {found.get('workspace') or 'the profile default'}")
    click.echo(f"role      {found['role']}")
    click.echo(f"prompt    {found['prompt']}")
    click.echo("runs" if runs else "runs      none yet")
    for run in runs:
        click.echo(f"  {run_line(run, zone)}")


def _simple(verb: str, method: str, doc: str) -> None:
    @schedule.command(verb, help=doc)
    @click.argument("name")
    @with_profile
    @_JSON
    def command(profile: Profile, name: str, as_json: bool) -> None:
        result = _call(profile, method, {"schedule": name})
        if as_json:
            echo_json(result)
        elif method == "schedule.delete":
            click.echo(f"removed schedule {name!r}")
        elif method == "schedule.run_now":
            click.echo(f"run queued in session {result['session_id']} ({result['outcome']})")
        else:
            click.echo(schedule_line(result))


_simple("pause", "schedule.pause", "Stop a schedule firing until resumed.")
_simple("resume", "schedule.resume", "Fire again, from the next time after now.")
_simple("remove", "schedule.delete", "Remove a schedule (the sessions of its runs stay).")
_simple("run", "schedule.run_now", "Run a schedule once now.")
