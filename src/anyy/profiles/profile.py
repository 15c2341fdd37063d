"""A profile: one person's folder under the anyy home (SPEC A1, A3, A4).

    <home>/profiles/<name>/
        config.toml      settings for new sessions (config.py)
        state.db         sessions and entries; created by the storage layer on first open
        objects/         large bodies and attachments, referenced by entries
        memory/USER.md   personal cross-session memory, read into the agent's context;
        memory/MEMORY.md     a context summary (compaction) is never written there
        roles/NAME.toml  identity + Soul (roles.py)

Reading a profile never creates it: only :func:`create_profile` (``anyy profile create``) writes one.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from anyy.domain.errors import Conflict, NotFound
from anyy.profiles import roles
from anyy.profiles.config import CONFIG_FILE, DEFAULT_CONFIG_TOML, Config, load_config
from anyy.profiles.home import profiles_root
from anyy.profiles.names import check_name, is_valid_name

MEMORY_DIR = "memory"
USER_MEMORY_FILE = "USER.md"
MEMORY_FILE = "MEMORY.md"
STATE_DB = "state.db"
OBJECTS_DIR = "objects"

# Profiles hold conversations and memory: readable by their owner only.
_PRIVATE_DIR = 0o700


class ProfileNotFound(NotFound):
    pass


class ProfileExists(Conflict):
    pass


@dataclass(frozen=True)
class Profile:
    name: str
    home: Path

    @property
    def path(self) -> Path:
        return profiles_root(self.home) / self.name

    @property
    def config_path(self) -> Path:
        return self.path / CONFIG_FILE

    @property
    def db_path(self) -> Path:
        return self.path / STATE_DB

    @property
    def objects_dir(self) -> Path:
        return self.path / OBJECTS_DIR

    @property
    def memory_dir(self) -> Path:
        return self.path / MEMORY_DIR

    @property
    def user_memory_path(self) -> Path:
        return self.memory_dir / USER_MEMORY_FILE

    @property
    def memory_path(self) -> Path:
        return self.memory_dir / MEMORY_FILE

    @property
    def roles_dir(self) -> Path:
        return self.path / roles.ROLES_DIR

    def exists(self) -> bool:
        return self.path.is_dir()

    def require(self) -> Profile:
        """This profile, or ProfileNotFound saying how to create it. Creates nothing."""
        if not self.exists():
            raise ProfileNotFound(
                f"profile {self.name!r} does not exist (no folder {self.path}). "
                f"Create it with `anyy profile create {self.name}`, or pick another with --profile "
                "(`anyy profile list` shows them)."
            )
        return self

    def load_config(self) -> Config:
        return load_config(self.config_path)

    def list_roles(self) -> list[str]:
        return roles.list_roles(self.roles_dir)

    def load_role(self, name: str) -> roles.LoadedRole:
        return roles.load_role(self.roles_dir, name, profile=self.name)


def get_profile(home: Path, name: str) -> Profile:
    """The profile called ``name`` under ``home``, whether or not it exists yet."""
    return Profile(name=check_name(name, what="profile"), home=home)


def list_profiles(home: Path) -> list[Profile]:
    root = profiles_root(home)
    if not root.is_dir():
        return []
    return [
        Profile(name=item.name, home=home)
        for item in sorted(root.iterdir())
        if item.is_dir() and is_valid_name(item.name)
    ]


def create_profile(home: Path, name: str, *, exist_ok: bool = False) -> Profile:
    """Create the profile's folder with a commented config, memory files and the default role.

    With ``exist_ok``, an existing profile is kept and only its missing parts are added: nothing a person
    wrote is ever overwritten. ``state.db`` is not created here: the storage layer makes it on first open.
    """
    profile = get_profile(home, name)
    profiles_root(home).mkdir(parents=True, exist_ok=True)
    try:
        # mkdir is the claim: of two concurrent creators, exactly one gets here without an error.
        profile.path.mkdir(mode=_PRIVATE_DIR)
    except FileExistsError:
        if not exist_ok:
            raise ProfileExists(
                f"profile {name!r} already exists at {profile.path}; pass --exist-ok to keep it and add "
                "any missing files"
            ) from None
        if not profile.path.is_dir():
            raise ProfileExists(f"{profile.path} exists and is not a folder; move it away first") from None
    profile.objects_dir.mkdir(exist_ok=True)
    profile.memory_dir.mkdir(exist_ok=True)
    profile.roles_dir.mkdir(exist_ok=True)
    _write_new(profile.config_path, DEFAULT_CONFIG_TOML)
    _write_new(profile.user_memory_path, "")
    _write_new(profile.memory_path, "")
    _write_new(roles.role_path(profile.roles_dir, roles.DEFAULT_ROLE), roles.DEFAULT_ROLE_TOML)
    return profile


def _write_new(path: Path, text: str) -> None:
    """Write ``path`` whole (through a temporary file) unless it exists; a reader never sees half a file."""
    if path.exists():
        return
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        # link() fails if the file appeared meanwhile: a concurrent writer's file is kept, not replaced.
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass
        except OSError:
            # A file system without hard links: a rename is still whole, if not exclusive.
            if not path.exists():
                os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
