"""``anyy usage`` and ``anyy budget`` (SPEC Y1-Y3): what model calls cost, and the budgets that stop them,
through the profile's Gateway."""

from __future__ import annotations

import datetime
import re
from typing import Any

import click

from anyy.cli.context import with_profile
from anyy.cli.output import echo_json
from anyy.profiles import Profile

_GROUPS = ("day", "session", "tree", "model", "schedule", "resident", "role", "channel")
_AGO = re.compile(r"^(\d+)([dhw])$")


def _call(profile: Profile, method: str, params: dict[str, Any] | None = None) -> Any:
    from anyy.client.sync import profile_client  # the Gateway client (websockets) only when needed

    with profile_client(profile) as client:
        return client.call(method, params)


def parse_since(text: str | None, now: datetime.datetime | None = None) -> float:
    """``7d``, ``12h``, ``2w`` ago, or a date ``YYYY-MM-DD`` (UTC); None: always."""
    if not text:
        return 0.0
    now = now or datetime.datetime.now(datetime.UTC)
    ago = _AGO.match(text.strip())
    if ago is not None:
        unit = {"d": "days", "h": "hours", "w": "weeks"}[ago.group(2)]
        return (now - datetime.timedelta(**{unit: int(ago.group(1))})).timestamp()
    try:
        day = datetime.date.fromisoformat(text.strip())
    except ValueError:
        raise click.BadParameter(f"{text!r}: write a date (2026-12-01) or a span back from now (7d, 12h, 2w)") from None
    return datetime.datetime(day.year, day.month, day.day, tzinfo=datetime.UTC).timestamp()


def _tokens(line: dict[str, Any]) -> str:
    parts = [f"in {line['input']:,}", f"out {line['output']:,}"]
    if line["cache_read"] or line["cache_write"]:
        parts.append(f"cache r/w {line['cache_read']:,}/{line['cache_write']:,}")
    if line["reasoning"]:
        parts.append(f"reasoning {line['reasoning']:,}")
    return ", ".join(parts)


@click.command("usage")
@with_profile
@click.option("--by", type=click.Choice(_GROUPS), default="day", show_default=True, help="How calls are grouped.")
@click.option("--since", default=None, metavar="WHEN", help="From a date (YYYY-MM-DD, UTC) or a span ago (7d, 12h).")
@click.option("--session", "session_id", default=None, help="Only this session with its delegated children.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (costs in nano-dollars, and as text).")
def usage(profile: Profile, *, by: str, since: str | None, session_id: str | None, as_json: bool) -> None:
    """What the model calls cost: totals by day, session, model, schedule... (unpriced calls apart)."""
    params = {"by": by, "since": parse_since(since), "session_id": session_id}
    report = _call(profile, "usage.report", params)
    if as_json:
        echo_json(report)
        return
    lines = report["lines"]
    if not lines:
        click.echo("No model calls in this period.")
    width = max([len(line["key"] or "-") for line in lines] + [5])
    for line in lines:
        key = line["key"] or "-"
        click.echo(f"{key:<{width}}  {line['usd']:>14}  {line['calls']:>6} calls  {_tokens(line)}")
    total = report["total"]
    if lines:
        click.echo(f"{'total':<{width}}  {total['usd']:>14}  {total['calls']:>6} calls  {_tokens(total)}")
    if total["unpriced"]:
        click.echo(
            f"{total['unpriced']} call(s) had no price (their model is not in the price table): add "
            '[prices."provider/model"] to config.toml to price them.'
        )
    click.echo(f"Prices: {report['prices']}.")


@click.group()
def budget() -> None:
    """Budgets: limits on what model calls may spend, checked before each call."""


def _show_budgets(found: dict[str, Any]) -> None:
    if not found["budgets"]:
        click.echo("No budget: set [budgets] in config.toml, or `anyy budget set session:ID DOLLARS`.")
    for item in found["budgets"]:
        where = "config.toml [budgets]" if item["source"] == "config" else "set"
        click.echo(f"{item['scope']:<40}  {item['usd']:>12}  ({where})")
    click.echo(f"A warning is sent at {found['warn_at']:.0%} of a budget.")


@budget.command("list")
@with_profile
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def budget_list(profile: Profile, *, as_json: bool) -> None:
    """The budgets in force."""
    found = _call(profile, "budget.list")
    echo_json(found) if as_json else _show_budgets(found)


@budget.command("set")
@click.argument("scope")
@click.argument("dollars")
@with_profile
@click.option("--continue", "go_on", is_flag=True, help="Then let the session (session:ID) go on where it stopped.")
def budget_set(profile: Profile, scope: str, dollars: str, *, go_on: bool) -> None:
    """Set the budget of SCOPE (session:ID, schedule:ID or resident:ID) to DOLLARS ("none": back to the
    [budgets] default). With --continue, a session its budget stopped goes on."""
    if dollars.strip().lower() == "none":
        usd: float | None = None
    else:
        try:
            usd = float(dollars.strip().lstrip("$"))
        except ValueError:
            raise click.BadParameter(f"{dollars!r}: write an amount in dollars (2.50) or none") from None
        if usd < 0:
            raise click.BadParameter("a budget cannot be negative")
    _show_budgets(_call(profile, "budget.set", {"scope": scope, "usd": usd}))
    kind, _, ident = scope.partition(":")
    if go_on and kind == "session":
        _call(profile, "session.continue", {"session_id": ident})
        click.echo(f"Session {ident} goes on.")
