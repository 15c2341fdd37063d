"""``anyy doctor [--repair] [--json]``: check the profile's store, repair what is safe (D11)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click
import msgspec

from anyy.cli.context import with_profile
from anyy.cli.output import echo_json
from anyy.profiles import Profile

if TYPE_CHECKING:
    from anyy.storage.checks import Finding

LABELS = {
    "integrity": "integrity",
    "search_index": "search index",
    "objects": "objects",
    "executions": "running work",
    "queue": "queues",
    "file_captures": "file captures",
}


def _line(finding: Finding) -> str:
    label = f"{LABELS.get(finding.check, finding.check):<14}"
    if finding.skipped:
        return f"  {label}skipped: {finding.skipped}"
    if not finding.problems:
        return f"  {label}ok" + (f" ({'; '.join(finding.details)})" if finding.details else "")
    said = "; ".join(finding.details)
    done = f" — repaired {finding.repaired}" if finding.repaired else ""
    return f"  {label}{finding.problems} problem(s): {said}{done}"


@click.command("doctor")
@with_profile
@click.option("--repair", is_flag=True, help="Repair what can be repaired safely (the Gateway must be stopped).")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def doctor(profile: Profile, repair: bool, as_json: bool) -> None:
    """Check the profile's store: its integrity, the search index against the messages, objects against
    their references, work left running with no Gateway, queue items held by ended work.

    With --repair, fix what can be fixed without guessing at lost data and say what was done; what stays
    (a damaged object, a broken tree) needs a backup (`anyy restore`). Exit status 0 when nothing is left
    wrong, 1 otherwise. Checking works while the Gateway runs; repairing needs it stopped.
    """
    from anyy.profiles.doctor import doctor as run_doctor  # imported here: it opens the store
    from anyy.profiles.exposure import exposure, exposure_lines

    report = run_doctor(profile, repair=repair)
    exposed = exposure(profile)  # how the Gateway is reachable (O4)
    if as_json:
        echo_json({**msgspec.to_builtins(report), "exposure": exposed})
    else:
        where = "PostgreSQL" if report.backend == "postgresql" else "SQLite"
        click.echo(f"anyy doctor: profile {report.profile} ({where} store)")
        for finding in report.findings:
            click.echo(_line(finding))
        for line in exposure_lines(exposed):
            click.echo(line)
        if not report.left:
            tail = f"repaired {report.repaired} problem(s); nothing left" if report.repaired else "no problem found"
            click.echo(tail)
        elif repair:
            click.echo(f"{report.left} problem(s) cannot be repaired safely: restore a backup (`anyy restore`)")
        else:
            click.echo(f"{report.left} problem(s); `anyy doctor --repair` repairs what can be repaired safely")
    if report.left:
        raise SystemExit(1)
