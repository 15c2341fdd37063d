"""``anyy hooks list|trust|untrust|test`` (SPEC N6): the profile's hooks, and which of them may run.

A hook runs in the Gateway only while the user trusts its exact content: ``trust`` records the
fingerprint of its command line and of the files it names (``anyy.hooks.trust``); a new command or an
edited script is not run until it is trusted again. The Gateway reads the record at each run, so a trust
or an untrust applies at once, without a restart.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import click
import msgspec

from anyy.cli.context import with_profile
from anyy.cli.output import echo_json
from anyy.domain.errors import InvalidInput
from anyy.hooks.settings import HookEvent, HookSettings, argv
from anyy.hooks.survey import HookLine, survey
from anyy.hooks.trust import TRUST_FILE, trust, untrust
from anyy.profiles import Profile

MARKS = {"trusted": "trusted", "untrusted": "NOT TRUSTED", "changed": "CHANGED", "missing": "MISSING"}


@click.group("hooks")
def hooks() -> None:
    """Your own commands run before and after tool calls and at session, submission and execution events
    ([hooks] in config.toml; docs/tools.md, "Hooks"). A hook runs only once you trusted it."""


def _lines(profile: Profile) -> list[HookLine]:
    return survey(profile.load_config().hooks, profile.path / TRUST_FILE)


def _chosen(lines: list[HookLine], names: tuple[str, ...], every: bool) -> list[HookLine]:
    """The hooks named (NAME or EVENT:NAME), or with ``every`` all of them; an unknown name is an error."""
    if every or not names:
        return lines
    chosen = []
    for wanted in names:
        event, _, name = wanted.rpartition(":")
        found = [line for line in lines if line.name == name and (not event or line.event == event)]
        if not found:
            known = ", ".join(f"{line.event}:{line.name}" for line in lines) or "none configured"
            raise InvalidInput(f"no hook named {wanted!r} in [hooks] (the hooks: {known})")
        chosen += [line for line in found if line not in chosen]
    return chosen


@hooks.command("list")
@with_profile
@click.option("--json", "as_json", is_flag=True, help="Print the hooks as JSON.")
def list_hooks(profile: Profile, as_json: bool) -> None:
    """Every hook of the profile, with whether it runs (trusted) or why not."""
    lines = _lines(profile)
    if as_json:
        echo_json([{k: v for k, v in _record(line).items() if k != "fingerprint"} for line in lines])
        return
    if not lines:
        click.echo(f"no hooks in {profile.config_path} ([hooks]; docs/tools.md)")
        return
    for line in lines:
        matcher = f" [{line.matcher}]" if line.matcher else ""
        click.echo(f"{line.event}:{line.name}{matcher}  {MARKS[line.standing]}  (timeout {line.timeout:g} s)")
        click.echo(f"    {' '.join(line.command)}")
        if line.reason:
            click.echo(f"    not run: {line.reason}")


@hooks.command("trust")
@with_profile
@click.argument("names", nargs=-1, metavar="[NAME|EVENT:NAME]...")
@click.option("--all", "every", is_flag=True, help="Every configured hook (the default without names).")
def trust_hooks(profile: Profile, names: tuple[str, ...], every: bool) -> None:
    """Let hooks run as they are now: records the hash of each one's command line and of the files it
    names. Read a hook before you trust it: it runs with your rights, outside the tools' sandbox."""
    lines = [line for line in _chosen(_lines(profile), names, every) if line.standing != "missing"]
    added = trust(profile.path / TRUST_FILE, [line.fingerprint for line in lines])
    for line in lines:
        said = "trusted" if line.fingerprint in added else "already trusted"
        click.echo(f"{said}: {line.event}:{line.name}  {' '.join(line.command)}")
        for path, digest in line.fingerprint.files.items():
            click.echo(f"    {path}  sha256 {digest[:16]}…")
    if not lines:
        click.echo("nothing to trust (no hook configured, or their programs are missing: `anyy hooks list`)")


