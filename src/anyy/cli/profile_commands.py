"""``anyy profile list|create|show|path``: the folders everything else lives in (SPEC A1, A4, B4)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from anyy.cli.context import open_store, selected_profile, with_profile
from anyy.cli.output import echo_json
from anyy.domain.sessions import SessionKind
from anyy.profiles import Profile, anyy_home, create_profile, get_profile, list_profiles

if TYPE_CHECKING:
    from anyy.storage.protocol import SessionStore

_PAGE = 500


@click.group()
def profile() -> None:
    """Create and inspect profiles (one folder per person: settings, sessions, memory, roles)."""


@profile.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def list_command(as_json: bool) -> None:
    """List the profiles under the anyy home; '*' marks the selected one."""
    home = anyy_home()
    selected = selected_profile(create_default=False).name
    found = list_profiles(home)
    if as_json:
        echo_json([{"name": p.name, "path": p.path, "selected": p.name == selected} for p in found])
        return
    if not found:
        click.echo(f"no profiles yet under {home}; create one with `anyy profile create NAME`", err=True)
        return
    width = max(len(p.name) for p in found)
    for item in found:
        mark = "*" if item.name == selected else " "
        click.echo(f"{mark} {item.name:<{width}}  {item.path}")


@profile.command("create")
@click.argument("name")
@click.option("--exist-ok", is_flag=True, help="Keep an existing profile and only add its missing files.")
def create_command(name: str, exist_ok: bool) -> None:
    """Create the profile NAME: config.toml, state.db, objects/, memory/, roles/default.toml."""
    created = create_profile(anyy_home(), name, exist_ok=exist_ok)
    with open_store(created):
        pass  # opening the store creates state.db and its schema
    click.echo(f"profile {created.name!r} ready at {created.path}")


@profile.command("show")
@click.argument("name", required=False)
@with_profile
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def show_command(profile: Profile, name: str | None, as_json: bool) -> None:
    """Show a profile (NAME, default the selected one): folder, model, roles, sessions."""
    shown = (get_profile(anyy_home(), name) if name else profile).require()
    config = shown.load_config()
    counts = _session_counts(shown)
    summary: dict[str, Any] = {
        "name": shown.name,
        "path": shown.path,
        "config": shown.config_path,
        "model": {
            "provider": config.model.provider,
            "model": config.model.model,
            "effort": config.model.effort,
        },
        "providers": config.provider_names(),
        "roles": shown.list_roles(),
        "sessions": counts,
        "memory": {"user": shown.user_memory_path, "memory": shown.memory_path},
    }
    if as_json:
        echo_json(summary)
        return
    effort = f", effort {config.model.effort}" if config.model.effort else ""
    click.echo(f"profile   {shown.name}")
    click.echo(f"folder    {shown.path}")
    click.echo(f"model     {config.model.provider}/{config.model.model}{effort}")
    click.echo(f"roles     {', '.join(summary['roles']) or 'none'}")
    click.echo(f"sessions  {counts['chat']} chats, {counts['background']} background")
    click.echo(f"memory    {shown.user_memory_path}, {shown.memory_path}")


@profile.command("path")
@click.argument("name", required=False)
@with_profile
def path_command(profile: Profile, name: str | None) -> None:
    """Print the folder of a profile (NAME, default the selected one)."""
    shown = get_profile(anyy_home(), name) if name else profile
    click.echo(str(shown.require().path))


def _session_counts(shown: Profile) -> dict[str, int]:
    if not shown.db_path.exists():
        return {"chat": 0, "background": 0}  # nothing recorded yet; reading must not create state.db
    with open_store(shown) as store:
        return {"chat": _count(store, "chat"), "background": _count(store, "background")}


def _count(store: SessionStore, kind: SessionKind) -> int:
    total = 0
    cursor: str | None = None
    while True:
        page = store.list_sessions(kind=kind, limit=_PAGE, cursor=cursor)
        total += len(page.items)
        cursor = page.next_cursor
        if cursor is None:
            return total
