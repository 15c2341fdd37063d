"""Fixtures of the distributed tests: three Gateways on one fresh PostgreSQL database.

Starting three Gateway processes costs seconds on a loaded 2-core machine, so the package's tests share one
service (each test works in sessions of its own, and scopes its database checks to them); a module that
needs a service of its own (other settings, or checks over the whole database, like the kill test)
overrides ``cluster`` with :func:`three_gateways`. Before each test, a Gateway an earlier test killed or
stopped is started again (same home, same profile), so every test begins with three live Gateways; every
process is reaped when its service's scope ends.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.distributed.service import Service, three_gateways
from tests.fakes.gateways import hold

__all__ = ["hold"]


@pytest.fixture(scope="package")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    yield from three_gateways(tmp_path_factory)


@pytest.fixture
def service(cluster: Service) -> Service:
    """The three Gateways of the service, each live (one an earlier test killed is started again)."""
    cluster.revive()
    return cluster
