"""Fixtures of the provider tests: the loopback fake model server, with proxies out of the way."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fakes.model_server import FakeModelServer

_PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")


@pytest.fixture(scope="session")
def _model_server() -> Iterator[FakeModelServer]:
    server = FakeModelServer()
    server.start()
    yield server
    server.stop()


@pytest.fixture
def fake(_model_server: FakeModelServer, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeModelServer]:
    """The fake server, empty; the SDKs made during the test reach it directly, never through a proxy."""
    for name in _PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_PROXY", "*")
    monkeypatch.setenv("no_proxy", "*")
    _model_server.reset()
    yield _model_server
    _model_server.reset()
