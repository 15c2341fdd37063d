from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.gateway.live import LiveGateway


@pytest.fixture
def gateway(tmp_path: Path) -> Iterator[LiveGateway]:
    """A Gateway served by uvicorn on 127.0.0.1, port 0, with a scripted offline model."""
    with LiveGateway(tmp_path) as live:
        yield live


@pytest.fixture
def dispatcher_only(tmp_path: Path) -> Iterator[LiveGateway]:
    """The same Gateway without a transport: frames go straight to the Dispatcher."""
    with LiveGateway(tmp_path, serve=False) as live:
        yield live
