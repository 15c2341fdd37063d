"""Roles (SPEC B3, B4, M3): ``roles/NAME.toml`` in the profile, giving the agent an identity and a Soul.

A role sets identity and Soul only. Tools and Codemode are profile settings or per-session choices, so a
role file that tries to set them is refused with a message saying where they belong.
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from anyy.domain.errors import NotFound
from anyy.profiles.names import check_name, is_valid_name
from anyy.profiles.tomlfile import FileError, convert, read_toml

ROLES_DIR = "roles"
DEFAULT_ROLE = "default"
ROLE_SUFFIX = ".toml"

# Keys people may expect a role to take, with where the setting really lives.
_NOT_A_ROLE_KEY = {
    "tools": "tools are chosen per session or in config.toml [tools]",
    "codemode": "Codemode is chosen per session or in config.toml [tools]",
    "model": "the model is chosen per session or in config.toml [model]",
    "provider": "the provider is chosen per session or in config.toml [model]",
}


class Role(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    identity: str
    soul: str
    description: str = ""


class LoadedRole(msgspec.Struct, kw_only=True):
    """A role with its name and the file it came from."""

    name: str
    path: Path
    identity: str
    soul: str
    description: str


class RoleNotFound(NotFound):
    pass


def role_path(roles_dir: Path, name: str) -> Path:
    return roles_dir / f"{check_name(name, what='role')}{ROLE_SUFFIX}"


def list_roles(roles_dir: Path) -> list[str]:
    """Names of the roles in the folder, sorted; files whose names are not role names are skipped."""
    if not roles_dir.is_dir():
        return []
    return sorted(
        item.stem
        for item in roles_dir.iterdir()
        if item.suffix == ROLE_SUFFIX and is_valid_name(item.stem) and item.is_file()
    )


def load_role(roles_dir: Path, name: str, *, profile: str) -> LoadedRole:
    path = role_path(roles_dir, name)
    if not path.is_file():
        available = list_roles(roles_dir)
        listed = ", ".join(available) if available else "none"
        raise RoleNotFound(
            f"no role {name!r} in profile {profile!r} (roles folder {roles_dir}); the roles are: {listed}. "
            f"To add one, write {path.name} there with `identity` and `soul` strings."
        )
    label = f"role file {ROLES_DIR}/{path.name}"
    raw = read_toml(path, label)
    for key, where in _NOT_A_ROLE_KEY.items():
        if key in raw:
            raise FileError(f"{label} ({path}): unknown key {key!r}: a role sets identity and Soul only; {where}")
    role = convert(raw, Role, label=label, path=path)
    return LoadedRole(name=name, path=path, identity=role.identity, soul=role.soul, description=role.description)


DEFAULT_ROLE_TOML = '''\
# A role gives the agent an identity and a "Soul" (its character and way of working).
# Start a session with it: `anyy --role NAME` or `anyy chat --role NAME "..."`.
# A role sets identity and Soul only: tools and Codemode are profile settings (config.toml [tools]).
# Copy this file to roles/NAME.toml to make another role.

description = "A helpful personal assistant"

identity = "You are anyy, a personal assistant working for the user on their own machine."

soul = """
Be direct and precise. Say what you did and what you found; say plainly when you do not know.
Ask the user when a request is ambiguous instead of guessing. Keep what the user tells you about
themselves in memory only when they would expect you to remember it.
"""
'''
