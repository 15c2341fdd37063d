"""Fixtures of the conformance suite: a ``store`` per backend, more stores on demand, and ``reopen``."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from anyy.storage.protocol import SessionStore
from tests.conformance.backends import BACKENDS, open_backend

OpenStore = Callable[..., SessionStore]
Reopen = Callable[[SessionStore], SessionStore]


@pytest.fixture(params=sorted(BACKENDS))
def backend(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    if name == "postgresql":
        from tests.postgres.server import require_postgres

        require_postgres()
    return name


class _Opened:
    """Every store a test opened, where it lives, so it can be reopened and is closed at the end."""

    def __init__(self, backend: str) -> None:
        self.backend = backend
        self.where: dict[int, Path] = {}
        self.stores: list[SessionStore] = []

    def open(self, directory: Path) -> SessionStore:
        directory.mkdir(parents=True, exist_ok=True)
        store = open_backend(self.backend, directory)
        self.where[id(store)] = directory
        self.stores.append(store)
        return store

    def reopen(self, store: SessionStore) -> SessionStore:
        directory = self.where[id(store)]
        store.close()
        return self.open(directory)

    def close_all(self) -> None:
        for store in self.stores:
            with contextlib.suppress(Exception):
                store.close()


@pytest.fixture
def _opened(backend: str) -> Iterator[_Opened]:
    opened = _Opened(backend)
    yield opened
    opened.close_all()


@pytest.fixture
def open_store(_opened: _Opened, tmp_path: Path) -> OpenStore:
    """``open_store(name)``: a fresh, empty store in ``tmp_path / name`` (for tests needing several)."""

    def _open(name: str) -> SessionStore:
        return _opened.open(tmp_path / "stores" / name)

    return _open


@pytest.fixture
def store(_opened: _Opened, tmp_path: Path) -> SessionStore:
    """An empty store of the backend under test, its files in ``tmp_path``."""
    return _opened.open(tmp_path)


@pytest.fixture
def reopen(_opened: _Opened) -> Reopen:
    """``store = reopen(store)``: close a store and open the same data again (a restart)."""
    return _opened.reopen
