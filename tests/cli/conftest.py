from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from anyy.cli.main import main
from anyy.profiles import Profile, create_profile
from anyy.storage.sqlite import SqliteStore

Run = Callable[..., Result]
MakeProfile = Callable[..., Profile]
OpenStore = Callable[[Profile], contextlib.AbstractContextManager[SqliteStore]]


@pytest.fixture
def anyy() -> Run:
    """Run ``anyy ARGS...`` in-process; stdout and stderr stay apart (result.stdout, result.stderr)."""
    runner = CliRunner()

    def run(*args: str, env: dict[str, str | None] | None = None) -> Result:
        return runner.invoke(main, list(args), env=env, catch_exceptions=False)

    return run


@pytest.fixture
def make_profile(home: Path) -> MakeProfile:
    def make(name: str = "default") -> Profile:
        return create_profile(home, name)

    return make


@pytest.fixture
def open_store() -> OpenStore:
    """The profile's store through the public storage API, closed before the CLI reads it."""

    @contextlib.contextmanager
    def opened(profile: Profile) -> Iterator[SqliteStore]:
        store = SqliteStore.open_profile(profile.path, profile=profile.name)
        try:
            yield store
        finally:
            store.close()

    return opened