@hooks.command("untrust")
@with_profile
@click.argument("names", nargs=-1, metavar="[NAME|EVENT:NAME]...")
@click.option("--all", "every", is_flag=True, help="Every configured hook (the default without names).")
def untrust_hooks(profile: Profile, names: tuple[str, ...], every: bool) -> None:
    """Stop hooks from running until they are trusted again."""
    lines = _chosen(_lines(profile), names, every)
    removed = untrust(profile.path / TRUST_FILE, [line.command for line in lines])
    click.echo(f"untrusted {removed} hook command(s)")


@hooks.command("test")
@with_profile
@click.argument("name", metavar="NAME|EVENT:NAME")
@click.option("--tool", default="shell", show_default=True, help="The tool name sent (pre_tool, post_tool).")
@click.option(
    "--arguments", "arguments", default='{"command": "echo hello"}', show_default=True, help="The call's arguments."
)
@click.option("--text", default="hello", show_default=True, help="The message sent (submission).")
@click.option("--json", "as_json", is_flag=True, help="Print what came back as JSON.")
def test_hook(profile: Profile, *, name: str, tool: str, arguments: str, text: str, as_json: bool) -> None:
    """Run one hook now on a sample event, in the current directory, and show its answer. It runs because
    you ask, trusted or not (the Gateway runs trusted hooks only)."""
    [line] = _chosen(_lines(profile), (name,), False)[:1]
    try:
        call_arguments = json.loads(arguments)
    except ValueError as exc:
        raise InvalidInput(f"--arguments is not JSON: {exc}") from None
    config = profile.load_config()
    hook = _settings_of(config.hooks.of(line.event), line)
    payload = _sample(line.event, profile, tool=tool, arguments=call_arguments, text=text)
    env = {**os.environ, "ANYY_HOOK_EVENT": line.event, "ANYY_PROFILE": profile.name, "ANYY_WORKDIR": os.getcwd()}
    data = json.dumps(payload, ensure_ascii=False).encode()
    import asyncio  # the Gateway's runner, here only for this command

    from anyy.hooks.runner import run_hook

    ran = asyncio.run(run_hook(argv(hook), data, cwd=Path.cwd(), timeout=hook.timeout, env=env))
    if as_json:
        echo_json(
            {
                "hook": f"{line.event}:{line.name}",
                "trust": line.standing,
                "ok": ran.ok,
                "problem": ran.problem,
                "answer": ran.answer,
                "seconds": round(ran.seconds, 3),
            }
        )
        return
    click.echo(f"{line.event}:{line.name} ({MARKS[line.standing]}) ran in {ran.seconds * 1000:.0f} ms")
    if not ran.ok:
        click.echo(f"  failed: {ran.problem}" + ("  → the call would be denied" if line.event == "pre_tool" else ""))
        return
    click.echo(f"  decision: {ran.answer.decision or 'none (the approval rules decide)'}")
    if ran.answer.reason:
        click.echo(f"  reason: {ran.answer.reason}")
    if ran.answer.context:
        click.echo(f"  context: {ran.answer.context}")


def _settings_of(hooks: list[HookSettings], line: HookLine) -> HookSettings:
    return next(hook for hook in hooks if argv(hook) == line.command)


def _sample(event: HookEvent, profile: Profile, *, tool: str, arguments: Any, text: str) -> dict[str, Any]:
    body: dict[str, Any] = {
        "event": event,
        "profile": profile.name,
        "workdir": os.getcwd(),
        "session_id": "test-session",
        "execution_id": "test-execution",
    }
    if event in ("pre_tool", "post_tool"):
        body.update(tool_call_id="test-call", parent_call_id="", tool_name=tool, arguments=arguments)
    if event == "post_tool":
        body.update(result="hello", is_error=False)
    if event == "submission":
        body.update(entry_id=0, text=text)
    if event == "execution_end":
        body.update(state="completed")
    return body


def _record(line: HookLine) -> dict[str, Any]:
    record: dict[str, Any] = msgspec.to_builtins(line)
    return record
