"""The ``anyy`` command line: a group of nouns (``profile``, ``sessions``, ``gateway``) and their verbs, and
``chat``.

Start-up stays fast: this module and the command modules import only click, msgspec and the profiles
package; anything backed by SQLite, and the Gateway client (websockets), is imported inside the commands
that use it.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import click

from anyy import __version__
from anyy.cli.acp_command import acp
from anyy.cli.backup_commands import backup, restore
from anyy.cli.channel_commands import channel
from anyy.cli.chat_command import chat
from anyy.cli.context import PROFILE_HELP, CliState, selected_profile
from anyy.cli.dashboard_command import dashboard
from anyy.cli.devices_commands import devices
from anyy.cli.doctor_command import doctor
from anyy.cli.gateway_commands import gateway
from anyy.cli.hooks_commands import hooks
from anyy.cli.import_command import import_command
from anyy.cli.money_commands import budget, usage
from anyy.cli.profile_commands import profile
from anyy.cli.resident_commands import resident
from anyy.cli.schedule_commands import schedule
from anyy.cli.sessions_commands import sessions
from anyy.cli.store_commands import store
from anyy.domain.errors import AnyyError

# Exit status of a command that reported an error; click uses 2 for usage errors.
EXIT_ERROR = 1


class AnyyGroup(click.Group):
    """Reports anyy's own errors as ``error: <message>`` on stderr, without a traceback."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except AnyyError as exc:
            click.echo(f"error: {exc}", err=True)
            ctx.exit(EXIT_ERROR)
        except BrokenPipeError:
            # `anyy sessions list | head`: the reader left; nothing to report, and nothing more to flush.
            _silence_stdout()
            ctx.exit(EXIT_ERROR)
        except OSError as exc:
            # A file the user named (export -o) or the profile folder itself could not be used.
            click.echo(f"error: {exc}", err=True)
            ctx.exit(EXIT_ERROR)


def _silence_stdout() -> None:
    """Point stdout at /dev/null so that the interpreter's final flush does not fail a second time."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # no real file descriptor (tests capture stdout)
        pass


@click.group(cls=AnyyGroup, invoke_without_command=True, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="anyy")
@click.option("--profile", "profile_option", metavar="NAME", default=None, help=PROFILE_HELP)
@click.option("--resume", metavar="ID", default=None, help="TUI: open this session (it keeps its own role).")
@click.option("--role", metavar="NAME", default=None, help="TUI: start a new session with this role.")
@click.option(
    "--cwd", metavar="DIR", default=None, help="TUI: a new session's workspace (default: the current directory)."
)
@click.pass_context
def main(ctx: click.Context, profile_option: str | None, resume: str | None, role: str | None, cwd: str | None) -> None:
    """anyy, a personal agent runtime whose conversations last.

    Everything belongs to a profile: a folder under $ANYY_HOME (default: the platform's data folder).
    Without a command, opens the TUI on a new session (starting the profile's Gateway if needed).
    """
    ctx.obj = CliState(profile_option=profile_option)
    if ctx.invoked_subcommand is not None:
        if resume is not None or role is not None or cwd is not None:
            raise click.UsageError("--resume, --role and --cwd open the TUI: give them without a command")
        return
    if resume is not None and role is not None:
        raise click.UsageError("--role starts a new session: a resumed session keeps its own role (B3)")
    if resume is not None and cwd is not None:
        raise click.UsageError("--cwd chooses a new session's workspace: move a resumed one with /cwd DIR")
    from anyy.client.workspace import client_workspace
    from anyy.domain.errors import InvalidInput
    from anyy.tui.launch import run_tui  # Textual is loaded only when the TUI opens

    try:  # W1: a new session works where the TUI was started, or in --cwd
        workspace = client_workspace(cwd)
    except InvalidInput as exc:
        raise click.UsageError(str(exc)) from None
    run_tui(selected_profile(profile_option), resume=resume, role=role, workspace=workspace)


main.add_command(profile)
main.add_command(sessions)
main.add_command(gateway)
main.add_command(chat)
main.add_command(backup)
main.add_command(restore)
main.add_command(dashboard)
main.add_command(store)
main.add_command(resident)
main.add_command(doctor)
main.add_command(schedule)
main.add_command(hooks)
main.add_command(channel)
main.add_command(acp)
main.add_command(devices)
main.add_command(usage)
main.add_command(budget)
main.add_command(import_command)


if __name__ == "__main__":
    main()
