"""Profiles: a folder per person (settings, state.db, objects, memory, roles) under the anyy home."""

from anyy.profiles.config import Config, load_config
from anyy.profiles.home import DEFAULT_PROFILE, HOME_ENV, PROFILE_ENV, anyy_home, selected_profile_name
from anyy.profiles.profile import (
    Profile,
    ProfileExists,
    ProfileNotFound,
    create_profile,
    get_profile,
    list_profiles,
)
from anyy.profiles.roles import LoadedRole, RoleNotFound
from anyy.profiles.tomlfile import FileError

__all__ = [
    "DEFAULT_PROFILE",
    "HOME_ENV",
    "PROFILE_ENV",
    "Config",
    "FileError",
    "LoadedRole",
    "Profile",
    "ProfileExists",
    "ProfileNotFound",
    "RoleNotFound",
    "anyy_home",
    "create_profile",
    "get_profile",
    "list_profiles",
    "load_config",
    "selected_profile_name",
]
