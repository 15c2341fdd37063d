"""Fixtures of the distributed tests: three Gateways on one fresh PostgreSQL database, per test module.

Starting three Gateway processes costs seconds on a loaded 2-core machine, so a module's tests share one
service (each test works in sessions of its own, and scopes its database checks to them). Before each test,
a Gateway an earlier test killed or stopped is started again (same home, same profile), so every test
begins with three live Gateways; every process is reaped when the module ends.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.distributed.service import Service
from tests.fakes.gateways import hold
from tests.postgres.server import create_database, require_postgres

__all__ = ["hold"]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    require_postgres()
    made = Service(root=tmp_path_factory.mktemp("cluster"), database=create_database("anyy_dist"))
    try:
        for _ in range(3):
            made.add()
        yield made
    finally:
        made.close()


@pytest.fixture
def service(cluster: Service) -> Service:
    """The module's three Gateways, each live (one an earlier test killed is started again)."""
    cluster.revive()
    return cluster
