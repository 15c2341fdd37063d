"""What every command shares: the selected profile and a store opened on it.

``--profile`` is accepted both before the command (``anyy --profile work sessions list``) and after it
(``anyy sessions list --profile work``, the form error messages suggest). The one after wins; without
either, ``$ANYY_PROFILE``, then ``default``.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import click

from anyy.profiles import (
    DEFAULT_PROFILE,
    Profile,
    ProfileExists,
    anyy_home,
    create_profile,
    get_profile,
    list_profiles,
    selected_profile_name,
)

if TYPE_CHECKING:
    from anyy.storage.protocol import SessionStore

R = TypeVar("R")

PROFILE_HELP = "Profile to use (default: $ANYY_PROFILE, else 'default')."


@dataclass
class CliState:
    """Options of the ``anyy`` group itself, read by the commands under it."""

    profile_option: str | None = None


def selected_profile(option: str | None = None, *, create_default: bool = True) -> Profile:
    """The profile the command works on; it may not exist yet (see :meth:`Profile.require`), except the
    default profile of a fresh home, which is created on first use (U4) unless ``create_default`` is off
    (commands that only look, such as ``profile list``)."""
    if option is None:
        state = click.get_current_context().find_object(CliState)
        option = state.profile_option if state is not None else None
    home = anyy_home()
    profile = get_profile(home, selected_profile_name(option))
    if create_default and profile.name == DEFAULT_PROFILE and not list_profiles(home):
        _create_default(profile)
    return profile


def _create_default(profile: Profile) -> None:
    """A fresh home (no profile at all) gets its default profile, and the person is told once, on stderr."""
    try:
        create_profile(profile.home, profile.name)
    except ProfileExists:  # another command of this fresh home made it at the same moment
        return
    click.echo(
        f"anyy: created the default profile at {profile.path} (first use of this anyy home; "
        "its settings are in config.toml there)",
        err=True,
    )


def with_profile(func: Callable[..., R]) -> Callable[..., R]:
    """Give a command its own ``--profile`` and call it with the selected ``profile``."""

    @functools.wraps(func)
    def wrapper(*args: Any, profile_option: str | None, **kwargs: Any) -> R:
        return func(*args, profile=selected_profile(profile_option), **kwargs)

    decorate = click.option("--profile", "profile_option", metavar="NAME", default=None, help=PROFILE_HELP)
    return decorate(wrapper)


@contextlib.contextmanager
def open_store(profile: Profile) -> Iterator[SessionStore]:
    """The profile's store, closed on exit. A missing profile is an error, never created here."""
    profile.require()
    # Imported here: a storage backend is only loaded by the commands that read sessions.
    from anyy.profiles.store import open_store as open_profile_store

    store = open_profile_store(profile)
    try:
        yield store
    finally:
        store.close()
