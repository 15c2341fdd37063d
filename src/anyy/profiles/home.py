"""Where profiles live (the anyy home) and which profile a command works on."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from anyy.profiles.names import check_name

HOME_ENV = "ANYY_HOME"
PROFILE_ENV = "ANYY_PROFILE"
DEFAULT_PROFILE = "default"


def anyy_home(environ: Mapping[str, str] | None = None) -> Path:
    """``$ANYY_HOME`` if set (tests and portable installs), else the platform's user data folder."""
    env = os.environ if environ is None else environ
    value = env.get(HOME_ENV, "").strip()
    if value:
        return Path(value).expanduser().absolute()
    # Imported here: platformdirs is only needed when no ANYY_HOME is set.
    import platformdirs

    return Path(platformdirs.user_data_dir("anyy"))


def profiles_root(home: Path) -> Path:
    """The folder holding one sub-folder per profile (the home keeps room for shared things)."""
    return home / "profiles"


def selected_profile_name(option: str | None = None, environ: Mapping[str, str] | None = None) -> str:
    """The profile to use: ``--profile`` first, then ``$ANYY_PROFILE``, then ``default`` (SPEC A1)."""
    if option is not None:
        return check_name(option, what="profile", source="from --profile")
    env = os.environ if environ is None else environ
    value = env.get(PROFILE_ENV, "").strip()
    if value:
        return check_name(value, what="profile", source=f"from {PROFILE_ENV}")
    return DEFAULT_PROFILE
