"""Fixtures of the distributed tests: three Gateways on one fresh PostgreSQL database."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.distributed.service import Service
from tests.fakes.gateways import hold
from tests.postgres.server import create_database, require_postgres

__all__ = ["hold"]


@pytest.fixture
def service(tmp_path: Path) -> Iterator[Service]:
    """Three Gateways of one service (more with ``service.add()``); every process reaped at the end."""
    require_postgres()
    made = Service(root=tmp_path, database=create_database("anyy_dist"))
    try:
        for _ in range(3):
            made.add()
        yield made
    finally:
        made.close()
